"""Abstract enrichment (connectors.online.enrichment, `litrank enrich`, `litrank rank --enrich`) against the
fake arXiv and OpenAlex APIs on loopback: arXiv id, then DOI, then exact title + first author; a
user's field is never replaced and the BibTeX output keeps everything else byte for byte."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import connectors
from connectors.online.enrichment import find_abstracts
from recommender.cli import main
from tests.conftest import DATA
from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.openalex_server import FakeOpenAlex
from tests.fakes.semanticscholar_server import FakeSemanticScholar

pytest.importorskip("arxiv")
pytest.importorskip("pyalex")
LIBRARY = DATA / "enrich-library.bib"


@pytest.fixture
def fakes(httpserver, monkeypatch):
    arxiv, openalex, s2 = FakeArxiv(), FakeOpenAlex(), FakeSemanticScholar()
    httpserver.expect_request("/api/query").respond_with_handler(arxiv)
    httpserver.expect_request("/works").respond_with_handler(openalex)
    httpserver.expect_request(re.compile("^/graph/v1/")).respond_with_handler(s2)
    monkeypatch.setenv("LITRANK_S2_API", httpserver.url_for("").rstrip("/"))
    monkeypatch.setenv("LITRANK_ARXIV_API", httpserver.url_for("/api/query"))
    monkeypatch.setenv("LITRANK_ARXIV_DELAY", "0")
    monkeypatch.setenv("LITRANK_OPENALEX_API", httpserver.url_for("").rstrip("/"))
    monkeypatch.delenv("LITRANK_OFFLINE", raising=False)
    return arxiv, openalex, s2


def test_abstracts_by_arxiv_id_doi_and_exact_title(fakes):
    papers = connectors.load(LIBRARY)
    found = find_abstracts(papers)
    assert {key: f.source for key, f in found.items()} == {
        "lovelace2026masked": "arXiv", "bellman2024conservative": "OpenAlex (DOI)",
        "hyvarinen2024score": "OpenAlex (title)", "akiba2019optuna": "Semantic Scholar (DOI)",
        "devlin2019bert": "Semantic Scholar (title)"}  # the survey's title is no exact match; kept2024 has one
    assert found["devlin2019bert"].abstract == "We introduce a new language representation model called BERT."
    assert found["lovelace2026masked"].abstract.startswith("We connect discrete flow matching")
    assert found["bellman2024conservative"].abstract == "Conservative critics learn policies from fixed datasets."


def test_enrich_writes_the_bibtex_with_only_the_abstracts_added(fakes, tmp_path):
    out = tmp_path / "with-abstracts.bib"
    before = LIBRARY.read_bytes()
    result = CliRunner().invoke(main, ["enrich", str(LIBRARY), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "Found abstracts for 5 of 6 papers without one (1 from arXiv, 1 from OpenAlex (DOI), " \
           "1 from Semantic Scholar (DOI), 1 from OpenAlex (title), 1 from Semantic Scholar (title))." in result.stderr
    assert LIBRARY.read_bytes() == before  # the input is never touched
    text = out.read_text(encoding="utf-8")
    removed = [line for line in text.splitlines() if line.strip().startswith("abstract = {") and "must stay" not in line]
    assert len(removed) == 5
    original_lines = LIBRARY.read_text(encoding="utf-8").splitlines()
    assert [line for line in text.splitlines() if line not in removed] == original_lines
    reloaded = {p.id: p for p in connectors.load(out)}
    assert reloaded["kept2024"].abstract == "My own summary, which must stay."
    assert reloaded["someone2024near"].abstract == ""
    assert [p.id for p in connectors.load(out)] == [p.id for p in connectors.load(LIBRARY)]


def test_a_second_run_is_served_from_the_cache(fakes, tmp_path, monkeypatch):
    CliRunner().invoke(main, ["enrich", str(LIBRARY), "-o", str(tmp_path / "a.bib")])
    sent = sum(len(fake.requests) for fake in fakes)
    again = CliRunner().invoke(main, ["enrich", str(LIBRARY), "-o", str(tmp_path / "b.bib"), "--offline"])
    assert again.exit_code == 0, again.stderr
    assert sum(len(fake.requests) for fake in fakes) == sent
    assert (tmp_path / "a.bib").read_text() == (tmp_path / "b.bib").read_text()


def test_rank_enrich_and_bad_input(fakes, tmp_path, monkeypatch):
    offline = CliRunner().invoke(main, ["enrich", str(LIBRARY), "-o", str(tmp_path / "x.bib"), "--offline"])
    # An empty cache: what it holds (nothing) is added, the rest named, the library still written.
    assert offline.exit_code == 0, offline.stderr
    assert "could not be looked up (the cache holds no answer for them)" in offline.stderr
    assert (tmp_path / "x.bib").read_text(encoding="utf-8").count("@") == LIBRARY.read_text(encoding="utf-8").count("@")
    monkeypatch.delenv("LITRANK_OFFLINE")  # --offline holds for the rest of its (here: this test's) process
    ranked = CliRunner().invoke(main, ["rank", "-l", str(LIBRARY), "--enrich", "-n", "3"])
    assert ranked.exit_code == 0, ranked.stderr
    assert "Found abstracts for 5 of 6 papers without one" in ranked.stderr
    same = CliRunner().invoke(main, ["enrich", str(LIBRARY), "-o", str(LIBRARY)])
    assert same.exit_code == 2 and "never modifies its input" in same.stderr
