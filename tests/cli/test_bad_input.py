"""Input nobody here wrote: every case gives one clear line (exit 2) or a warning and a sensible
result, never a traceback, and never a half-written or clobbered output file."""
from __future__ import annotations

import json
import string

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import connectors
from connectors import bibtex
from connectors.files import json_records
from recommender.cli import main
from tests.conftest import EXAMPLE_LIBRARY


def run(*args):
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.stderr and not isinstance(result.exception, (AssertionError, TypeError,
                                                                                 AttributeError, KeyError))
    return result


def error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def write(directory, name, content):
    path = directory / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.bib", "missing.bib: no such file or directory"),
    (lambda d: (d / "empty-dir").mkdir() or d / "empty-dir", "no supported files in this directory"),
    (lambda d: write(d, "x.bib", ""), "contains no papers"),
    (lambda d: write(d, "x.bib", bytes(range(256)) * 20), "looks like a binary file"),
    (lambda d: write(d, "x.bib", "% only a comment\n@comment{nothing}\n"), "contains no papers"),
    (lambda d: write(d, "x.csv", "name,year\nfoo,2020\n"), "no title or abstract column (the header has name, year)"),
])
def test_unusable_libraries_are_one_line_and_exit_2(tmp_path, make, message):
    result = run("rank", "-l", str(make(tmp_path)))
    assert result.exit_code == 2 and message in error_line(result)


def test_legacy_encodings_load_with_a_warning(tmp_path):
    latin1 = tmp_path / "latin1.bib"
    latin1.write_bytes("@article{a,\n  title={Café au lait diffusion models},\n  year={2020}\n}\n".encode("latin-1"))
    utf16 = tmp_path / "utf16.bib"
    utf16.write_text("@article{b,\n  title={Übersicht of diffusion},\n  abstract={We study diffusion.}\n}\n",
                     encoding="utf-16")
    assert connectors.load(latin1)[0].title == "Café au lait diffusion models"
    assert connectors.load(utf16)[0].title == "Übersicht of diffusion"
    result = run("rank", "-l", str(latin1), "-n", "2")
    assert result.exit_code == 0 and "not UTF-8" in result.stderr or "cp1252" in result.stderr


def test_a_broken_jsonl_line_is_reported_and_the_rest_loaded(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "abstract": "diffusion"}\n{broken json\n{"title": "B", "abstract": "flows"}\n'
                    '{"year": 2020}\n')
    result = run("rank", "-c", str(path), "-n", "0", "--format", "jsonl")
    assert result.exit_code == 0
    assert "c.jsonl:2: invalid JSON" in result.stderr and "line 4: record has neither a title" in result.stderr
    assert sorted(json.loads(line)["title"] for line in result.stdout.splitlines()) == ["A", "B"]
    only_broken = tmp_path / "broken.jsonl"
    only_broken.write_text("{nope\n")
    assert "no readable paper (1 broken line)" in error_line(run("rank", "-c", str(only_broken)))


def test_huge_abstracts_latex_unicode_and_duplicates(tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"title": "Big", "abstract": "diffusion " * 120_000}) + "\n"
                   + json.dumps({"title": "Small", "abstract": "score matching"}) + "\n")
    assert run("rank", "-c", str(big), "-n", "2").exit_code == 0
    latex = tmp_path / "latex.bib"
    entry = "@article{%s,\n title={On $\\alpha$-divergences and {\\\"U}ber {GAN}s},\n abstract={We use $\\mathcal{L}$ losses.}\n}\n"
    latex.write_text(entry % "one" + entry % "two")
    papers = connectors.load(latex)
    assert papers[0].title == "On α-divergences and Über GANs"
    result = run("rank", "-l", str(latex), "-n", "1")
    assert result.exit_code == 0 and "ranked against 1 paper of" in " ".join(result.stdout.split())  # the duplicate is kept once


def test_library_equal_to_collection_says_there_is_nothing_to_rank(tmp_path):
    out = tmp_path / "picks.bib"
    result = run("rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(EXAMPLE_LIBRARY), "-o", str(out))
    assert result.exit_code == 0 and "54 papers already in your library were skipped." in result.stderr
    assert "nothing left to rank" in result.stderr and not out.exists()


def test_outputs_are_never_half_written(tmp_path):
    missing_dir = run("rank", "-n", "2", "-o", str(tmp_path / "nowhere" / "out.bib"))
    assert missing_dir.exit_code == 2 and "directory" in error_line(missing_dir)
    kept = tmp_path / "keep.bib"
    kept.write_text("old content\n")
    failed = run("rank", "-l", str(tmp_path / "missing.bib"), "-o", str(kept))
    assert failed.exit_code == 2 and kept.read_text() == "old content\n"
    contradiction = run("rank", "-n", "2", "-o", str(kept), "--format", "json")
    assert contradiction.exit_code == 2 and "--format json contradicts the extension" in contradiction.stderr
    assert kept.read_text() == "old content\n"


# -- generated input: only the project's own error type escapes, and no valid entry is lost -------

WORDS = st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=30).filter(lambda s: s.strip())
JUNK = st.text(alphabet=string.printable + "éü{}@%\\\"", max_size=80)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(titles=st.lists(WORDS, min_size=1, max_size=5), junk=st.lists(JUNK, max_size=4))
def test_generated_bibtex_keeps_every_valid_entry(titles, junk):
    entries = [f"@article{{key{i},\n  title = {{{title}}},\n  year = {{2020}},\n}}\n" for i, title in enumerate(titles)]
    # Text between entries is a comment to BibTeX, whatever it holds (but an "@").
    lines = [line.replace("@", "") + "\n" for line in junk]
    text = "".join(piece for pair in zip(entries, lines + [""] * len(entries)) for piece in pair)
    try:
        papers = bibtex.loads(text, "generated.bib")
    except connectors.SourceError:
        return
    assert [" ".join(t.split()) for t in titles] == [p.title for p in papers if p.id.startswith("key")]


@settings(max_examples=60, deadline=None)
@given(titles=st.lists(WORDS, min_size=1, max_size=5), junk=st.lists(JUNK.filter(lambda s: "\n" not in s), max_size=4))
def test_generated_jsonl_keeps_every_valid_line(titles, junk):
    lines = [json.dumps({"title": title, "abstract": "x"}) for title in titles] + [j for j in junk if j.strip()]
    try:
        papers = json_records.loads("\n".join(lines), "generated.jsonl", lines=True)
    except connectors.SourceError:
        assert not titles  # only a file of nothing but broken lines may fail as a whole
        return
    assert [p.title for p in papers][: len(titles)] == [t.strip() for t in titles]
