"""litrank affinity: profiles, score files, equality with `rank`, and the Dask cluster path."""
from __future__ import annotations

import csv
import dataclasses
import os
import shutil
import sys

import pytest
from click.testing import CliRunner
from sklearn.base import clone

import connectors
from connectors.profiles import load_profiles
from recommender import defaults
from recommender.cli import main
from recommender.models.hybrid import HybridModel
from recommender.ranking import Ranker
from tests.conftest import DATA, EXAMPLE_LIBRARY
from tests.fakes.zotero_fixtures import GROUP_LIBRARY, add_item, create_schema

COLLECTION = defaults.bundled_collection()  # the 70 ICML 2026 papers shipped with litrank


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def profiles_dir(tmp_path):
    """alice: the example library (.bib); bob: AISTATS diffusion papers (.jsonl); carol: a folder
    with three papers that are in the collection itself."""
    directory = tmp_path / "reviewers"
    directory.mkdir()
    shutil.copy(EXAMPLE_LIBRARY, directory / "alice.bib")
    shutil.copy(DATA / "report-collection.jsonl", directory / "bob.jsonl")
    (directory / "carol").mkdir()
    connectors.dump(connectors.load(COLLECTION)[:3], directory / "carol" / "mine.jsonl")
    (directory / "notes.md").write_text("not a library", encoding="utf-8")
    return directory


def read_csv(path, header=True):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:] if header else rows


def scores_by_profile(rows):
    result: dict[str, dict[str, float]] = {}
    for profile, paper, _, score in rows:
        result.setdefault(profile, {})[paper] = float(score)
    return result


def rank_scores(library, collection) -> dict[str, float]:
    """What `litrank rank --no-feedback --embedder none` scores each candidate (the CLI's own call)."""
    ranking = Ranker(HybridModel(), diversity=0).rank(library, collection, judgements={})
    return {paper.id: float(score) for paper, score in zip(ranking.candidates, ranking.scores)}


def test_profiles_are_the_files_and_folders_of_the_directory(profiles_dir):
    profiles = load_profiles(profiles_dir)
    assert list(profiles) == ["alice", "bob", "carol"]
    assert len(profiles["alice"]) == len([p for p in connectors.load(EXAMPLE_LIBRARY) if p.text.strip()])
    assert len(profiles["bob"]) == 14 and len(profiles["carol"]) == 3


def test_each_profile_scores_every_paper_as_rank_scores_its_library(profiles_dir, tmp_path):
    out = tmp_path / "affinity.csv"
    result = run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert "Wrote" in result.stderr and "3 profiles" in result.stderr
    header, rows = read_csv(out)
    assert header == ["profile_id", "paper_id", "rank", "score"]
    scores = scores_by_profile(rows)
    collection = connectors.load(COLLECTION)
    for name, library in (("alice", connectors.load(EXAMPLE_LIBRARY)), ("bob", connectors.load(DATA / "report-collection.jsonl"))):
        expected = rank_scores(library, collection)
        assert set(scores[name]) == set(expected) and len(expected) == 70
        # The dense products are float32 on both paths, of other shapes, which the BLAS sums in
        # another order by shape and version (1e-7 of a cosine; a few 1e-6 of scores up to ~10,
        # standardised and weighted more for a title): close, not bit for bit.
        assert max(abs(scores[name][paper] - expected[paper]) for paper in expected) < 1e-4
    # carol's own papers are in the collection: not hers to score, as `rank` skips them.
    own = {paper.id for paper in collection[:3]}
    assert len(scores["carol"]) == 67 and not own & set(scores["carol"])
    ranks = [int(rank) for profile, _, rank, _ in rows if profile == "alice"]
    assert ranks == list(range(1, 71))
    alice = [float(score) for profile, _, _, score in rows if profile == "alice"]
    assert alice == sorted(alice, reverse=True)


@pytest.mark.parametrize("settings", [{"column_scale": "own"}, {"aggregation": "auto"}, {"aggregation": 4},
                                      {"feedback_docs": 0}, {"column_prior": 0}, {"column_prior": 1e6}])
def test_the_partitioned_scores_follow_the_models_scaling_and_depth(profiles_dir, settings):
    """The library-paper scaling, aggregation depth and pseudo-relevance feedback the model is
    given are the partitioned path's too (the default's are checked against `rank` above)."""
    from recommender.scale.affinity import AffinityScorer
    from recommender.scale.cluster import LocalEngine

    model = HybridModel(**settings)
    collection = connectors.load(COLLECTION)
    index = model.index_builder().build(collection)
    got = {r.profile_id: dict(zip(r.rows, r.scores))
           for r in AffinityScorer(model).score(index, load_profiles(profiles_dir), LocalEngine(), 3)}
    library = connectors.load(EXAMPLE_LIBRARY)
    fitted = HybridModel(**settings).fit(library, collection)
    # The example library's 54 papers on two topics: a topics depth (the default) of 6.
    assert fitted.aggregation_depth_ == {"topics": 6, 4: 4, "auto": 2}[settings.get("aggregation", "topics")]
    expected = dict(enumerate(fitted.scores_))
    assert got["alice"].keys() == expected.keys()
    assert max(abs(got["alice"][row] - expected[row]) for row in expected) < 5e-7
    default = dict(enumerate(HybridModel().fit(library, collection).scores_))
    assert max(abs(got["alice"][row] - default[row]) for row in expected) > 1e-3  # the setting matters here


@pytest.mark.parametrize("dense_depth", [1, None, 3])
def test_the_partitioned_scores_aggregate_the_dense_channel_as_the_model_does(profiles_dir, dense_depth):
    """With the bundled static embedder: the dense channel by its own best library papers (the
    default) or summed with the lexical one per paper first, as the model is told; also for a
    library where every other paper is a title without its abstract (dave), whose parts the
    model scales by their trust in a short text."""
    from recommender.models.static_embeddings import StaticEmbedder
    from recommender.scale.affinity import AffinityScorer
    from recommender.scale.cluster import LocalEngine

    library = connectors.load(EXAMPLE_LIBRARY)
    titles_too = [dataclasses.replace(p, abstract="") if i % 2 else p for i, p in enumerate(library)]
    (profiles_dir.parent / "titles").mkdir()
    connectors.dump(titles_too, profiles_dir.parent / "titles" / "dave.jsonl")
    model = HybridModel(embedder=StaticEmbedder(), dense_depth=dense_depth)
    assert model.short_text_trust(titles_too).min() < 1 == model.short_text_trust(library).min()
    collection = connectors.load(COLLECTION)
    index = model.index_builder().build(collection)
    got = {r.profile_id: dict(zip(r.rows, r.scores))
           for directory in (profiles_dir, profiles_dir.parent / "titles")
           for r in AffinityScorer(model).score(index, load_profiles(directory), LocalEngine(), 3)}
    for profile, papers in (("alice", library), ("dave", titles_too)):
        expected = dict(enumerate(clone(model).fit(papers, collection).scores_))
        assert got[profile].keys() == expected.keys()
        # The dense cosines are float32 products, rounded as the BLAS kernel for each shape sums
        # (1e-7 of a cosine, which the standardising scales up): close, not bit for bit.
        assert max(abs(got[profile][row] - expected[row]) for row in expected) < 1e-4, profile


def test_top_k_keeps_each_profiles_best(profiles_dir, tmp_path):
    run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-o", str(tmp_path / "all.csv"))
    result = run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-n", "5",
                 "-o", str(tmp_path / "top.csv"))
    assert result.exit_code == 0, result.stderr
    _, everything = read_csv(tmp_path / "all.csv")
    _, top = read_csv(tmp_path / "top.csv")
    assert len(top) == 15
    for profile in ("alice", "bob", "carol"):
        best = [row for row in everything if row[0] == profile][:5]
        assert [row for row in top if row[0] == profile] == best
        assert [int(row[2]) for row in best] == [1, 2, 3, 4, 5]


def test_openreview_format_is_submission_reviewer_score_without_header(profiles_dir, tmp_path):
    out = tmp_path / "scores.csv"
    result = run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-o", str(out),
                 "--format", "openreview", "-n", "4")
    assert result.exit_code == 0, result.stderr
    _, rows = read_csv(out, header=False)
    _, native = (run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-n", "4", "-o",
                     str(tmp_path / "native.csv")), read_csv(tmp_path / "native.csv"))[1]
    assert len(rows) == 12 and all(len(row) == 3 for row in rows)
    collection_ids = {paper.id for paper in connectors.load(COLLECTION)}
    assert all(submission in collection_ids and reviewer in {"alice", "bob", "carol"} for submission, reviewer, _ in rows)
    assert [(s, r, float(v)) for s, r, v in rows] == [(p, r, float(v)) for r, p, _, v in native]


def test_parquet_holds_the_csv_rows(profiles_dir, tmp_path):
    parquet = pytest.importorskip("pyarrow.parquet", reason="parquet output needs the extra: pip install 'litrank[parquet]'")
    run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-n", "3", "-o", str(tmp_path / "a.csv"))
    result = run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-n", "3",
                 "-o", str(tmp_path / "a.parquet"))
    assert result.exit_code == 0, result.stderr
    table = parquet.read_table(tmp_path / "a.parquet").to_pylist()
    _, rows = read_csv(tmp_path / "a.csv")
    assert [(r["profile_id"], r["paper_id"], r["rank"], r["score"]) for r in table] == \
        [(p, i, int(k), float(s)) for p, i, k, s in rows]


def test_parquet_without_pyarrow_is_a_clear_error(profiles_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what a missing package does to `import pyarrow`
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-o", str(tmp_path / "a.parquet"))
    assert result.exit_code == 2
    assert "pip install 'litrank[parquet]'" in result.stderr and not (tmp_path / "a.parquet").exists()


@pytest.mark.parametrize("arguments, message", [
    (["--profiles", "{tmp}/missing"], "takes a directory"),
    (["--profiles", "{tmp}/empty"], "no profiles here"),
    (["--profiles", "{tmp}/blank"], "profile 'nothing' has no paper"),
    (["--profiles", "{profiles}", "-o", "{tmp}/a.txt"], "cannot tell the format"),
    (["--profiles", "{profiles}", "--model", "learned"], "use the hybrid model"),
    (["--profiles", "{profiles}", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
])
def test_bad_input_exits_2_with_a_clear_message(profiles_dir, tmp_path, arguments, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "blank").mkdir()
    (tmp_path / "blank" / "nothing.bib").write_text("% a library file without entries\n", encoding="utf-8")
    arguments = [a.format(tmp=tmp_path, profiles=profiles_dir) for a in arguments]
    if "-o" not in arguments:
        arguments += ["-o", str(tmp_path / "out.csv")]
    result = run("affinity", "-c", str(COLLECTION), *arguments)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (tmp_path / "out.csv").exists()


def test_zotero_group_profiles_are_the_members_collections(tmp_path, monkeypatch):
    """A lab's group library with one collection per member under Members/."""
    database = tmp_path / "zotero.sqlite"
    connection = create_schema(database)
    connection.execute("BEGIN")
    connection.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (?, 'group', 1, 1)",
                       (GROUP_LIBRARY,))
    connection.execute("INSERT INTO groups VALUES (4711, ?, 'Lab', '', 3)", (GROUP_LIBRARY,))
    for number, (name, parent) in enumerate([("Members", None), ("Ada", 1), ("Grace", 1), ("Shared", None)], start=1):
        connection.execute("INSERT INTO collections (collectionID, collectionName, parentCollectionID, libraryID, key)"
                           " VALUES (?, ?, ?, ?, ?)", (number, name, parent, GROUP_LIBRARY, f"COLLGRP{number}"))
    members = {"Members/Ada": connectors.load(EXAMPLE_LIBRARY)[:4],
               "Members/Grace": connectors.load(DATA / "report-collection.jsonl")[:3]}
    for path, papers in members.items():
        for number, paper in enumerate(papers):
            first, _, last = paper.authors[0].rpartition(" ")
            add_item(connection, f"{path[8:10].upper()}{number:06d}", "journalArticle",
                     {"title": paper.title, "abstractNote": paper.abstract}, creators=[(first, last)],
                     collections=[path], library=GROUP_LIBRARY)
    connection.execute("COMMIT")
    connection.close()
    monkeypatch.setenv("LITRANK_ZOTERO_DIR", str(tmp_path))
    profiles = load_profiles("zotero:local?library=group:Lab&collection=Members")
    assert {name: len(papers) for name, papers in profiles.items()} == {"Ada": 4, "Grace": 3}
    assert list(load_profiles("zotero:local?library=group:Lab")) == ["Members"]
    out = tmp_path / "lab.csv"
    result = run("affinity", "--profiles", "zotero:local?library=group:Lab&collection=Members",
                 "--zotero-dir", str(tmp_path), "-c", str(COLLECTION), "-n", "2", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    _, rows = read_csv(out)
    assert [(row[0], row[2]) for row in rows] == [("Ada", "1"), ("Ada", "2"), ("Grace", "1"), ("Grace", "2")]


def test_a_local_dask_cluster_gives_the_local_scores(profiles_dir, tmp_path):
    pytest.importorskip("distributed", reason="the cluster path needs the extra: pip install 'litrank[dask]'")
    local, cluster = tmp_path / "local.csv", tmp_path / "cluster.csv"
    assert run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-o", str(local)).exit_code == 0
    result = run("affinity", "--profiles", str(profiles_dir), "-c", str(COLLECTION), "-o", str(cluster),
                 "--workers", "2", "--partitions", "3")
    assert result.exit_code == 0, result.stderr
    assert "local Dask cluster of 2 workers" in result.stderr
    expected, got = scores_by_profile(read_csv(local)[1]), scores_by_profile(read_csv(cluster)[1])
    assert {name: set(papers) for name, papers in got.items()} == {name: set(papers) for name, papers in expected.items()}
    assert max(abs(got[name][paper] - expected[name][paper]) for name in expected for paper in expected[name]) < 1e-9


def test_partitions_in_this_process_give_the_same_scores(profiles_dir):
    """The partitioned reduce (moments, feedback top-k, centroids) is exact for any cut."""
    from recommender.scale.affinity import AffinityScorer
    from recommender.scale.cluster import LocalEngine

    model = HybridModel()
    index = model.index_builder().build(connectors.load(COLLECTION))
    profiles = load_profiles(profiles_dir)
    whole = {r.profile_id: dict(zip(r.rows, r.scores)) for r in AffinityScorer(model).score(index, profiles, LocalEngine())}
    for parts in (2, 7, 70):
        cut = {r.profile_id: dict(zip(r.rows, r.scores))
               for r in AffinityScorer(model, column_budget=20).score(index, profiles, LocalEngine(), parts)}
        assert cut.keys() == whole.keys()
        for name in whole:
            assert cut[name].keys() == whole[name].keys()
            assert max(abs(cut[name][row] - whole[name][row]) for row in whole[name]) < 1e-9


def test_embeddings_are_computed_once_for_papers_several_profiles_share(tmp_path):
    pytest.importorskip("sentence_transformers", reason="dense embeddings need the extra: pip install 'litrank[embeddings]'")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from recommender.models.embeddings import cache_summary

    directory = tmp_path / "profiles"
    directory.mkdir()
    shared = connectors.load(DATA / "report-collection.jsonl")
    connectors.dump(shared[:6], directory / "ann.jsonl")
    connectors.dump(shared[3:9], directory / "ben.jsonl")  # three papers in both profiles
    collection = connectors.load(COLLECTION)
    result = run("affinity", "--profiles", str(directory), "-c", str(COLLECTION), "--embedder", "all-MiniLM-L6-v2",
                 "-n", "3", "-o", str(tmp_path / "a.csv"))
    assert result.exit_code == 0, result.stderr
    (summary,) = cache_summary()
    assert summary["vectors"] == len({paper.text for paper in collection + shared[:9]})


def test_with_embeddings_profiles_score_as_rank_does_title_only_papers_included(tmp_path):
    """Each library paper weighs the dense signal by its length (a title alone leans on it
    more): the partitioned scoring reads the same per-paper weights as `rank`."""
    pytest.importorskip("sentence_transformers", reason="dense embeddings need the extra: pip install 'litrank[embeddings]'")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from recommender import Paper

    directory = tmp_path / "profiles"
    directory.mkdir()
    dana = connectors.load(DATA / "report-collection.jsonl")[:4] + [
        Paper(id="dana-title", title="Masked diffusion language models for text generation")]
    connectors.dump(dana, directory / "dana.jsonl")
    connectors.dump(connectors.load(DATA / "report-collection.jsonl")[4:9], directory / "eli.jsonl")
    out = tmp_path / "a.csv"
    result = run("affinity", "--profiles", str(directory), "-c", str(COLLECTION), "--embedder", "all-MiniLM-L6-v2",
                 "-o", str(out))
    assert result.exit_code == 0, result.stderr
    scores = scores_by_profile(read_csv(out)[1])
    from recommender.models.embeddings import SentenceEmbedder

    model = HybridModel(embedder=SentenceEmbedder("all-MiniLM-L6-v2"))
    assert model.dense_weights(dana)[-1] > model.dense_weight  # the title alone: 8 words
    collection = connectors.load(COLLECTION)
    for name, library in (("dana", connectors.load(directory / "dana.jsonl")),
                          ("eli", connectors.load(directory / "eli.jsonl"))):
        ranking = Ranker(model, diversity=0).rank(library, collection, judgements={})
        expected = {paper.id: float(score) for paper, score in zip(ranking.candidates, ranking.scores)}
        assert set(scores[name]) == set(expected)
        # The dense products are float32 on both paths, of other shapes, which the BLAS sums in
        # another order by shape and version (1e-7 of a cosine; a few 1e-6 of scores up to ~10,
        # standardised and weighted more for a title): close, not bit for bit.
        assert max(abs(scores[name][paper] - expected[paper]) for paper in expected) < 1e-4
