import gzip
import json

import pytest

import connectors
from connectors._io import NotUtf8, iter_utf8_lines
from connectors.files import csv_records, json_records
from recommender import Paper
from tests.conftest import CONFERENCES, require


def test_shared_conference_jsonl_gz_loads_every_record():
    path = require(CONFERENCES / "iclr2018.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        raw = [json.loads(line) for line in handle if line.strip()]
    papers = connectors.load(path)
    assert len(papers) == len(raw) > 900
    first, record = papers[0], raw[0]
    assert (first.id, first.title, first.authors, first.year, first.venue) == (
        record["id"], record["title"], record["authors"], 2018, "ICLR")
    assert first.url == record["site"]
    # keywords come as one "a;b;c" string in the OpenReview lists
    assert first.keywords == [k.strip() for k in record["keywords"].split(";")]
    assert "bibtex" not in first.fields


def test_conference_bibtex_field_is_not_copied_but_doi_and_links_are():
    papers = connectors.load(require(CONFERENCES / "icml2019.jsonl.gz"))
    assert all(p.venue == "ICML" and p.year == 2019 and p.title and p.abstract for p in papers)
    assert all(p.url for p in papers)


@pytest.mark.parametrize("name", ["picks.jsonl", "picks.json", "picks.csv", "picks.tsv", "picks.jsonl.gz", "picks.csv.gz"])
def test_round_trip_keeps_every_field(tmp_path, name):
    papers = [
        Paper("p1", title="Flow Matching for Generative Modeling", abstract="Abstract, with \"quotes\"; and\nnewline.",
              authors=["Yaron Lipman", "Ricky T. Q. Chen"], year=2023, venue="ICLR", doi="10.1/x",
              arxiv_id="2210.02747", url="https://arxiv.org/abs/2210.02747", keywords=["flow matching", "ODE"],
              date_added="2024-01-02T03:04:05Z", entry_type="inproceedings", fields={"pages": "1--10"}),
        Paper("p2", title="GeoFlow", abstract="We introduce GeoFlow, a framework.", title_derived=True, year=2026, venue="ICML"),
    ]
    target = tmp_path / name
    connectors.dump(papers, target)
    if name.endswith(".gz"):
        assert target.read_bytes()[:2] == b"\x1f\x8b"
    assert connectors.load(target) == [
        Paper(**{**p.__dict__, "source": str(target)}) for p in papers
    ]


def test_json_document_shapes():
    papers = json_records.loads('{"papers": [{"title": "A"}, {"title": "B", "authors": "X Y; Z W"}]}', "s.json")
    assert [p.title for p in papers] == ["A", "B"] and papers[1].authors == ["X Y", "Z W"]
    assert json_records.loads('{"title": "Only one"}', "one.json")[0].title == "Only one"


def test_bad_records_name_the_line_and_the_rest_loads(tmp_path, caplog, monkeypatch):
    import logging

    monkeypatch.setattr(logging.getLogger("litrank"), "propagate", True)  # CLI tests may have turned it off
    path = tmp_path / "bad.jsonl"
    path.write_text('{"title": "ok"}\n{"title": broken}\n{"venue": "ICML"}\n', encoding="utf-8")
    with caplog.at_level("WARNING", logger="litrank"):
        assert [p.title for p in connectors.load(path)] == ["ok"]
    messages = [r.getMessage() for r in caplog.records if r.name == "litrank"]
    assert any("bad.jsonl:2: invalid JSON" in m for m in messages)
    assert any("line 3: record has neither a title nor an abstract" in m for m in messages)
    path.write_text('{"title": broken}\n', encoding="utf-8")
    with pytest.raises(connectors.SourceError, match=r"bad.jsonl: no readable paper \(1 broken line\)"):
        connectors.load(path)
    with pytest.raises(connectors.SourceError, match="expected an object"):
        json_records.loads("[1, 2]", "nums.json")


def test_jsonl_is_read_a_line_at_a_time_as_whole_text_would_read_it(tmp_path):
    # One text for every reading: a BOM, a blank line, CRLF endings, U+2028 inside a string (no
    # line break in JSON Lines), a character beyond 16 bits and no newline at the end.
    text = ('\ufeff{"id": "a", "title": "Flows \u2028 on graphs", "abstract": "𝒪(n) time"}\r\n\n'
            '{"id": "b", "title": "Second", "authors": ["Jérôme Müller"]}')
    streamed = tmp_path / "lines.jsonl"
    streamed.write_bytes(text.encode("utf-8"))
    compressed = tmp_path / "lines.jsonl.gz"
    compressed.write_bytes(gzip.compress(text.encode("utf-8")))
    whole = json_records.loads(text.removeprefix("\ufeff"), str(streamed), lines=True)
    assert [p.title for p in whole] == ["Flows \u2028 on graphs", "Second"] and whole[0].abstract == "𝒪(n) time"
    assert connectors.load(streamed) == whole
    assert connectors.load(compressed) == [Paper(**{**p.__dict__, "source": str(compressed)}) for p in whole]
    assert list(iter_utf8_lines(streamed)) == text.removeprefix("\ufeff").split("\n")


def test_jsonl_in_a_legacy_encoding_is_decided_on_the_whole_file(tmp_path, caplog):
    # Valid UTF-8 up to the last line: the lines read so far are dropped, the file is decoded
    # whole as cp1252 (one warning), and no line is reported twice.
    path = tmp_path / "legacy.jsonl"
    path.write_bytes('{"title": "First"}\n{"title": broken}\n{"title": "Étude – des flots"}\n'.encode("cp1252"))
    with caplog.at_level("WARNING", logger="litrank"):
        papers = connectors.load(path)
    assert [p.title for p in papers] == ["First", "Étude – des flots"]
    assert caplog.text.count("not valid UTF-8") == 1 and "cp1252" in caplog.text
    assert caplog.text.count("legacy.jsonl:2: invalid JSON") == 1
    with pytest.raises(NotUtf8):
        list(iter_utf8_lines(path))
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes('{"title": "Wide"}\n'.encode("utf-16"))
    assert [p.title for p in connectors.load(utf16)] == ["Wide"]


def test_a_damaged_jsonl_gz_is_one_error(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"title": "A"}\n' * 2000)[:-40])
    with pytest.raises(connectors.SourceError, match=r"cut.jsonl.gz: corrupt gzip data"):
        connectors.load(path)


def test_zotero_style_csv_columns_are_understood():
    text = ('"Key","Item Type","Publication Year","Author","Title","Publication Title","DOI","Url","Abstract Note","Manual Tags"\n'
            '"ABCD1234","conferencePaper","2021","Song, Yang; Ermon, Stefano","Score-Based Generative Modeling",'
            '"ICLR","10.5555/abc","https://x.org","An abstract.","diffusion; sde"\n')
    (paper,) = csv_records.loads(text, "zotero.csv")
    assert (paper.id, paper.entry_type, paper.year, paper.authors, paper.venue, paper.doi, paper.keywords) == (
        "ABCD1234", "conferencePaper", 2021, ["Song, Yang", "Ermon, Stefano"], "ICLR", "10.5555/abc", ["diffusion", "sde"])


def test_latin1_csv_loads_with_a_warning(tmp_path, caplog):
    path = tmp_path / "latin.csv"
    path.write_bytes("title,authors\nÉtude des flots,Jérôme Müller\n".encode("latin-1"))
    (paper,) = connectors.load(path)
    assert paper.title == "Étude des flots" and paper.authors == ["Jérôme Müller"]
    assert "not valid UTF-8" in caplog.text and "cp1252" in caplog.text
