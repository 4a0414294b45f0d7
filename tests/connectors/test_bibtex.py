"""connectors.bibtex: reading hard BibTeX, recovering from broken entries, writing it back."""
from __future__ import annotations

import dataclasses
import gzip
import logging
import re
from pathlib import Path

import bibtexparser
import pytest
from bibtexparser.bparser import BibTexParser

from connectors import bibtex
from connectors.bibtex.latex import latex_to_text, parse_names
from recommender.paper import Paper
from recommender.text import normalize_doi
from tests.conftest import DATA, REPO, SHARED

HARD = DATA / "hard-cases.bib"
SHARED_BIBTEX = SHARED / "data" / "bibtex"
SHARED_FILES = sorted(SHARED_BIBTEX.glob("*.bib")) if SHARED_BIBTEX.is_dir() else []


def shared(name: str) -> Path:
    path = SHARED_BIBTEX / name
    if not path.exists():
        pytest.skip(f"shared BibTeX data not found: ../shared/data/bibtex/{name} beside the repository")
    return path


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "litrank" and r.levelno >= logging.WARNING]


def plain_parse(text: str):
    """bibtexparser 1.4 on its own, as a third-party consumer of our output would use it."""
    parser = BibTexParser(common_strings=True, ignore_nonstandard_types=False)
    return bibtexparser.loads(text, parser)


# --- the hand-written hard cases ---------------------------------------------------------------

@pytest.fixture(scope="module")
def hard():
    return {paper.id: paper for paper in bibtex.load(HARD)}


def test_hard_cases_load_every_entry_but_the_broken_one_in_file_order():
    assert [p.id for p in bibtex.load(HARD)] == [
        "schoelkopf2001accents", "nested2019", "math2024", "child2020", "proc2020",
        "series2020", "dup2022", "paren2021", "dup2022-2", "untitled2018", "chapter2017", "volume2017"]


def test_accents_in_every_latex_form_macros_and_month(hard):
    paper = hard["schoelkopf2001accents"]
    assert paper.title == "GeoFlow: Bayesian Kernels for Étude de la Naïve Straße"
    assert paper.authors == ["Bernhard Schölkopf", "Klaus-Robert Müller", "Çağlar Gülçehre", "Jérôme Maße"]
    assert paper.year == 2001
    assert paper.venue == "Advances in Neural Information Processing Systems"  # @string macro
    assert paper.entry_type == "inproceedings" and paper.source == str(HARD)
    assert paper.fields == {"note": "Cited by many – really", "pages": "1–10", "month": "December"}
    assert paper.title_derived is False and paper.date_added is None


def test_nested_braces_institutions_and_name_forms(hard):
    paper = hard["nested2019"]
    assert paper.title == "The DNA of Neural Nets: 50% Faster & Better"
    assert paper.authors == ["Google Research", "Barnes and Noble", "Jan van der Berg", "Joseph Pimentel Jr."]
    assert paper.venue == "Journal of Machine Learning Research"
    assert paper.year == 2019
    assert paper.doi == "10.5555/abc.123"
    assert paper.keywords == ["deep learning", "nets", "DNA"]
    assert paper.fields == {"number": "3", "volume": "20"}


def test_math_in_title_and_abstract_arxiv_eprint_and_date_added(hard):
    paper = hard["math2024"]
    assert paper.title == "α-Divergence Bounds in O(n^2) for 256 × 256 Images"
    assert paper.abstract == "We study β-VAEs with λ ≤ 1 and show that the KL term matters."
    assert paper.authors == ["Andrew Ng"]
    assert (paper.year, paper.venue, paper.entry_type) == (2024, "arXiv preprint", "misc")
    assert paper.arxiv_id == "2401.01234"
    assert paper.date_added == "2024-02-03T10:11:12+01:00"
    assert paper.fields["eprint"] == "2401.01234v2" and paper.fields["primaryclass"] == "cs.LG"


def test_cascading_crossref_inherits_fields_but_not_titles(hard):
    child = hard["child2020"]
    assert child.title == "Child Paper"
    assert child.authors == ["Jane Doe"]
    assert child.venue == "International Conference on Machine Learning"  # booktitle of the proceedings
    assert child.year == 2020
    assert child.fields["publisher"] == "PMLR"
    assert child.fields["address"] == "Vienna" and child.fields["editor"] == "Roe, Richard"  # two levels up
    assert child.fields["pages"] == "5–9" and child.fields["crossref"] == "proc2020"
    proceedings = hard["proc2020"]
    assert proceedings.title == "Proceedings of the Thirty-Seventh ICML"
    assert proceedings.fields["address"] == "Vienna"
    assert hard["series2020"].title == "Machine Learning Series" and hard["series2020"].year is None
    # Titles and identity fields are not inherited; a collection's title is the chapter's venue.
    chapter = hard["chapter2017"]
    assert (chapter.title, chapter.doi, chapter.url, chapter.year) == ("", "", "", 2017)
    assert chapter.venue == "Collected Works" and chapter.fields["publisher"] == "Springer"
    assert chapter.fields["pages"] == "1—2"
    volume = hard["volume2017"]
    assert (volume.doi, volume.url, volume.venue) == ("10.1234/volume.2017", "https://example.org/volume", "Springer")
    assert volume.fields == {"year": "2017", "date": "2017-03"}  # both kept: nothing lost on export


def test_string_concatenation_parenthesised_entry_and_odd_year(hard):
    paper = hard["paren2021"]
    assert paper.title == "Part International Conference on Machine Learning Notes: Façade – Résumé"
    assert paper.authors == ["Hans Straßer", "Søren Østergaard", "Łukasz Żak"]
    assert (paper.year, paper.venue) == (2021, "Trans. on Pattern")
    assert paper.url == "https://example.org/a_b%20c?x=1&y=2"
    assert paper.fields == {"month": "February", "year": "c. 2021"}


def test_duplicate_keys_are_both_kept_with_unique_ids(hard):
    first, second = hard["dup2022"], hard["dup2022-2"]
    assert (first.title, first.authors, first.year) == ("First Copy", ["Jan Kowalski"], 2022)
    assert (second.title, second.authors, second.year) == ("Second Copy", ["Anna Nowak"], 2022)
    assert second.fields == {"date": "2022-05-01"}


def test_untitled_entry_is_kept_with_its_abstract(hard):
    paper = hard["untitled2018"]
    assert paper.title == "" and paper.year == 2018
    assert paper.abstract == "An abstract without a title, 100% real; see Section 2."


def test_broken_duplicate_and_dangling_crossref_are_reported_with_lines(caplog):
    with caplog.at_level(logging.WARNING, logger="litrank"):
        bibtex.load(HARD)
    messages = warnings(caplog)
    assert f"{HARD}:60: entry 'broken2023' could not be parsed and was skipped" in messages
    assert f"{HARD}:89: duplicate key 'dup2022' (first at line 72); kept both, this one as 'dup2022-2'" in messages
    assert f"{HARD}:96: entry 'untitled2018': crossref target 'nowhere' not found" in messages
    assert len(messages) == 3


# --- recovery from what bibtexparser 1.4 silently swallows -------------------------------------

def test_entry_swallowed_by_an_unbalanced_brace_is_recovered(caplog):
    text = ("@article{a,\n  title = {Stray { brace,\n  year = {2001}\n}\n\n"
            "@article{b,\n  title = {B},\n}\n}}\n\n@article{c, title = {C}}\n")
    with caplog.at_level(logging.WARNING, logger="litrank"):
        papers = bibtex.loads(text, "swallow.bib")
    assert [(p.id, p.title) for p in papers] == [("b", "B"), ("c", "C")]
    assert warnings(caplog) == ["swallow.bib:1: entry 'a' could not be parsed and was skipped"
                                " (unbalanced braces: a later entry starts inside it)"]


def test_entries_after_junk_on_a_line_are_recovered_but_commented_ones_are_not(caplog):
    text = ("@misc{a, title={A}} junk @misc{b, title={B}}\n@misc{c, title={C}}\n"
            "% @misc{x, title={X}}\n@misc{broken title={x}}\n@misc{d, title={D}}\n")
    with caplog.at_level(logging.WARNING, logger="litrank"):
        papers = bibtex.loads(text, "junk.bib")
    assert [p.id for p in papers] == ["a", "b", "c", "d"]
    assert warnings(caplog) == ["junk.bib:4: entry 'broken' could not be parsed and was skipped"]


def test_undefined_and_circular_macros_are_kept_as_text_not_fatal(caplog):
    text = "@string{x = y # z}\n@string{y = x}\n@misc{a, title = x # undefinedmacro, month = dec}\n"
    with caplog.at_level(logging.WARNING, logger="litrank"):
        [paper] = bibtex.loads(text, "macros.bib")
    assert paper.title == "xzundefinedmacro" and paper.fields == {"month": "December"}
    assert "macros.bib:3: entry 'a': undefined @string 'undefinedmacro', kept as text" in warnings(caplog)
    assert "macros.bib:3: entry 'a': circular @string 'x', kept as text" in warnings(caplog)


def test_entries_without_fields_and_files_without_entries(caplog):
    with caplog.at_level(logging.WARNING, logger="litrank"):
        assert [p.id for p in bibtex.loads("@misc{e1}\n@misc{e2,}\n", "e.bib")] == ["e1", "e2"]
        assert bibtex.loads("% only a comment\n@comment{x}\n@string{a = {b}}\n", "c.bib") == []
        assert warnings(caplog) == []
        assert bibtex.loads("just some text\nnot BibTeX\n", "t.bib") == []
    assert warnings(caplog) == ["t.bib: no BibTeX entries found"]


# --- encodings ------------------------------------------------------------------------------------

def test_latin1_file_loads_with_a_warning(tmp_path, caplog):
    path = tmp_path / "latin.bib"
    path.write_bytes("@article{lat,\n  title = {Café naïve},\n  author = {Müller, Jürgen},\n}\n".encode("latin-1"))
    with caplog.at_level(logging.WARNING, logger="litrank"):
        [paper] = bibtex.load(path)
    assert (paper.title, paper.authors) == ("Café naïve", ["Jürgen Müller"])
    assert any("not valid UTF-8" in m for m in warnings(caplog))


def test_bom_and_gzip_files_load(tmp_path):
    bom = tmp_path / "bom.bib"
    bom.write_bytes(b"\xef\xbb\xbf@article{bom,\n  title = {With a B{\\\"O}M},\n}\n")
    assert [(p.id, p.title) for p in bibtex.load(bom)] == [("bom", "With a BÖM")]
    packed = tmp_path / "hard.bib.gz"
    packed.write_bytes(gzip.compress(HARD.read_bytes()))
    assert [(p.id, p.title, p.authors) for p in bibtex.load(packed)] == \
        [(p.id, p.title, p.authors) for p in bibtex.load(HARD)]


# --- the shared bibtexparser/biber corpus ---------------------------------------------------------

@pytest.mark.parametrize("path", SHARED_FILES or [None], ids=lambda p: p.name if p else "missing")
def test_every_shared_file_loads(path, caplog):
    if path is None:
        pytest.skip(f"shared BibTeX data not found at {SHARED_BIBTEX} (../shared/data/bibtex)")
    with caplog.at_level(logging.WARNING, logger="litrank"):
        papers = bibtex.load(path)
    assert all(isinstance(p, Paper) and p.source == str(path) for p in papers)
    assert len({p.id for p in papers}) == len(papers)
    assert all(m.startswith(f"{path}:") for m in warnings(caplog))  # every problem names the file


@pytest.mark.parametrize("name, count", [
    ("biber-examples.bib", 118), ("wrong.bib", 2), ("article_missing_coma.bib", 4), ("traps.bib", 1),
    ("article_start_with_whitespace.bib", 2), ("multiple_entries_and_comments.bib", 3),
    ("crossref_entries.bib", 14), ("xref_entries.bib", 8), ("book_bom.bib", 1),
    ("article_start_with_bom.bib", 1), ("comments_only.bib", 0), ("empty.bib", 0),
])
def test_known_entry_counts(name, count):
    assert len(bibtex.load(shared(name))) == count


def test_shared_files_problems_are_named(caplog):
    with caplog.at_level(logging.WARNING, logger="litrank"):
        bibtex.load(shared("crossref_missing_entries.bib"))
        bibtex.load(shared("crossref_cascading_cycle.bib"))
        papers = bibtex.load(shared("biber-examples.bib"))
    messages = warnings(caplog)
    assert any(":2: entry 'mcr': crossref target 'missing1' not found" in m for m in messages)
    assert any("crossref_cascading_cycle.bib:11: entry 'circ2': circular crossref" in m for m in messages)
    assert any("biber-examples.bib:1543: duplicate key 'tmn4' (first at line 1535)" in m for m in messages)
    assert [p.id for p in papers].count("tmn4-2") == 1


def test_shared_quirks(caplog):
    [trap] = bibtex.load(shared("traps.bib"))
    assert trap.title == "An amazing title" and trap.fields["month"] == "jan"  # quoted: not the macro
    assert trap.authors == ["Ben Loaeb Jean Laidé"]  # "Laid{\'e},\nBen Loaeb" is Last, First
    assert trap.keywords == ["keyword1", "keyword2"] and trap.fields["volume"] == "n.s. 2"
    wrong, correct = bibtex.load(shared("wrong.bib"))
    assert (wrong.entry_type, wrong.authors, correct.entry_type) == ("wrong", ["wrong"], "article")
    [book] = bibtex.load(shared("book_capital_AND.bib"))
    assert book.authors == ["R.B. Bird", "R.C. Armstrong", "O. Hassager"]
    [chain] = [p for p in bibtex.load(shared("crossref_cascading_aliases.bib")) if p.id == "ccr3"]
    assert chain.authors == ["Vince Various"] and chain.year == 1911  # via ccr2 and the alias ccr1alias


# --- round trip -----------------------------------------------------------------------------------

def _norm(name: str, value: str):
    if name in ("author", "editor"):
        return parse_names(value)
    if name == "month":
        return latex_to_text(value)[:3].lower()
    if name == "doi":
        return normalize_doi(value)
    if name in ("keywords", "keyword"):
        return [k.strip() for k in re.split(r"[,;]", latex_to_text(value)) if k.strip()]
    if name in bibtex._VERBATIM_FIELDS:
        return " ".join(value.split())
    return latex_to_text(value)


@pytest.mark.parametrize("name", ["hard-cases.bib", "biber-examples.bib"])
def test_round_trip_loses_no_entry_and_no_field(name):
    path = HARD if name == "hard-cases.bib" else shared(name)
    original = plain_parse(path.read_text(encoding="utf-8")).entries
    papers = bibtex.load(path)
    output = bibtex.dumps(papers)
    written = plain_parse(output)
    assert not [c for c in written.comments if c.lstrip().startswith("@")]  # nothing unparsable
    assert len(written.entries) == len(original) == len(papers)
    later_keys = [{e["ID"].casefold() for e in written.entries[i + 1:]} for i in range(len(written.entries))]
    for i, (before, after) in enumerate(zip(original, written.entries)):
        assert after["ID"] == papers[i].id
        expected_type = before["ENTRYTYPE"] if before["ENTRYTYPE"] in bibtex.BIBTEX_TYPES else "misc"
        assert after["ENTRYTYPE"] == expected_type
        for field, value in before.items():
            if field in ("ID", "ENTRYTYPE") or not value.strip():
                continue
            if field == "crossref" and value.casefold() not in later_keys[i]:
                assert "crossref" not in after  # BibTeX needs the target later in the same file
                continue
            target = "keywords" if field == "keyword" and "keyword" not in after else field
            assert target in after, f"{before['ID']}: field {field} lost"
            assert _norm(field, after[target]) == _norm(field, value), f"{before['ID']}: {field}"
    # Loading our own output gives the same papers (up to the documented normalisations).
    again = bibtex.loads(output, "again.bib")
    has_crossref = ["crossref" in entry for entry in written.entries]
    assert [_comparable(p, kept) for p, kept in zip(again, has_crossref)] == \
        [_comparable(p, kept) for p, kept in zip(papers, has_crossref)]


def _comparable(paper: Paper, crossref_written: bool) -> dict:
    """A paper's attributes, minus what dumps() normalises: month macros, dropped crossrefs."""
    fields = dict(paper.fields)
    if "month" in fields:
        fields["month"] = fields["month"][:3].lower()
    if not crossref_written:
        fields.pop("crossref", None)
    entry_type = paper.entry_type if paper.entry_type in bibtex.BIBTEX_TYPES else "misc"
    return {**vars(paper), "source": None, "entry_type": entry_type, "fields": fields}


# --- writing ----------------------------------------------------------------------------------------

def test_special_characters_are_escaped_and_urls_and_dois_are_verbatim():
    title = r"50% of R&D_x #1 costs $5 {a} ~b ^c \d"
    paper = Paper(id="p", title=title, url="https://ex.org/a_b%20c#frag", doi="10.1000/ab_c%d",
                  abstract="Uses 100% of x_1 & y", source="x.jsonl")
    out = bibtex.dumps([paper])
    assert r"title = {{50\% of R\&D\_x \#1 costs \$5 \textbraceleft{}a\textbraceright{} " \
           r"\textasciitilde{}b \textasciicircum{}c \textbackslash{}d}}," in out
    assert "url = {https://ex.org/a_b%20c#frag}," in out
    assert "doi = {10.1000/ab_c%d}," in out
    assert "pages = {3--5, 7---9}," in bibtex.dumps([Paper(id="q", fields={"pages": "3–5, 7—9"})])
    assert r"abstract = {Uses 100\% of x\_1 \& y}," in out
    [again] = bibtex.loads(out)
    assert (again.title, again.url, again.doi, again.abstract) == (title, paper.url, paper.doi, paper.abstract)
    [entry] = plain_parse(out).entries
    assert entry["url"] == paper.url


def test_generated_keys_are_readable_unique_and_stable():
    def paper(title, authors=("Yu Shi",), year=2026, **kw):
        return Paper(id=title, title=title, authors=list(authors), year=year, source="icml.jsonl", **kw)
    papers = [
        paper("PoE-Bridge: Fast Decoding"),
        paper("The PoE-Bridge Revisited"),
        paper("PoE-Bridge, again"),
        paper("Towards a Theory of Everything", authors=["José Müller-Lüdenscheidt"], year=None),
        paper("On Scaling", authors=["Google DeepMind"]),
        paper("An Ode", authors=[], venue="ICML"),
        paper("", authors=[]),
    ]
    keys = bibtex.citation_keys(papers)
    assert keys == ["shi2026poebridge", "shi2026poebridgea", "shi2026poebridgeb", "mullerludenscheidttheory",
                    "google2026scaling", "icml2026ode", "anon2026"]
    assert bibtex.citation_keys(papers) == keys
    assert bibtex.citation_keys(papers[3:]) == keys[3:]  # a paper's key does not depend on unrelated ones
    assert [m.group(1) for m in re.finditer(r"^@\w+\{(.+),$", bibtex.dumps(papers), re.M)] == keys


def test_bibtex_keys_are_kept_and_collisions_get_suffixes():
    kept = Paper(id="Shi2026poebridge", title="X", entry_type="article", source="lib.bib")
    from_jsonl = Paper(id="icml-1", title="PoE-Bridge", authors=["Yu Shi"], year=2026, source="c.jsonl")
    bad_key = Paper(id="has space", title="Y", authors=["Ann Lee"], year=2020, entry_type="misc", source="lib.bib")
    no_bib = Paper(id="smith:2020", title="Z", authors=["Ann Lee"], year=2021, entry_type="misc", source="x.jsonl")
    assert bibtex.citation_keys([from_jsonl, kept, bad_key, no_bib]) == \
        ["shi2026poebridgea", "Shi2026poebridge", "lee2020y", "lee2021z"]


def test_derived_title_is_noted():
    derived = Paper(id="d", title="PoE-Bridge", abstract="We introduce PoE-Bridge.", title_derived=True,
                    source="icml.txt")
    noted = Paper(id="n", title="GeoFlow", title_derived=True, fields={"note": "Seen at ICML"}, source="icml.txt")
    entries = plain_parse(bibtex.dumps([derived, noted])).entries
    assert entries[0]["note"] == "Title derived from the abstract by litrank"
    assert entries[1]["note"] == "Seen at ICML; Title derived from the abstract by litrank"


def test_entry_types_venues_names_and_months():
    papers = [
        Paper(id="a", title="A", venue="ICML", year=2026, source="c.jsonl"),
        Paper(id="b", title="B", venue="Journal of Machine Learning Research", source="c.jsonl"),
        Paper(id="c", title="C", arxiv_id="2401.00002", source="c.jsonl"),
        Paper(id="d", title="D", venue="NeurIPS", entry_type="conferencePaper", source="zotero"),
        Paper(id="e", title="E", authors=["Ana de la Cruz", "Google DeepMind", "Martin Luther King Jr.", "Plato"],
              fields={"month": "December", "Publication Year": "2026"}, source="c.csv"),
    ]
    a, b, c, d, e = plain_parse(bibtex.dumps(papers)).entries
    assert (a["ENTRYTYPE"], a["booktitle"], a["year"]) == ("inproceedings", "ICML", "2026")
    assert (b["ENTRYTYPE"], b["journal"]) == ("article", "Journal of Machine Learning Research")
    assert (c["ENTRYTYPE"], c["eprint"], c["archiveprefix"]) == ("misc", "2401.00002", "arXiv")
    assert (d["ENTRYTYPE"], d["booktitle"]) == ("inproceedings", "NeurIPS")
    assert e["author"] == "de la Cruz, Ana and {Google DeepMind} and King, Jr., Martin Luther and Plato"
    assert e["month"] == "December" and e["publication-year"] == "2026"
    assert "month = dec," in bibtex.dumps(papers[4:])  # the macro, which biber reads as a number
    assert bibtex.loads(bibtex.dumps(papers[4:]))[0].authors == papers[4].authors


def test_output_is_deterministic_ordered_and_newline_terminated():
    papers = bibtex.load(HARD)
    out = bibtex.dumps(papers)
    assert out == bibtex.dumps(papers) and out.endswith("}\n") and not out.endswith("\n\n")
    assert out.count("\n\n@") == len(papers) - 1
    first = out.split("\n\n")[0].splitlines()
    assert first[0] == "@inproceedings{schoelkopf2001accents,"
    assert [line.split(" = ")[0].strip() for line in first[1:-1]] == \
        ["title", "author", "year", "booktitle", "pages", "month", "note"]
    assert bibtex.dumps([]) == ""


def test_crossref_is_written_only_when_its_target_follows():
    child = Paper(id="c", title="C", entry_type="inproceedings", fields={"crossref": "p"}, source="l.bib")
    parent = Paper(id="p", title="P", entry_type="proceedings", source="l.bib")
    assert "crossref = {p}" in bibtex.dumps([child, parent])
    assert "crossref" not in bibtex.dumps([parent, child])


def test_dump_writes_gzip_when_asked(tmp_path):
    papers = bibtex.load(HARD)
    target = tmp_path / "x.bib.gz"
    bibtex.dump(papers, target)
    assert target.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(target.read_bytes()).decode("utf-8") == bibtex.dumps(papers)
    assert [p.title for p in bibtex.load(target)] == [p.title for p in papers]


@pytest.mark.parametrize("latex, text", [
    (r'{\"o} \"{o} \"o \'e {\ss} \c{c} \v{s} {\aa}', "ö ö ö é ß ç š å"),
    (r"a--b---c~d \& \% \emph{x} \textbf{y} \textit{z}", "a–b—c d & % x y z"),
    (r"$\alpha$-divergence, $O(n^2)$, $256 \times 256$, $a \leq b$", "α-divergence, O(n^2), 256 × 256, a ≤ b"),
    (r"{GeoFlow}: {B}ayesian \unknown{arg} and \mystery",  "GeoFlow: Bayesian unknown arg and mystery"),
    ("  spread\n\t over   lines ", "spread over lines"),
])
def test_latex_to_text(latex, text):
    assert latex_to_text(latex) == text


# --- large files: read a chunk at a time -------------------------------------------------------

def _load_in_chunks(path: Path, chunk_chars: int, monkeypatch, caplog, processes: int = 1):
    from connectors import _io
    from connectors.bibtex import scanner as _bibtex_scan

    monkeypatch.setattr(_bibtex_scan, "CHUNK_CHARS", chunk_chars)
    monkeypatch.setattr(_bibtex_scan, "PARALLEL_MIN_CHARS", 1)  # any file is read in parts
    monkeypatch.setattr(_io, "READ_BYTES", max(64, chunk_chars // 3))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="litrank"):
        papers = bibtex.load(path, processes)
    return papers, warnings(caplog)


@pytest.mark.parametrize("name", ["broken-library.bib", "hard-cases.bib", "biber-examples.bib"])
def test_tiny_chunks_read_the_same_papers_and_name_the_same_lines(name, monkeypatch, caplog):
    """A file read in chunks of a few hundred characters (pieces cut anywhere, even inside a
    UTF-8 character) gives what one chunk gives: the same papers, the same warnings and lines."""
    path = DATA / name if (DATA / name).exists() else shared(name)
    whole, whole_warnings = _load_in_chunks(path, 1 << 30, monkeypatch, caplog)
    small, small_warnings = _load_in_chunks(path, 300, monkeypatch, caplog)
    assert [(p.id, p.title, p.abstract, p.authors, p.fields) for p in small] == \
           [(p.id, p.title, p.abstract, p.authors, p.fields) for p in whole]
    assert small_warnings == whole_warnings
    if name == "broken-library.bib":
        assert any(":44: entry 'rombach2022high'" in w for w in small_warnings)


@pytest.mark.parametrize("processes", [2, 3])
@pytest.mark.parametrize("name", ["broken-library.bib", "hard-cases.bib", "biber-examples.bib", "crossref_cascading.bib",
                                  "article_with_strings.bib", "traps.bib"])
def test_a_file_read_in_parts_by_several_processes_reads_as_one(name, processes, monkeypatch, caplog):
    """Parts parsed in forked processes: the same papers, @string macros and crossrefs across
    parts, and the same warnings with the same lines in the same order."""
    from recommender.runtime import spare_core

    path = DATA / name if (DATA / name).exists() else shared(name)
    whole, whole_warnings = _load_in_chunks(path, 1 << 30, monkeypatch, caplog)
    for chunk_chars in (1 << 30, 300):
        parts, parts_warnings = _load_in_chunks(path, chunk_chars, monkeypatch, caplog, processes)
        assert [dataclasses.asdict(p) for p in parts] == [dataclasses.asdict(p) for p in whole]
        assert parts_warnings == whole_warnings
    if name == "broken-library.bib":
        assert any(":44: entry 'rombach2022high'" in w for w in parts_warnings)
    if not spare_core():
        pytest.skip("one core: the parts were read one after the other (same result, checked above)")


@pytest.mark.parametrize("processes", [1, 2])
def test_a_file_too_deeply_nested_for_the_parser_is_refused_whole_or_in_parts(processes, tmp_path, monkeypatch):
    from connectors import SourceError
    from connectors.bibtex import scanner as _bibtex_scan

    monkeypatch.setattr(_bibtex_scan, "PARALLEL_MIN_CHARS", 1)
    path = tmp_path / "deep.bib"
    path.write_text("@misc{a, title = {fine}}\n\n" * 50 + "@misc{b, title = " + "{" * 5000 + "}" * 5000 + "}\n")
    with pytest.raises(SourceError, match="deep.bib: braces nested too deeply to parse"):
        bibtex.load(path, processes=processes)


def test_chunks_end_only_where_a_line_starts_an_entry():
    from connectors.bibtex.scanner import chunks

    text = "".join(f"@misc{{k{i},\n  title = {{Paper {i} @misc{{not-a-start}}}},\n}}\n\n" for i in range(50))
    pieces = [text[i:i + 37] for i in range(0, len(text), 37)]
    cut = list(chunks(pieces, 200))
    assert "".join(chunk for chunk, _ in cut) == text and len(cut) > 5
    for chunk, first_line in cut:
        assert chunk.startswith("@misc{k")
        assert text.count("\n", 0, text.index(chunk.split(",")[0] + ",")) + 1 == first_line


@pytest.mark.parametrize("encoding", ["utf-16", "cp1252", "utf-8-sig"])
def test_pieces_decode_as_the_whole_file_does(tmp_path, encoding, monkeypatch):
    from connectors import _io

    text = "@article{k,\n  title = {Schrödinger’s café — naïve},\n}\n" * 40
    path = tmp_path / "lib.bib"
    path.write_bytes(text.encode(encoding))
    monkeypatch.setattr(_io, "READ_BYTES", 7)  # cuts multi-byte characters in two
    assert "".join(_io.iter_text(path, 7)) == _io.read_text(path) == text


# --- citation keys: the ones a paper already has, and the library's own style -------------------

def _zotero_paper(**fields) -> Paper:
    return Paper(id="ABCD1234", title="Deep Residual Learning for Image Recognition", authors=["Kaiming He"],
                 year=2016, source="zotero:user/1", entry_type="conferencePaper", fields=fields)


def test_a_better_bibtex_or_zotero_citation_key_is_kept():
    assert bibtex.existing_key(_zotero_paper(citationKey="he2016deep")) == "he2016deep"
    assert bibtex.existing_key(_zotero_paper(extra="tex.note: x\nCitation Key: He_2016_ResNet\n")) == "He_2016_ResNet"
    assert bibtex.existing_key(_zotero_paper()) is None
    text = bibtex.dumps([_zotero_paper(extra="Citation Key: He_2016_ResNet"), _zotero_paper()])
    assert [e["ID"] for e in bibtexparser.loads(text).entries] == ["He_2016_ResNet", "he2016deep"]


@pytest.mark.parametrize("keys, style, built", [
    (["Ho_2020", "Song_2021", "Sohl-Dickstein_2015", "ho2020denoising"], "Author_Year", "He_2016"),
    (["Ho2020", "Song2021a", "Kingma2014"], "AuthorYear", "He2016"),
    (["ho:2020", "song:2021"], "author:year", "he:2016"),
    (["Ho2020Denoising", "Song2021Score"], "AuthorYearWord", "He2016Deep"),
    (["ho2020denoising", "song2021score", "Weird-Key"], "authoryearword", "he2016deep"),
    ([], "authoryearword", "he2016deep"),
])
def test_new_keys_follow_the_library_style(keys, style, built):
    library = [Paper(id=key, title=f"Paper {key}", source="refs.bib", entry_type="article") for key in keys]
    assert bibtex.detect_key_style(library) == style
    paper = Paper(id="icml2026-1", title="Deep Residual Learning", authors=["Kaiming He"], year=2016)
    assert bibtex.citation_keys([paper], style) == [built]


def test_rank_writes_picks_with_the_library_key_style(tmp_path):
    from click.testing import CliRunner

    from recommender.cli import main

    source = bibtex.load(REPO / "examples" / "diffusion-library.bib")
    restyled = [dataclasses.replace(p, id=f"{(p.authors[0].split()[-1] if p.authors else 'Anon').capitalize()}_{p.year}"
                                    f"{'abcdefghijklmnopqrstuvwxyz'[i % 26]}") for i, p in enumerate(source)]
    library = tmp_path / "styled.bib"
    bibtex.dump(restyled, library)
    out = tmp_path / "picks.bib"
    result = CliRunner().invoke(main, ["rank", "-l", str(library), "-n", "5", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Citation keys follow your library's style (Author_Year)." in result.stderr
    keys = [e["ID"] for e in bibtexparser.loads(out.read_text(encoding="utf-8")).entries]
    assert len(keys) == 5 and all(re.fullmatch(r"[A-Z][A-Za-z]+_\d{4}[a-z]?", key) for key in keys), keys
