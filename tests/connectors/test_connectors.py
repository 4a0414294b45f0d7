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


def test_the_cycle_collector_is_paused_while_reading_and_restored_after(tmp_path, monkeypatch):
    """Reading papers pauses Python's cycle collector (tens of thousands of new objects, no
    cycles); nested and concurrent reads restore it once, also when one fails, and a
    collector the caller had switched off stays off."""
    import gc
    import threading

    from connectors._io import cycle_collection_paused
    from connectors.files import json_records
    from tests.conftest import DATA

    seen_during = []
    real_load = json_records.load

    def spying_load(path):
        seen_during.append(gc.isenabled())
        return real_load(path)

    monkeypatch.setattr(json_records, "load", spying_load)
    assert gc.isenabled()
    papers = connectors.load_many([DATA / "report-collection.jsonl"])
    assert papers and seen_during == [False] and gc.isenabled()
    with pytest.raises(connectors.SourceError):
        connectors.load(tmp_path / "missing.jsonl")
    assert gc.isenabled()
    # Two threads reading at once: the first to finish must not restart it under the other.
    inside, release = threading.Event(), threading.Event()

    def slow_reader():
        with cycle_collection_paused():
            inside.set()
            release.wait(5)

    other = threading.Thread(target=slow_reader)
    other.start()
    inside.wait(5)
    with cycle_collection_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread still reads
    release.set()
    other.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()  # the caller's choice is kept
    finally:
        gc.enable()
