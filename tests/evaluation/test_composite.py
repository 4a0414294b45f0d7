"""Composite, researcher-shaped libraries from CSFCube (recommender.evaluation.composite) and
`litrank evaluate --benchmark csfcube-composite`: on the tiny fixture tests/data/csfcube-mini
(synthetic papers, the dataset's layout; `make.py` beside it writes it), and once on the real
dataset when ../shared/data/csfcube is there."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from connectors.files import csfcube
from recommender.cli import main
from recommender.evaluation import composite
from tests.conftest import DATA, SHARED, require

MINI = DATA / "csfcube-mini"
CSFCUBE = SHARED / "data" / "csfcube"
FOLDS = ("fold1_dev", "fold1_test", "fold2_dev", "fold2_test")


@pytest.fixture(scope="module")
def mini():
    return csfcube.load(MINI)


@pytest.fixture(scope="module")
def libraries(mini):
    return {fold: composite.build_libraries(mini, fold, count=8) for fold in FOLDS}


def test_libraries_are_the_same_for_a_seed_and_differ_for_another(mini, libraries):
    assert composite.build_libraries(mini, "fold1_dev", count=8) == libraries["fold1_dev"]
    other = composite.build_libraries(mini, "fold1_dev", count=8, seed=1)
    assert [lib.library for lib in other] != [lib.library for lib in libraries["fold1_dev"]]


def test_sizes_spread_over_the_range_and_topics_come_from_several_queries(libraries):
    assert composite.target_sizes(30) == sorted(composite.target_sizes(30))
    assert composite.target_sizes(30)[0] == 5 and composite.target_sizes(30)[-1] == 20
    for fold, built in libraries.items():
        assert len(built) == 8
        sizes = [lib.size for lib in built]
        assert all(5 <= size <= 20 for size in sizes) and max(sizes) - min(sizes) >= 10, (fold, sizes)
        for lib in built:
            queries = [query for query, _ in lib.query_facets]
            assert len(queries) >= 2 and len(set(queries)) == len(queries)
            assert len({facet for _, facet in lib.query_facets}) >= 2  # facets taken in turn
            assert len(set(lib.library)) == lib.size and set(queries) <= set(lib.library)


def test_a_library_holds_one_fold_only(mini, libraries):
    for fold, built in libraries.items():
        allowed = set(mini.query_facets(fold))
        assert all(set(lib.query_facets) <= allowed and lib.fold == fold for lib in built)
    dev_topics = {pair for lib in libraries["fold1_dev"] for pair in lib.query_facets}
    test_topics = {pair for lib in libraries["fold1_test"] for pair in lib.query_facets}
    assert dev_topics.isdisjoint(test_topics)


def test_own_papers_are_grade_3_candidates_and_some_are_left_to_find(mini, libraries):
    for lib in libraries["fold1_dev"] + libraries["fold1_test"]:
        queries = {query for query, _ in lib.query_facets}
        own = [paper for paper in lib.library if paper not in queries]
        assert own, lib.name
        for paper in own:
            assert any(mini.pool(q, f).get(paper) == 3 for q, f in lib.query_facets)
        for query, facet in lib.query_facets:  # each topic keeps grade-3 candidates in the collection
            assert any(lib.grades.get(paper) == 3 for paper, grade in mini.pool(query, facet).items() if grade == 3)
    assert [composite.own_paper_count(n) for n in range(6)] == [0, 0, 1, 2, 2, 3]


def test_the_collection_is_the_pools_without_the_library_judged_by_the_best_grade(mini, libraries):
    best_from_another_query = 0
    for lib in libraries["fold1_dev"] + libraries["fold1_test"]:
        pools = [mini.pool(q, f) for q, f in lib.query_facets]
        expected = set().union(*pools) - set(lib.library)
        assert set(lib.grades) == expected and not set(lib.library) & set(lib.collection)
        for paper, grade in lib.grades.items():
            assert grade == max(pool.get(paper, 0) for pool in pools)
            judged = [pool[paper] for pool in pools if paper in pool]
            best_from_another_query += 0 in judged and grade > 0
    assert best_from_another_query > 0  # the fixture's pools overlap: the rule is exercised


def test_dense_aggregation_by_hand():
    library = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    candidates = np.array([[2.0, 0.0], [0.0, 3.0]])
    root = 1 / np.sqrt(2)
    assert composite.top_mean_cosine(library, candidates, 1) == pytest.approx([1.0, 1.0])
    assert composite.top_mean_cosine(library, candidates, 2) == pytest.approx([(1 + root) / 2] * 2)
    assert composite.top_mean_cosine(library, candidates, 3) == pytest.approx([(1 + root) / 3] * 2)
    assert composite.top_mean_cosine(library[:1], candidates, 3) == pytest.approx([1.0, 0.0])


class _WordEmbedder:
    """A bag of hashed words: enough for the dense methods' plumbing."""

    model_id = "test-words"

    def embed(self, texts):
        out = np.zeros((len(texts), 64))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word)) % 64] += 1.0
        return out


def test_every_method_runs_on_the_same_libraries(mini, libraries):
    chosen = libraries["fold1_dev"][:3]
    methods = ["random", "tfidf", "hybrid", "embedding", "embedding-top3", "hybrid+embeddings"]
    results = composite.evaluate_composite(mini, chosen, methods, embedder=_WordEmbedder())
    assert set(results) == set(methods)
    for per_library in results.values():
        assert set(per_library) == {lib.name for lib in chosen}
        assert all(0 <= v <= 1 for metrics in per_library.values() for v in metrics.values())
    table = composite.summary(results, chosen)
    assert table["all"]["libraries"] == 3 and sum(table[b]["libraries"] for b in ("5-8", "9-14", "15-20")) == 3
    assert table["all"]["methods"]["tfidf"]["map"] > table["all"]["methods"]["random"]["map"]
    with pytest.raises(ValueError, match="need --embedder"):
        composite.evaluate_composite(mini, chosen, ["embedding"])


def test_the_real_dataset_gives_researcher_shaped_libraries():
    data = csfcube.load(require(CSFCUBE))
    for fold in ("fold1_dev", "fold1_test"):
        built = composite.build_libraries(data, fold)
        shape = composite.describe(built)
        assert shape["libraries"] == 30 and shape["size_min"] == 5 and shape["size_max"] == 20
        assert all(len(lib.query_facets) >= 2 and set(lib.query_facets) <= set(data.query_facets(fold))
                   for lib in built)
        assert all(not set(lib.library) & set(lib.grades) for lib in built)
        assert all(composite.bucket_name(lib.size) for lib in built)
    # TF-IDF on a few small dev libraries: well above a shuffle (a quick sanity check, not a result).
    small = composite.build_libraries(data, "fold1_dev")[:4]
    table = composite.summary(composite.evaluate_composite(data, small, ["random", "tfidf"]), small)["all"]["methods"]
    assert table["tfidf"]["ndcg%20"] > table["random"]["ndcg%20"] + 0.2


def test_the_default_beats_tfidf_on_the_tuning_folds_composite_libraries():
    # The lexical default (no embeddings) against the best TF-IDF cosine over the library, all 30
    # fold1_dev libraries (docs/models-and-quality.md: 0.639 / 0.387 against 0.632 / 0.370).
    data = csfcube.load(require(CSFCUBE))
    built = composite.build_libraries(data, "fold1_dev")
    table = composite.summary(composite.evaluate_composite(data, built, ["tfidf", "hybrid"]), built)["all"]["methods"]
    assert table["hybrid"]["ndcg%20"] > table["tfidf"]["ndcg%20"] and table["hybrid"]["map"] > table["tfidf"]["map"]


def test_the_cli_runs_the_composite_benchmark(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI),
                                  "--methods", "random,tfidf,hybrid", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["benchmark"] == "csfcube-composite" and payload["fold"] == "fold1_test"
    assert set(payload["folds"]) == {"fold1_dev", "fold1_test"}
    test = payload["folds"]["fold1_test"]
    assert test["shape"]["libraries"] == 30 and 5 <= test["shape"]["size_min"] <= test["shape"]["size_max"] <= 20
    assert set(test["composite"]) == {"all", "5-8", "9-14", "15-20"}
    assert set(test["composite"]["all"]["methods"]) == {"random", "tfidf", "hybrid"} == set(payload["methods"])
    assert set(test["single_query"]) == {"random", "tfidf", "hybrid"}
    assert all(name.startswith(("fold1_dev#", "fold1_test#")) for name in payload["libraries"])
    table = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI), "--fold",
                                 "fold2_dev", "--methods", "tfidf", "--limit", "2"])
    assert table.exit_code == 0, table.output
    assert "composite libraries, fold1_dev" in table.stdout and "composite libraries, fold2_dev" in table.stdout
    missing = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(tmp_path)])
    assert missing.exit_code != 0 and "not a CSFCube directory" in missing.output
    unknown = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-composite", "--data", str(MINI),
                                   "--methods", "embedding", "--embedder", "none"])
    assert unknown.exit_code != 0 and "need --embedder" in unknown.output
