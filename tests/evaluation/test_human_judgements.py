"""CSFCube: the connector (connectors.files.csfcube), the protocol (recommender.evaluation.human_judgements) and
`litrank evaluate --benchmark csfcube`, on the real dataset in ../shared/data/csfcube."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from connectors import SourceError
from connectors.files import csfcube
from recommender.cli import main
from recommender.defaults import DEFAULT_DIVERSITY
from recommender.evaluation.human_judgements import (
    average_precision,
    evaluate_csfcube,
    evaluate_delivered,
    ndcg_at_share,
    summary,
)
from recommender.models.hybrid import HybridModel
from tests.conftest import SHARED, require

CSFCUBE = SHARED / "data" / "csfcube"


@pytest.fixture(scope="module")
def data():
    return csfcube.load(require(CSFCUBE))


@pytest.fixture(scope="module")
def lexical_results(data):
    return evaluate_csfcube(data, ["random", "bm25", "tfidf", "specter", "learned", "hybrid"], data.query_facets())


def test_metrics_by_hand():
    ranked = list("abcdefghij")
    grades = {"a": 0, "b": 3, "c": 2, "d": 1, "e": 0, "f": 0, "g": 0, "h": 0, "i": 0, "j": 2}
    # Cut at int(0.2 * 10) = 2: DCG = 0/log2(2) + 3/log2(3); ideal = 3/log2(2) + 2/log2(3).
    assert ndcg_at_share(ranked, grades) == pytest.approx((3 / 1.5849625) / (3 + 2 / 1.5849625))
    # Relevant (grade >= 2): b at 2, c at 3, j at 10.
    assert average_precision(ranked, grades) == pytest.approx((1 / 2 + 2 / 3 + 3 / 10) / 3)
    assert average_precision(ranked, {"a": 1}) == 0.0 and ndcg_at_share(ranked, {"a": 0}) == 0.0
    assert ndcg_at_share(["b", "c", "j"] + [x for x in ranked if x not in "bcj"], grades) == pytest.approx(1.0)


def test_the_dataset_loads_with_its_folds(data):
    assert len(data.papers) == 4205
    assert len(data.query_facets()) == 50
    assert len(data.query_facets("fold1_dev")) == 24 and len(data.query_facets("fold1_test")) == 26
    assert set(data.query_facets("fold1_dev")).isdisjoint(data.query_facets("fold1_test"))
    query, facet = data.query_facets("fold1_test")[0]
    assert query not in data.pool(query, facet) and all(0 <= g <= 3 for g in data.pool(query, facet).values())
    with pytest.raises(SourceError, match="no fold 'fold9'"):
        data.query_facets("fold9")


def test_bad_directories_are_named(tmp_path):
    with pytest.raises(SourceError, match="no CSFCube data here"):
        csfcube.load(tmp_path / "missing")
    with pytest.raises(SourceError, match=r"missing papers.jsonl.gz, qrels.json, splits.json"):
        csfcube.load(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(require(CSFCUBE), copy)
    (copy / "qrels.json").chmod(0o644)
    (copy / "qrels.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SourceError, match="qrels.json: not valid JSON"):
        csfcube.load(copy)


def test_the_released_specter_rankings_reproduce_the_published_figures(lexical_results, data):
    # The dataset README: SPECTER's released rankings, all 50 query-facets: NDCG%20 0.538, MAP 0.342.
    overall = summary(lexical_results, data.query_facets())["specter"]["all"]
    assert overall["ndcg%20"] == pytest.approx(0.538, abs=5e-4) and overall["map"] == pytest.approx(0.342, abs=5e-4)


def test_the_default_model_beats_every_reference_on_the_test_fold(lexical_results, data):
    test = summary(lexical_results, data.query_facets("fold1_test"))
    hybrid = test["hybrid"]
    assert hybrid["all"]["ndcg%20"] >= 0.58
    for reference in ("tfidf", "bm25", "specter", "learned"):
        assert hybrid["all"]["ndcg%20"] > test[reference]["all"]["ndcg%20"] + 0.03
        assert hybrid["all"]["map"] > test[reference]["all"]["map"] + 0.02
    for facet in ("background", "method", "result"):  # never below plain TF-IDF on any facet
        assert hybrid[facet]["ndcg%20"] >= test["tfidf"][facet]["ndcg%20"]
        assert hybrid[facet]["map"] >= test["tfidf"][facet]["map"]
    assert test["random"]["all"]["ndcg%20"] < 0.3


def test_what_rank_delivers_by_default_is_what_the_evaluation_reports(lexical_results, data):
    dev = data.query_facets("fold1_dev")
    delivered = evaluate_delivered(data, dev, HybridModel, DEFAULT_DIVERSITY)
    assert summary({"hybrid": delivered}, dev) == summary({"hybrid": lexical_results["hybrid"]}, dev)
    # The diversity re-ordering moves papers: chosen on fold1_dev, where it lowers MAP.
    diverse = summary({"hybrid": evaluate_delivered(data, dev, HybridModel, 0.15)}, dev)["hybrid"]["all"]
    plain = summary(lexical_results, dev)["hybrid"]["all"]
    assert diverse["map"] < plain["map"] - 0.005 and diverse["ndcg%20"] < plain["ndcg%20"]


def test_cli_json_reports_every_method_per_facet_and_fold(lexical_results, data):
    result = CliRunner().invoke(main, ["evaluate", "--benchmark", "csfcube", "--data", str(CSFCUBE),
                                       "--methods", "random,tfidf,specter,hybrid", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["benchmark"] == "csfcube" and payload["fold"] == "fold1_test" and payload["query_facets"] == 26
    assert set(payload["methods"]) == {"random", "tfidf", "specter", "hybrid"}
    for values in payload["methods"].values():
        assert set(values) == {"all", "background", "method", "result", "fold"} and values["fold"] == "fold1_test"
        assert set(values["all"]) == {"ndcg%20", "map"}
    assert set(payload["folds"]) == {"fold1_dev", "fold1_test", "all"} and payload["folds"]["all"]["query_facets"] == 50
    expected = summary(lexical_results, data.query_facets("fold1_test"))["hybrid"]
    assert payload["methods"]["hybrid"]["all"] == expected["all"]


def test_cli_table_and_bad_input(tmp_path):
    table = CliRunner().invoke(main, ["evaluate", "--benchmark", "csfcube", "--data", str(require(CSFCUBE)),
                                      "--methods", "tfidf,hybrid", "--limit", "3"])
    assert table.exit_code == 0, table.stderr
    assert "CSFCube fold1_test (3 query-facets" in table.stdout and "hybrid" in table.stdout
    missing = CliRunner().invoke(main, ["evaluate", "--benchmark", "csfcube", "--data", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no CSFCube data here" in missing.stderr
    unknown = CliRunner().invoke(main, ["evaluate", "--benchmark", "csfcube", "--data", str(require(CSFCUBE)),
                                        "--methods", "tfidf,embedding"])
    assert unknown.exit_code == 2 and "need --embedder" in unknown.stderr
