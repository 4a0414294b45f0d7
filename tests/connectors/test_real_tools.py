"""What real tools write, read whole: keyless BibTeX (Mendeley, EndNote), empty fields, BibLaTeX
data annotations, .bibtex/.biblatex files; and papers merged only on identity, never silently."""
from __future__ import annotations

import subprocess
import sys

import pytest

import connectors
from connectors import bibtex
from recommender.paper import IdentityIndex, Paper, deduplicate
from tests.conftest import DATA, REPO

TOOLS = DATA / "real-tools"


def litrank(*arguments: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recommender", *arguments], capture_output=True, text=True,
                          cwd=cwd, check=False, timeout=300)


def test_keyless_entries_as_mendeley_and_endnote_write_them_are_read(caplog):
    mendeley = connectors.load(TOOLS / "mendeley-keyless.bib")
    endnote = connectors.load(TOOLS / "endnote-keyless.bib")
    assert [p.title for p in mendeley] == ["Denoising Diffusion Probabilistic Models",
                                           "Generative Modeling by Estimating Gradients of the Data Distribution"]
    assert [p.title for p in endnote] == ["Attention is all you need", "Auto-Encoding Variational Bayes"]
    assert mendeley[0].arxiv_id == "2006.11239" and mendeley[0].authors[0] == "Jonathan Ho"
    ids = [p.id for p in mendeley + endnote]
    assert len(set(ids)) == 4 and all(i.startswith("keyless-") for i in ids)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    # The same paper gets the same id wherever it is read; the export makes real keys.
    assert [p.id for p in connectors.load(TOOLS / "mendeley-keyless.bib")] == ids[:2]
    written = bibtex.dumps(mendeley)
    assert "@article{ho2020denoising," in written and "keyless" not in written and "litrank" not in written


def test_an_empty_field_between_commas_loses_nothing():
    report, after = connectors.load(TOOLS / "empty-field.bib")
    assert (report.id, report.title, report.fields["number"], report.venue) == (
        "TBD", "Design of the Second Pilot Test Environment", "2PTE3", "Research Institute")
    assert after.id == "next2021" and after.authors == ["Maja Carlsson"]


def test_biblatex_data_annotations_are_kept_and_written_back():
    path = TOOLS / "biblatex-annotations.biblatex"
    assert connectors.detect_format(path) == "bibtex"
    first, second = connectors.load(path)
    assert first.id == "ho2020denoising" and first.authors == ["Jonathan Ho", "Ajay Jain", "Pieter Abbeel"]
    assert first.fields["author+an"] == '1=highlight; 3="corresponding"' and first.fields["title+an:role"] == "=main"
    assert second.id == "9.8:11" and second.arxiv_id == "2011.13456"
    assert second.fields["author+an:affiliation"] == '1="Stanford"'
    written = bibtex.dumps([first, second])
    assert "author+an = {1=highlight; 3=\"corresponding\"}" in written and "title+an:role = {=main}" in written
    again = bibtex.loads(written)
    assert [paper.fields.get("author+an") for paper in again] == [first.fields["author+an"], None]


@pytest.mark.parametrize("suffix", [".bibtex", ".biblatex", ".bib.gz"])
def test_bibtex_is_read_under_every_name_it_goes_by(tmp_path, suffix):
    import gzip

    source = (TOOLS / "empty-field.bib").read_bytes()
    path = tmp_path / f"refs{suffix}"
    path.write_bytes(gzip.compress(source) if suffix.endswith(".gz") else source)
    assert [p.id for p in connectors.load(path)] == ["TBD", "next2021"]


def test_an_unknown_extension_names_the_way_out(tmp_path):
    path = tmp_path / "refs.bibliography"
    path.write_bytes((TOOLS / "empty-field.bib").read_bytes())
    with pytest.raises(connectors.SourceError, match="--library-format bibtex"):
        connectors.load(path)
    assert [p.id for p in connectors.load(path, "bibtex")] == ["TBD", "next2021"]


def test_an_entry_that_really_cannot_be_read_is_named_by_key_and_line(tmp_path, caplog):
    path = tmp_path / "broken.bib"
    path.write_text((TOOLS / "empty-field.bib").read_text() + '\n@article{broken2020,\n  title = {Unclosed,\n'
                    '  year = 2020\n\n@misc{last, title = {The last}}\n', encoding="utf-8")
    papers = connectors.load(path)
    assert [p.id for p in papers] == ["TBD", "next2021", "last"]
    assert any("broken.bib:17" in r.getMessage() and "'broken2020'" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------ merging papers


def test_papers_sharing_only_an_abstract_stay_distinct():
    five = connectors.load(TOOLS / "shared-blurb.jsonl")
    assert len(five) == 5 and len({p.abstract for p in five}) == 1
    assert len(list(deduplicate(five))) == 5
    chapters = connectors.load(TOOLS / "jabref-book-chapters.bib")
    assert len(chapters) == 20 and len(list(deduplicate(chapters))) == 20
    # An untitled abstract (an abstract list's) is still the same paper as its titled record.
    untitled = Paper(id="u", title="Stochastic...", title_derived=True, abstract=five[0].abstract)
    assert IdentityIndex([five[0]]).find(untitled) is five[0]
    assert IdentityIndex([untitled]).find(five[1]) is untitled


def test_five_papers_with_one_blurb_rank_as_five():
    result = litrank("rank", "-c", str(TOOLS / "shared-blurb.jsonl"), "-n", "0", "-f", "jsonl", "--embedder", "none")
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 5
    assert "merged" not in result.stderr.replace("icml2026", "")  # nothing of the collection's was merged


def test_merges_are_counted_with_their_reasons_and_listed_with_v():
    plain = litrank("rank", "-l", str(TOOLS / "duplicates.bib"), "-n", "1", "--embedder", "none")
    assert plain.returncode == 0
    line = "duplicates.bib: 2 duplicates merged (same DOI: 1, same title and first author: 1) (-v lists them)."
    assert line in plain.stderr and "warning" not in plain.stderr.split(line)[0].splitlines()[-1]
    assert "ranked against 3 papers" in plain.stdout.replace("\n", " ")
    verbose = litrank("-v", "rank", "-l", str(TOOLS / "duplicates.bib"), "-n", "1", "--embedder", "none")
    assert "'ho2020ddpm_arxiv' (Denoising diffusion probabilistic models (preprint)) is 'ho2020ddpm'" in verbose.stderr
    assert "'song2021scorebased'" in verbose.stderr and "same title and first author" in verbose.stderr
    quiet = litrank("-q", "rank", "-l", str(TOOLS / "duplicates.bib"), "-n", "1", "--embedder", "none")
    assert "merged" not in quiet.stderr


def test_a_library_unrelated_to_the_collection_is_warned_about():
    unrelated = litrank("rank", "-l", str(DATA / "unrelated-library.jsonl"), "-n", "3", "--embedder", "none")
    assert unrelated.returncode == 0
    assert "warning: your library shares little with this collection" in unrelated.stderr
    related = litrank("rank", "-n", "3", "--embedder", "none")
    assert "shares little" not in related.stderr
