"""What judgements buy (recommender.evaluation.feedback_gain) and `litrank evaluate --benchmark
csfcube-feedback`, on the tiny CSFCube-layout fixture tests/data/csfcube-mini."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from connectors.files import csfcube
from recommender.cli import main
from recommender.evaluation import feedback_gain
from recommender.feedback import DISLIKED, LIKED
from tests.conftest import DATA

MINI = DATA / "csfcube-mini"


@pytest.fixture(scope="module")
def mini():
    return csfcube.load(MINI)


def test_the_user_judges_the_first_k_picks_by_their_grade():
    ranked = ["a", "b", "c", "d"]
    grades = {"a": 3, "b": 1, "c": 2, "d": 3}
    assert feedback_gain.judged_picks(ranked, grades, 3) == {"a": LIKED, "b": DISLIKED, "c": LIKED}
    assert feedback_gain.judged_picks(ranked, {}, 1) == {"a": DISLIKED}  # pooled, never graded: not relevant


def test_tasks_are_the_query_facets_then_the_composite_libraries(mini):
    tasks = feedback_gain.tasks(mini, "fold1_dev")
    kinds = [task.kind for task in tasks]
    assert kinds == sorted(kinds, key=lambda kind: kind != "single") and {"single", "composite"} == set(kinds)
    single = [task for task in tasks if task.kind == "single"]
    assert len(single) == len(list(mini.query_facets("fold1_dev"))) and all(len(t.library) == 1 for t in single)


def test_methods_are_scored_on_the_unjudged_papers_against_the_same_ranking_without_feedback(mini):
    tasks = feedback_gain.tasks(mini, "fold1_dev")[:4]
    rankers = feedback_gain.default_methods(None, learned=False)
    results = feedback_gain.evaluate_feedback(mini, tasks, rankers, feedback_gain.baseline(None), k_values=(2, 5))
    assert set(results) == {2, 5}
    for k, methods in results.items():
        assert set(methods) == {feedback_gain.NO_FEEDBACK, *rankers}
        for task in tasks:
            judged = methods[feedback_gain.NO_FEEDBACK][task.name]
            assert judged["liked"] + judged["disliked"] == min(k, len(task.grades))
    table = feedback_gain.summary(results, tasks)
    assert table[5]["all"]["methods"][feedback_gain.NO_FEEDBACK]["gain"] == 0
    assert table[5]["all"]["methods"][feedback_gain.NO_FEEDBACK]["gain_se"] == 0
    assert table[5]["all"]["tasks"] == 4
    # Liked papers joined the library: the same call the CLI makes ranks them out of the candidates.
    first = feedback_gain._ranked_by(feedback_gain.baseline(None)(), [mini.papers[tasks[0].library[0]]],
                                     [mini.papers[p] for p in sorted(tasks[0].grades)], {})
    judged = feedback_gain.judged_picks(first, tasks[0].grades, 2)
    again = feedback_gain._ranked_by(rankers["liked join library"](), [mini.papers[tasks[0].library[0]]],
                                     [mini.papers[p] for p in sorted(tasks[0].grades)], judged)
    assert judged and not set(judged) & set(again) and set(again) <= set(tasks[0].grades)


def test_the_gain_and_its_standard_error_are_paired_task_by_task():
    # Three tasks: the method gains 0.1, 0.0 and 0.2 over each task's own ranking without feedback.
    tasks = [feedback_gain.Task("single", name, ("q",), {}) for name in ("a", "b", "c")]

    def row(ndcg):
        return {"ndcg%20": ndcg, "map": ndcg / 2, "liked": 1, "disliked": 4}

    results = {5: {feedback_gain.NO_FEEDBACK: {"a": row(0.5), "b": row(0.6), "c": row(0.7)},
                   "liked join library": {"a": row(0.6), "b": row(0.6), "c": row(0.9)}}}
    table = feedback_gain.summary(results, tasks)[5]["all"]["methods"]
    assert table[feedback_gain.NO_FEEDBACK] == {"ndcg%20": 0.6, "map": 0.3, "gain": 0.0, "gain_se": 0.0}
    # Gains 0.1, 0.0, 0.2: mean 0.1, spread 0.1, standard error 0.1 / √3 (the means alone, 0.6
    # against 0.7, would not tell how steady the gain is).
    assert table["liked join library"]["gain"] == 0.1
    assert table["liked join library"]["gain_se"] == round(0.1 / 3 ** 0.5, 4) == 0.0577
    text = feedback_gain.markdown(feedback_gain.summary(results, tasks), kinds=("all",))
    assert "| liked join library | 0.700 / 0.350 (+0.100 ± 0.058) |" in text
    assert "(gain ± standard error)" in text
    # One task: no spread to speak of.
    alone = feedback_gain.summary({5: {m: {"a": v["a"]} for m, v in results[5].items()}}, tasks[:1])
    assert alone[5]["all"]["methods"]["liked join library"]["gain_se"] == 0.0


def test_cli_benchmark_and_its_bad_input():
    runner = CliRunner()
    result = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-feedback", "--data", str(MINI), "--fold",
                                  "fold1_dev", "--embedder", "none", "--limit", "3", "--format", "json",
                                  "--methods", "liked join library"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["benchmark"] == "csfcube-feedback" and set(payload["results"]) == {"5", "10", "20"}
    assert set(payload["results"]["10"]["all"]["methods"]) == {"no feedback", "liked join library"}
    table = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-feedback", "--data", str(MINI), "--fold",
                                 "fold1_dev", "--embedder", "none", "--limit", "2", "--methods", "liked join library"])
    assert table.exit_code == 0 and "| liked join library |" in table.stdout
    for bad in (["--fold", "all"], ["--methods", "oracle"]):
        wrong = runner.invoke(main, ["evaluate", "--benchmark", "csfcube-feedback", "--data", str(MINI),
                                     "--embedder", "none", *bad])
        assert wrong.exit_code == 2 and len(wrong.stderr.strip().splitlines()) == 1, wrong.output
