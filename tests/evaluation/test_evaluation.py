import json
import math

import pytest
from click.testing import CliRunner

import connectors
from recommender import Paper
from recommender.cli import main
from recommender.evaluation.holdout import (
    BASELINE_SCORERS,
    evaluate_methods,
    holdout_tasks,
    rank_ids,
    ranking_metrics,
    score_bm25,
    score_recency_cosine,
)
from tests.conftest import EXAMPLE_LIBRARY, SEEDS, require


def test_ranking_metrics_exact_values():
    metrics = ranking_metrics(["a", "x", "b", "y"] + [f"z{i}" for i in range(30)], {"a", "b", "q"})
    assert metrics["mrr"] == 1.0
    assert metrics["recall@10"] == pytest.approx(2 / 3) and metrics["recall@20"] == pytest.approx(2 / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert metrics["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / ideal)
    assert ranking_metrics(["x", "y", "a"], {"a"})["mrr"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        ranking_metrics(["a"], set())


def test_baselines_prefer_on_topic_papers():
    library = [Paper("l1", title="Diffusion models", abstract="Denoising diffusion models generate images from noise."),
               Paper("l2", title="Score matching", abstract="Score matching trains diffusion models with denoising.")]
    candidates = [Paper("on", title="Faster diffusion", abstract="A fast sampler for denoising diffusion models."),
                  Paper("off", title="Protein folding", abstract="Folding rates of proteins measured in vitro.")]
    for name, scorer in BASELINE_SCORERS.items():
        scores = scorer(library, candidates, seed=0)
        assert scores.shape == (2,)
        if name != "random":
            assert rank_ids(candidates, scores) == ["on", "off"], name
    assert score_bm25(library, candidates)[1] == 0.0


def test_recency_cosine_weighs_recent_papers_more():
    library = [Paper("old", title="Graph neural networks", abstract="Message passing on graphs.", date_added="2019-01-01"),
               Paper("new", title="Diffusion models", abstract="Denoising diffusion generates images.", date_added="2024-01-01")]
    candidates = [Paper("g", title="Graph networks", abstract="Message passing graphs networks."),
                  Paper("d", title="Diffusion", abstract="Denoising diffusion images generation.")]
    scores = score_recency_cosine(library, candidates)
    assert scores[1] > scores[0]


def test_holdout_tasks_hide_library_papers_among_the_collection():
    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(require(SEEDS))
    tasks = list(holdout_tasks(library, collection, holdout=0.2, repeats=3, seed=7))
    assert len(tasks) == 3
    for kept, candidates, hidden in tasks:
        assert len(hidden) == 11 and len(kept) == 43 and len(candidates) == 81
        assert hidden <= {p.id for p in candidates} and not hidden & {p.id for p in kept}
    assert [t[2] for t in tasks] == [t[2] for t in holdout_tasks(library, collection, 0.2, 3, seed=7)]
    with pytest.raises(ValueError, match="holdout"):
        list(holdout_tasks(library, collection, holdout=1.5))


def test_evaluate_methods_litrank_models_beat_random():
    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(require(SEEDS))
    summaries = evaluate_methods(list(holdout_tasks(library, collection, 0.2, 2, seed=0)),
                                 ["hybrid", "learned", "similarity", "random"])
    for model in ("hybrid", "learned", "similarity"):
        assert summaries[model].mean("ndcg@10") > summaries["random"].mean("ndcg@10") + 0.3


def test_evaluate_cli_json_has_every_method_and_metric():
    result = CliRunner().invoke(main, ["evaluate", "--repeats", "2", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["benchmark"] == "library" and "proxy" in payload["measures"]
    assert set(payload["methods"]) == {"hybrid", "learned", "random", "bm25", "tfidf_max", "recency_cosine", "tfidf_svm"}
    for metrics in payload["methods"].values():
        assert set(metrics) == {"ndcg@10", "recall@10", "recall@20", "mrr"}
        assert all(0 <= value <= 1 for value in metrics.values())
    assert payload["repeats"] == 2 and payload["library"] == 54 and payload["collection"] == 70


def test_evaluate_cli_table_and_bad_input():
    result = CliRunner().invoke(main, ["evaluate", "--repeats", "1"])
    assert result.exit_code == 0 and "tfidf_svm" in result.stdout and "±" in result.stdout
    bad = CliRunner().invoke(main, ["evaluate", "--holdout", "1.5"])
    assert bad.exit_code == 2
