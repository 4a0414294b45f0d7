import pytest

import connectors
from tests.conftest import SEEDS, require


def test_unknown_format_lists_the_supported_ones(tmp_path):
    path = tmp_path / "papers.xlsx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(connectors.UnsupportedFormatError, match=r"unknown file format; supported formats: bibtex, text, jsonl"):
        connectors.load(path)
    with pytest.raises(connectors.UnsupportedFormatError, match="unknown format 'xml'"):
        connectors.load(path, format="xml")


def test_missing_source_is_a_clear_error(tmp_path):
    with pytest.raises(connectors.SourceError, match="no such file or directory"):
        connectors.load(tmp_path / "nope.bib")


def test_format_override_reads_a_file_with_another_extension(tmp_path):
    path = tmp_path / "list.dat"
    path.write_text('{"title": "A Title", "year": 2020}\n', encoding="utf-8")
    (paper,) = connectors.load(path, format="jsonl")
    assert paper.title == "A Title" and paper.year == 2020


def test_directory_loads_every_supported_file_once(tmp_path):
    seeds = require(SEEDS)
    for page in seeds.glob("*.txt"):
        (tmp_path / page.name).write_bytes(page.read_bytes())
    (tmp_path / "notes.md").write_text("# not a paper list", encoding="utf-8")
    (tmp_path / ".hidden.jsonl").write_text("garbage", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "extra.jsonl").write_text('{"title": "Extra Paper"}\n', encoding="utf-8")
    papers = connectors.load(tmp_path)
    assert len(papers) == 71
    assert papers[-1].title == "Extra Paper"


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(connectors.SourceError, match="no supported files"):
        connectors.load(tmp_path)


def test_atomic_write_leaves_no_temporary_file_and_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n", encoding="utf-8")
    connectors.write_text(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
    with pytest.raises(connectors.SourceError, match="does not exist"):
        connectors.write_text(tmp_path / "missing-dir" / "x.jsonl", "x")
