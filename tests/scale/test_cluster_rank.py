"""`litrank rank --workers/--scheduler`: the collection partitioned over a cluster, the same ranking."""
from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

import connectors
from recommender import defaults
from recommender.cli import main
from recommender.models.hybrid import HybridModel
from recommender.ranking import Ranker
from recommender.scale.cluster import LocalEngine
from tests.conftest import DATA, EXAMPLE_LIBRARY

COLLECTION = defaults.bundled_collection()


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def collection():
    return connectors.load(COLLECTION) + connectors.load(DATA / "report-collection.jsonl")


def explained(ranking):
    """Picks, scores, reasons and drivers; a reason's similarity (a float32 product, summed in
    another order on the engine) compared within 1e-6."""
    return [(pick.paper.id, pick.rank, round(pick.score, 9),
             [(reason.paper.id, Millionths(reason.similarity), reason.terms) for reason in pick.because],
             [(driver.feature, round(driver.contribution, 9)) for driver in pick.drivers])
            for pick in ranking.recommendations]


class Millionths(float):
    """A float equal to another within 1e-6."""

    def __eq__(self, other):
        return abs(float(self) - float(other)) <= 1e-6

    __hash__ = float.__hash__


def test_partitioned_ranking_equals_the_local_one_with_feedback_diversity_and_explanations(collection):
    library = connectors.load(EXAMPLE_LIBRARY)
    # A liked candidate joins the library, two disliked ones stay candidates but never feedback.
    judgements = {collection[3].id: 1, collection[5].id: -1, collection[80].id: -1}
    local = Ranker(HybridModel(), diversity=0.15).rank(library, collection, top=15, explain_terms=5,
                                                      judgements=judgements)
    cut = Ranker(HybridModel(), diversity=0.15, engine=LocalEngine()).rank(library, collection, top=15,
                                                                           explain_terms=5, judgements=judgements)
    assert explained(cut) == explained(local)
    in_score_order = Ranker(HybridModel()).rank(library, collection, top=15, judgements=judgements)
    assert [p.paper.id for p in local.recommendations] != [p.paper.id for p in in_score_order.recommendations]
    assert any(pick.drivers for pick in local.recommendations) and local.recommendations[0].because[0].terms
    np.testing.assert_allclose(cut.scores, local.scores, rtol=0, atol=1e-12)
    assert cut.model == local.model and cut.n_candidates == local.n_candidates
    assert [p.id for p in cut.liked] == [collection[3].id] and len(cut.disliked) == 2


def test_in_score_order_no_topic_space_is_fitted_on_the_cluster(collection, monkeypatch):
    import recommender.scale.cluster_ranking as cluster_ranking

    def refuse(*args):
        raise AssertionError("the topic space was fitted though nothing read it")

    monkeypatch.setattr(cluster_ranking, "_fit_lsa", refuse)
    library = connectors.load(EXAMPLE_LIBRARY)
    cut = Ranker(HybridModel(), engine=LocalEngine()).rank(library, collection, top=10, explain_terms=3)
    local = Ranker(HybridModel()).rank(library, collection, top=10, explain_terms=3)
    assert explained(cut) == explained(local)
    with pytest.raises(AssertionError, match="topic space was fitted"):
        Ranker(HybridModel(), diversity=0.2, engine=LocalEngine()).rank(library, collection, top=10)


def test_a_collection_index_is_scored_partitioned_too(collection):
    library = connectors.load(DATA / "report-collection.jsonl")[:4]
    index = HybridModel().index_builder().build(collection)
    local = Ranker(HybridModel()).rank(library, index, top=10, explain_terms=3)
    cut = Ranker(HybridModel(), engine=LocalEngine()).rank(library, index, top=10, explain_terms=3)
    assert explained(cut) == explained(local)


def test_embeddings_give_the_same_ranking_partitioned(collection):
    pytest.importorskip("sentence_transformers", reason="dense embeddings need the extra: pip install 'litrank[embeddings]'")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from recommender.models.embeddings import SentenceEmbedder

    library = connectors.load(EXAMPLE_LIBRARY)[:10]
    local = Ranker(HybridModel(embedder=SentenceEmbedder())).rank(library, collection, top=10, explain_terms=3)
    cut = Ranker(HybridModel(embedder=SentenceEmbedder()), engine=LocalEngine()).rank(library, collection, top=10,
                                                                                    explain_terms=3)
    assert "embeddings" in cut.model and cut.model == local.model
    assert explained(cut) == explained(local)


def test_rank_on_a_local_dask_cluster_prints_the_local_ranking(tmp_path):
    pytest.importorskip("distributed", reason="the cluster path needs the extra: pip install 'litrank[dask]'")
    common = ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(COLLECTION), "-c", str(DATA / "report-collection.jsonl"),
              "--embedder", "none", "--no-feedback", "-n", "12", "--explain"]
    local = run(*common)
    cluster = run(*common, "--workers", "2")
    assert local.exit_code == 0 and cluster.exit_code == 0, cluster.stderr
    assert cluster.stdout == local.stdout and "Top 12 of" in local.stdout
    out_local, out_cluster = tmp_path / "local.csv", tmp_path / "cluster.csv"
    common.remove("--explain")
    assert run(*common, "-o", str(out_local)).exit_code == 0
    assert run(*common, "--workers", "2", "-o", str(out_cluster)).exit_code == 0
    assert out_cluster.read_text(encoding="utf-8") == out_local.read_text(encoding="utf-8")


@pytest.mark.parametrize("arguments, message", [
    (["--scheduler", "tcp://127.0.0.1:1"], "cannot reach the Dask scheduler at tcp://127.0.0.1:1"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not both"),
    (["--workers", "2", "-o", "{tmp}/picks.html"], "HTML page"),
    (["--workers", "2", "--model", "similarity"], "hybrid model"),
])
def test_cluster_usage_errors_exit_2_with_a_clear_message(tmp_path, arguments, message):
    pytest.importorskip("distributed", reason="the cluster path needs the extra: pip install 'litrank[dask]'")
    arguments = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    result = run("rank", "-c", str(COLLECTION), "--embedder", "none", *arguments)
    assert result.exit_code == 2
    assert message in result.stderr


def test_without_the_dask_extra_the_cluster_options_say_what_to_install(monkeypatch):
    from recommender.scale import cluster

    monkeypatch.setattr(cluster, "dask_available", lambda: False)
    result = run("rank", "-c", str(COLLECTION), "--embedder", "none", "--workers", "2")
    assert result.exit_code == 2
    assert "pip install 'litrank[dask]'" in result.stderr


def test_local_workers_keep_numpy_temporaries_on_the_heap_and_run_no_profiler():
    pytest.importorskip("distributed", reason="the cluster path needs the extra: pip install 'litrank[dask]'")
    import os

    from recommender.scale.cluster import MMAP_THRESHOLD, engine

    def settings():
        import dask

        return (os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_ARENA_MAX"),
                dask.config.get("distributed.worker.profile.enabled"))

    with engine(workers=1) as runner:
        (found,) = runner.client.run(settings).values()
        assert found == (MMAP_THRESHOLD, "1", False)
        assert runner.client.run_on_scheduler(lambda dask_scheduler: "stealing" in dask_scheduler.extensions) is False
        # A step's result comes back as the function returned it (the heap is trimmed after it).
        (state,) = runner.step(lambda item, state, extra: {"out": item * 2 + extra}, runner.put([20]), [None], 2)
        assert runner.collect([state], "out") == [42]
