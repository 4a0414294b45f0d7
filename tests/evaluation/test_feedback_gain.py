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
    assert table[5]["all"]["tasks"] == 4
    # Liked papers joined the library: the same call the CLI makes ranks them out of the candidates.
    first = feedback_gain._ranked_by(feedback_gain.baseline(None)(), [mini.papers[tasks[0].library[0]]],
                                     [mini.papers[p] for p in sorted(tasks[0].grades)], {})
    judged = feedback_gain.judged_picks(first, tasks[0].grades, 2)
    again = feedback_gain._ranked_by(rankers["liked join library"](), [mini.papers[tasks[0].library[0]]],
                                     [mini.papers[p] for p in sorted(tasks[0].grades)], judged)
    assert judged and not set(judged) & set(again) and set(again) <= set(tasks[0].grades)


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
