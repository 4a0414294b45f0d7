"""The feedback store (connectors.files.feedback_store), judgement helpers and `litrank feedback`."""
import json
import sqlite3

import pytest
from click.testing import CliRunner

import connectors
from connectors.files.feedback_store import APPLICATION_ID, SCHEMA_VERSION, FeedbackStore, default_path
from recommender import IdentityIndex, Paper, defaults
from recommender.cli import main
from recommender.feedback import DISLIKED, LIKED, judgements_from_keywords, merge_judgements

ABSTRACT = (
    "We propose a discrete flow matching objective for masked diffusion language models that "
    "replaces the per-token cross entropy with a path-wise bound, and show that it closes most "
    "of the perplexity gap to autoregressive models at equal compute on OpenWebText."
)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    directory = tmp_path / "litrank-data"
    monkeypatch.setenv("LITRANK_DATA_DIR", str(directory))
    return directory


@pytest.fixture
def store(data_dir):
    return FeedbackStore()


@pytest.fixture(scope="module")
def icml():
    return connectors.load(defaults.bundled_collection())


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_default_path_is_under_litrank_data_dir(data_dir):
    assert default_path() == data_dir / "feedback.sqlite"
    assert FeedbackStore().path == data_dir / "feedback.sqlite"
    assert FeedbackStore(data_dir / "other.db").path == data_dir / "other.db"


def test_missing_store_reads_as_empty_and_creates_nothing(store, data_dir):
    paper = Paper(id="x", title="Some Title", doi="10.1234/x")
    assert store.entries() == []
    assert store.judgement_of(paper) is None
    assert store.judgements([paper]) == {}
    assert store.forget(paper) is False
    assert not data_dir.exists()


def test_first_write_creates_directory_and_schema(store, data_dir):
    store.record(Paper(id="x", title="Some Title", doi="10.1234/x"), LIKED)
    assert store.path.is_file()
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    rows = conn.execute("SELECT key, match_key, judgement, paper_id, title, source FROM feedback ORDER BY key").fetchall()
    conn.close()
    assert rows == [
        ("doi:10.1234/x", "doi:10.1234/x", 1, "x", "Some Title", "cli"),
        ("title:some title|", "title:some title", 1, "x", "Some Title", "cli"),
    ]


def test_abstract_list_paper_is_recognised_under_a_new_id(store, tmp_path):
    (listed,) = connectors.load(write(tmp_path / "icml.txt", f"ICML 2026 Papers\n\n{ABSTRACT}\n"))
    assert listed.title_derived and listed.id.startswith("icml2026-")
    store.record(listed, LIKED)

    # The same abstract comes back, now with a title, authors and another id (spacing differs too).
    record = {"id": "openreview-abc123", "title": "Path-Wise Flow Matching for Masked Diffusion LMs",
              "authors": ["Ada Lovelace"], "abstract": ABSTRACT.replace(" ", "  "), "venue": "ICML", "year": 2026}
    other = {"id": "openreview-zzz", "title": "Unrelated", "abstract": "Something else entirely."}
    published, unrelated = connectors.load(write(tmp_path / "papers.jsonl", f"{json.dumps(record)}\n{json.dumps(other)}\n"))
    assert published.id != listed.id
    assert store.judgement_of(published) == LIKED
    assert store.judgement_of(unrelated) is None
    assert store.judgements([published, unrelated]) == {"openreview-abc123": LIKED}


def test_doi_matches_across_bibtex_and_jsonl(store, tmp_path):
    (bib,) = connectors.load(write(tmp_path / "lib.bib", """
@article{smith2024geo,
  title = {{GeoFlow}: Geometric Flows on Manifolds},
  author = {Smith, Jane and Doe, John},
  journal = {JMLR},
  year = {2024},
  doi = {10.5555/GeoFlow.2024.7},
}
"""))
    store.record(bib, DISLIKED, source="bibtex")
    record = {"id": "jmlr-17", "title": "Geometric flows on manifolds (extended)", "authors": ["J. Smith"],
              "doi": "https://doi.org/10.5555/geoflow.2024.7"}
    (jsonl,) = connectors.load(write(tmp_path / "c.jsonl", json.dumps(record) + "\n"))
    assert jsonl.doi == bib.doi == "10.5555/geoflow.2024.7"
    assert store.judgement_of(jsonl) == DISLIKED
    (entry,) = store.entries()
    assert entry.paper_id == "smith2024geo" and entry.source == "bibtex" and entry.judgement == DISLIKED
    assert entry.title == "GeoFlow: Geometric Flows on Manifolds"
    assert entry.keys == ("doi:10.5555/geoflow.2024.7", "title:geoflow geometric flows on manifolds|smith")


def test_title_matching_follows_identity_index(store):
    stored = Paper(id="a", title="Attention Is All You Need", authors=["Ashish Vaswani"])
    store.record(stored, LIKED)
    index = IdentityIndex([stored])
    cases = [
        (Paper(id="b", title="Attention is all you need!", authors=["A. Vaswani"]), LIKED),   # same surname
        (Paper(id="c", title="Attention Is All You Need"), LIKED),                          # no authors: matches
        (Paper(id="d", title="Attention Is All You Need", authors=["Someone Else"]), None),  # other first author
        (Paper(id="e", title="Attention Is Not All You Need", authors=["Ashish Vaswani"]), None),
    ]
    for paper, expected in cases:
        assert store.judgement_of(paper) == expected, paper.id
        assert (paper in index) == (expected is not None), paper.id
    assert store.judgements([paper for paper, _ in cases]) == {"b": LIKED, "c": LIKED}
    # And the other way round: a judgement given to an author-less record covers any first author.
    store.record(Paper(id="f", title="Denoising Diffusion Implicit Models"), DISLIKED)
    assert store.judgement_of(Paper(id="g", title="Denoising diffusion implicit models", authors=["Jiaming Song"])) == DISLIKED


def test_untitled_paper_without_identity_keys_is_keyed_by_id(store):
    paper = Paper(id="note-1", abstract="Too short.")
    assert paper.identity_keys() == []
    store.record(paper, DISLIKED)
    assert store.entries()[0].keys == ("id:note-1",)
    assert store.judgement_of(Paper(id="note-1")) == DISLIKED
    assert store.judgement_of(Paper(id="note-2")) is None


def test_newest_judgement_wins_and_keys_are_merged(store):
    listed = Paper(id="icml2026-1", title="Derived", title_derived=True, abstract=ABSTRACT)
    published = Paper(id="arxiv-2", title="Path-Wise Flow Matching", authors=["Ada Lovelace"],
                      arxiv_id="2601.01234", abstract=ABSTRACT)
    store.record(listed, LIKED)
    store.record(published, DISLIKED, source="zotero")  # same abstract: the same paper
    assert store.judgement_of(listed) == DISLIKED
    (entry,) = store.entries()
    assert entry.judgement == DISLIKED and entry.paper_id == "arxiv-2" and entry.source == "zotero"
    assert set(entry.keys) == set(published.identity_keys()) | set(listed.identity_keys())
    # A record that only carries the arXiv id is still recognised, and re-liking flips it back.
    arxiv_only = Paper(id="x", arxiv_id="2601.01234")
    assert store.judgement_of(arxiv_only) == DISLIKED
    store.record(arxiv_only, LIKED)
    assert store.judgement_of(listed) == store.judgement_of(published) == LIKED
    assert len(store.entries()) == 1


def test_record_many_later_pairs_win(store, icml):
    store.record_many([(icml[0], LIKED), (icml[1], LIKED), (icml[0], DISLIKED)], source="bulk")
    assert store.judgements(icml[:3]) == {icml[0].id: DISLIKED, icml[1].id: LIKED}
    assert [entry.source for entry in store.entries()] == ["bulk", "bulk"]


def test_forget(store, tmp_path):
    paper = Paper(id="p", title="A Paper", doi="10.1234/p", authors=["Jane Smith"])
    store.record(paper, LIKED)
    store.record(Paper(id="q", title="Another", doi="10.1234/q"), DISLIKED)
    assert store.forget(Paper(id="other-id", doi="10.1234/P")) is True  # forgotten by identity, not id
    assert store.judgement_of(paper) is None
    assert store.forget(paper) is False
    assert [entry.paper_id for entry in store.entries()] == ["q"]


def test_bulk_judgements_on_the_bundled_icml_papers(store, icml, monkeypatch):
    assert len(icml) == 70
    liked, disliked = icml[:5], icml[60:63]
    store.record_many([(p, LIKED) for p in liked] + [(p, DISLIKED) for p in disliked])

    statements = []
    real_connect = sqlite3.connect

    def traced_connect(*args, **kwargs):
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    fresh = connectors.load(defaults.bundled_collection())  # new Paper objects, same ids
    result = store.judgements(fresh)
    assert result == {**{p.id: LIKED for p in liked}, **{p.id: DISLIKED for p in disliked}}
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "FROM feedback" in s]
    assert len(reads) == 1  # one query for all 70 papers, not one per paper


def test_invalid_judgement_is_rejected(store):
    with pytest.raises(ValueError, match="not 2"):
        store.record(Paper(id="x", doi="10.1234/x"), 2)
    with pytest.raises(ValueError):
        store.record(Paper(id="x", doi="10.1234/x"), True)
    assert not store.path.exists()


def test_corrupt_store_raises_source_error(tmp_path):
    path = write(tmp_path / "feedback.sqlite", "this is not a database\n" * 200)
    paper = Paper(id="x", doi="10.1234/x")
    for action in (lambda s: s.entries(), lambda s: s.judgement_of(paper), lambda s: s.record(paper, LIKED)):
        with pytest.raises(connectors.SourceError) as info:
            action(FeedbackStore(path))
        message = str(info.value)
        assert str(path) in message and "not a litrank feedback store" in message and "\n" not in message
    assert path.read_text(encoding="utf-8") == "this is not a database\n" * 200


def test_other_sqlite_database_is_not_a_store(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(connectors.SourceError, match="not a litrank feedback store"):
        FeedbackStore(path).record(Paper(id="x", doi="10.1234/x"), LIKED)
    with pytest.raises(connectors.SourceError, match="not a litrank feedback store"):
        FeedbackStore(path).entries()


def test_store_from_a_newer_litrank_is_refused(store):
    store.record(Paper(id="x", doi="10.1234/x"), LIKED)
    conn = sqlite3.connect(store.path)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(connectors.SourceError, match="schema version 99 is newer"):
        store.entries()


def test_keyword_judgements_from_bibtex(tmp_path):
    papers = connectors.load(write(tmp_path / "lib.bib", """
@article{liked1, title = {One}, keywords = {diffusion, litrank:liked}}
@article{disliked1, title = {Two}, keywords = {LitRank:Disliked; sampling}}
@article{plain, title = {Three}, keywords = {litrank, liked}}
@article{both, title = {Four}, keywords = {litrank:liked, litrank:disliked}}
@article{none, title = {Five}}
"""))
    assert [p.id for p in papers] == ["liked1", "disliked1", "plain", "both", "none"]
    from_keywords = judgements_from_keywords(papers)
    assert from_keywords == {"liked1": LIKED, "disliked1": DISLIKED}
    assert merge_judgements(from_keywords, {"liked1": DISLIKED, "plain": LIKED}) == {
        "liked1": DISLIKED, "disliked1": DISLIKED, "plain": LIKED}
    assert merge_judgements() == {}


# -- the CLI -----------------------------------------------------------------------------------

def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_like_dislike_and_list_json(data_dir, icml):
    ids = {p.id for p in icml}
    assert {"icml2026-1d3ae34a7f", "icml2026-6dd48c0a49"} <= ids
    result = run("feedback", "--like", "icml2026-1d3ae34a7f", "--like", "icml2026-6dd48c0a49",
                 "--dislike", "ho2020denoising")
    assert result.exit_code == 0, result.stderr
    path = data_dir / "feedback.sqlite"
    assert f"Liked 2, disliked 1 (stored in {path})." in result.stderr
    assert result.stdout == ""

    listed = run("feedback", "--list", "--format", "json")
    assert listed.exit_code == 0
    entries = json.loads(listed.stdout)
    by_id = {entry["paper_id"]: entry for entry in entries}
    assert set(by_id) == {"icml2026-1d3ae34a7f", "icml2026-6dd48c0a49", "ho2020denoising"}
    assert by_id["icml2026-1d3ae34a7f"]["judgement"] == 1
    assert by_id["icml2026-1d3ae34a7f"]["title"] == "MPDC: Multi-Path Discrete Consistency"
    assert by_id["icml2026-1d3ae34a7f"]["keys"][0].startswith("abstract:")
    ho = by_id["ho2020denoising"]
    assert ho["judgement"] == -1 and ho["source"] == "cli"
    assert ho["title"] == "Denoising Diffusion Probabilistic Models"
    assert "arxiv:2006.11239" in ho["keys"]
    assert set(entries[0]) == {"keys", "paper_id", "title", "judgement", "source", "created_at"}

    # Later runs see the judgements by identity, through the store API.
    library = connectors.load(defaults.bundled_library())
    assert FeedbackStore().judgements(icml + library) == {
        "icml2026-1d3ae34a7f": LIKED, "icml2026-6dd48c0a49": LIKED, "ho2020denoising": DISLIKED}

    table = run("feedback", "--list")
    assert table.exit_code == 0
    assert "MPDC: Multi-Path Discrete Consistency" in table.stdout and "disliked" in table.stdout
    assert "3 judgements in" in table.stdout


def test_cli_flip_and_forget(data_dir):
    assert run("feedback", "--like", "ho2020denoising").exit_code == 0
    flipped = run("feedback", "--dislike", "ho2020denoising", "--forget", "icml2026-1d3ae34a7f")
    assert flipped.exit_code == 0
    assert "Liked 0, disliked 1, forgot 0 (1 had no judgement)" in flipped.stderr
    assert [(e.paper_id, e.judgement) for e in FeedbackStore().entries()] == [("ho2020denoising", DISLIKED)]
    forgot = run("feedback", "--forget", "ho2020denoising")
    assert forgot.exit_code == 0 and "Forgot 1 (stored in" in forgot.stderr
    assert FeedbackStore().entries() == []


def test_cli_with_explicit_sources(data_dir, tmp_path):
    source = write(tmp_path / "mine.jsonl", json.dumps({"id": "p1", "title": "My Paper", "doi": "10.9999/p1"}) + "\n")
    result = run("feedback", "-c", str(source), "-l", str(source), "--like", "p1")
    assert result.exit_code == 0, result.stderr
    assert "bundled" not in result.stderr
    assert FeedbackStore().judgement_of(Paper(id="elsewhere", doi="10.9999/P1")) == LIKED


def test_cli_unknown_id_exits_2_and_stores_nothing(data_dir):
    result = run("feedback", "--like", "icml2026-1d3ae34a7f", "--dislike", "no-such-paper")
    assert result.exit_code == 2
    assert "Error: unknown paper id 'no-such-paper' (not in bundled ICML 2026 list" in result.stderr
    assert not (data_dir / "feedback.sqlite").exists()
    # With an existing store: still nothing written.
    assert run("feedback", "--like", "ho2020denoising").exit_code == 0
    again = run("feedback", "--like", "icml2026-1d3ae34a7f", "--forget", "ho2020denoising", "--like", "nope")
    assert again.exit_code == 2
    assert [e.paper_id for e in FeedbackStore().entries()] == ["ho2020denoising"]


def test_cli_bad_usage_exits_2(data_dir):
    both = run("feedback", "--like", "ho2020denoising", "--dislike", "ho2020denoising")
    assert both.exit_code == 2
    assert "'ho2020denoising' is given to both --like and --dislike" in both.stderr
    assert run("feedback").exit_code == 2
    assert run("feedback", "--list", "--format", "xml").exit_code == 2
    assert not data_dir.exists()


def test_cli_corrupt_store_is_one_error_line(data_dir):
    data_dir.mkdir()
    write(data_dir / "feedback.sqlite", "garbage\n" * 100)
    result = run("feedback", "--list")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {data_dir / 'feedback.sqlite'}: not a litrank feedback store (file is not a database)"]


def test_cli_list_of_empty_store(data_dir):
    result = run("feedback", "--list", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    result = run("feedback", "--list")
    assert result.exit_code == 0 and result.stdout == "" and "No judgements stored" in result.stderr
    assert not data_dir.exists()


def test_cli_help():
    result = run("feedback", "--help")
    assert result.exit_code == 0
    for text in ("--like ID", "--dislike ID", "--forget ID", "--list", "[table|json]", "LITRANK_DATA_DIR",
                 "litrank feedback --like icml2026-1d3ae34a7f"):
        assert text in result.stdout
    assert "feedback" in run("--help").stdout
