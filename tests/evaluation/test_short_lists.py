"""Short graded lists from CSFCube (recommender.evaluation.short_lists) and `litrank evaluate
--benchmark csfcube-short`: the loss's arithmetic, the draws, the CLI on the tiny fixture
tests/data/csfcube-mini, and once on the real dataset when ../shared/data/csfcube is there."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from connectors.files import csfcube
from recommender.cli import main
from recommender.evaluation import short_lists
from recommender.evaluation.holdout import model_scorer
from recommender.models.hybrid import HybridModel
from tests.conftest import DATA, SHARED, require

MINI = DATA / "csfcube-mini"
CSFCUBE = SHARED / "data" / "csfcube"


def test_the_pairwise_loss_weighs_each_pair_by_its_grade_difference():
    grades = {"a": 2, "b": 1, "c": 0}
    assert short_lists.pairwise_loss(["a", "b", "c"], [3, 2, 1], grades) == 0.0
    assert short_lists.pairwise_loss(["a", "b", "c"], [1, 2, 3], grades) == 1.0
    assert short_lists.pairwise_loss(["a", "b", "c"], [1, 1, 1], grades) == 0.5  # ties count half
    # a below b (weight 1) and below c (weight 2) are wrong, b above c is right: 3 of 4.
    assert short_lists.pairwise_loss(["a", "b", "c"], [1, 3, 2], grades) == 0.75
    # Pairs of one grade do not count: only (a, c) and (b, c) are judged here.
    assert short_lists.pairwise_loss(["a", "b", "c"], [1, 5, 3], {"a": 1, "b": 1, "c": 0}) == 0.5
    assert math.isnan(short_lists.pairwise_loss(["a", "b"], [1, 2], {"a": 1, "b": 1}))


def test_leads_average_a_librarys_draws_then_pair_the_libraries():
    # Two composite libraries of two draws each, and one single query of one draw. Library a:
    # TF-IDF's losses 0.4 and 0.2 (mean 0.3) against the default's 0.2 and 0.2; library b: 0.5
    # and 0.3 (0.4) against 0.2 and 0.0 (0.1). Leads 0.1 and 0.3: 0.2 ± 0.141 / √2 = 0.1.
    def short(name, kind):
        return short_lists.ShortList(name, kind, ("q",), ("x", "y"), {"x": 0, "y": 3})

    lists = [short("a#0", "composite"), short("a#1", "composite"), short("b#0", "composite"),
             short("b#1", "composite"), short("q#0", "single")]
    results = {"tfidf": {"a#0": 0.4, "a#1": 0.2, "b#0": 0.5, "b#1": 0.3, "q#0": 0.5},
               "hybrid": {"a#0": 0.2, "a#1": 0.2, "b#0": 0.2, "b#1": 0.0, "q#0": 0.25},
               "random": {name: 0.5 for name in ("a#0", "a#1", "b#0", "b#1", "q#0")}}
    leads = short_lists.leads(results, lists)
    assert set(leads) == {"single", "composite", "all"}  # random is no baseline; no lists, no kind
    assert leads["composite"] == {"hybrid": {"tfidf": {"lead": 0.2, "se": 0.1}}}
    assert leads["single"] == {"hybrid": {"tfidf": {"lead": 0.25, "se": 0.0}}}
    # "all": the kinds' mean, their errors added in quadrature over the two kinds.
    assert leads["all"] == {"hybrid": {"tfidf": {"lead": 0.225, "se": 0.05}}}
    assert short_lists.leads({"tfidf": results["tfidf"]}, lists) == {}


def test_a_draw_takes_up_to_four_candidates_of_each_grade():
    grades = {f"p{i:02d}": grade for i, grade in enumerate([0] * 10 + [1] * 6 + [2] * 2 + [3] * 5)}
    drawn = short_lists.draw_short_list(grades, np.random.default_rng(0))
    counts = [sum(grades[c] == g for c in drawn) for g in range(4)]
    assert counts == [4, 4, 2, 4] and drawn == sorted(drawn) and len(set(drawn)) == len(drawn)
    assert drawn == short_lists.draw_short_list(grades, np.random.default_rng(0))
    assert drawn != short_lists.draw_short_list(grades, np.random.default_rng(1))


def test_short_lists_come_from_every_task_and_are_seeded(monkeypatch):
    data = csfcube.load(MINI)
    lists = short_lists.build_short_lists(data, "fold1_dev")
    assert lists == short_lists.build_short_lists(data, "fold1_dev")
    kinds = {short.kind for short in lists}
    assert {"single", "composite", "balanced"} <= kinds
    for short in lists:
        assert not set(short.library) & set(short.candidates)
        assert len({short.grades[c] for c in short.candidates}) > 1
        assert all(sum(short.grades[c] == g for c in short.candidates) <= short_lists.PER_GRADE for g in range(4))
    singles = [short for short in lists if short.kind == "single"]
    query, facet = data.query_facets("fold1_dev")[0]
    first = [short for short in singles if short.name.startswith(f"fold1_dev/{query}_{facet}#")]
    assert len(first) == short_lists.DRAWS and first[0].library == (query,)
    assert all(short.grades[c] == data.pool(query, facet)[c] for short in first for c in short.candidates)
    limited = short_lists.first_of_each_kind(lists, 2)
    assert all(sum(short.kind == kind for short in limited) == 2 for kind in kinds)


def test_the_cli_runs_the_short_list_benchmark(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-short", "--data", str(MINI),
                                  "--methods", "random,tfidf,hybrid", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["benchmark"] == "csfcube-short" and payload["fold"] == "fold1_test"
    assert set(payload["folds"]) == {"fold1_dev", "fold1_test"}
    test = payload["folds"]["fold1_test"]
    assert set(test) == {"single", "composite", "balanced", "main line", "all"}
    assert test["single"]["lists"] > 0 and test["all"]["lists"] == sum(test[k]["lists"] for k in short_lists.KINDS)
    assert set(payload["methods"]) == {"random", "tfidf", "hybrid"}
    assert payload["methods"]["tfidf"] < payload["methods"]["random"]
    assert all(0.0 <= value <= 1.0 for values in payload["per_list"].values() for value in values.values())
    leads = payload["leads"]["fold1_test"]
    assert set(leads) == {"single", "composite", "balanced", "all"}  # the fixture has no main line
    assert set(leads["composite"]) == {"hybrid"} and set(leads["composite"]["hybrid"]) == {"tfidf"}
    table = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-short", "--data", str(MINI), "--methods",
                                 "tfidf", "--limit", "2"])
    assert table.exit_code == 0, table.output
    assert "short lists, fold1_dev" in table.stdout and "single (2)" in table.stdout
    assert "How sure, fold1_dev" not in table.stdout  # no default row: no leads
    sure = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-short", "--data", str(MINI), "--methods",
                                "tfidf,hybrid", "--limit", "6"])
    assert sure.exit_code == 0 and "How sure, fold1_test" in sure.stdout
    row = next(line for line in sure.stdout.split("How sure, fold1_test")[1].splitlines()
               if line.strip().startswith("hybrid - tfidf"))
    assert row.count("±") == 4  # single, composite, balanced and all
    missing = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-short", "--data", str(tmp_path)])
    assert missing.exit_code == 2 and "not a CSFCube directory" in missing.output


def test_on_short_lists_the_default_beats_tfidf_and_the_unshrunk_scale():
    # fold1_dev, lexical (docs/models-and-quality.md, "Short candidate lists"): standardising
    # each library paper's cosines over 16 candidates alone (column_prior=0, the rule before)
    # loses to TF-IDF; shrunk towards the library's statistics, the default beats both.
    data = csfcube.load(require(CSFCUBE))
    lists = short_lists.build_short_lists(data, "fold1_dev")
    unshrunk = {"column_prior=0": model_scorer(lambda: HybridModel(column_prior=0))}
    results = short_lists.evaluate_short_lists(data, lists, ["tfidf", "hybrid"], extra_scorers=unshrunk)
    table = short_lists.summary(results, lists)["all"]["methods"]
    assert table["hybrid"] < table["tfidf"] < table["column_prior=0"]


def test_on_short_lists_the_dense_channel_by_its_own_best_paper_beats_the_summed_channels():
    # fold1_dev with all-MiniLM-L6-v2 (docs/models-and-quality.md, "Each channel by its own
    # best papers"): the composite libraries' short lists, 0.175 against 0.189 with the
    # channels summed per library paper first (dense_depth=None, the rule before); both beat
    # the plain dense cosine and TF-IDF.
    pytest.importorskip("sentence_transformers", reason="dense embeddings need the extra: pip install 'litrank[embeddings]'")
    from recommender.models.embeddings import SentenceEmbedder

    data = csfcube.load(require(CSFCUBE))
    lists = [short for short in short_lists.build_short_lists(data, "fold1_dev") if short.kind == "composite"]
    embedder = SentenceEmbedder()
    summed = {"summed": model_scorer(lambda: HybridModel(embedder=embedder, dense_depth=None))}
    results = short_lists.evaluate_short_lists(data, lists, ["tfidf", "embedding", "hybrid+embeddings"],
                                               embedder=embedder, extra_scorers=summed)
    table = short_lists.summary(results, lists)["composite"]["methods"]
    assert table["hybrid+embeddings"] < table["summed"] - 0.005
    assert table["summed"] < min(table["tfidf"], table["embedding"])


@pytest.mark.parametrize("prior", [0.0, 300.0])
def test_the_short_list_scores_are_the_models(prior):
    # The benchmark ranks with the model as a user would: the list is the whole collection.
    data = csfcube.load(MINI)
    short = short_lists.build_short_lists(data, "fold1_dev")[0]
    library = [data.papers[i] for i in short.library]
    collection = [data.papers[i] for i in short.candidates]
    scores = HybridModel(column_prior=prior).fit(library, collection).scores_
    results = short_lists.evaluate_short_lists(
        data, [short], ["model"], extra_scorers={"model": model_scorer(lambda: HybridModel(column_prior=prior))})
    assert results["model"][short.name] == short_lists.pairwise_loss(short.candidates, scores, short.grades)
