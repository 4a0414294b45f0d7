"""The author-continuity benchmark builder, on the shared conference data."""
from __future__ import annotations

import pytest

import connectors
from recommender.evaluation import author_continuity as ac
from recommender.evaluation.author_continuity import CONFIGS, author_key
from tests.conftest import CONFERENCES, require


def build_tasks(*args, **kwargs):
    return ac.build_tasks(*args, read=connectors.load, **kwargs)


def load_venue(*args, **kwargs):
    return ac.load_venue(*args, read=connectors.load, **kwargs)

CHECKED_CONFIGS = ("iclr2018", "icml2019")


# ------------------------------------------------------------------ name normalisation (no data)


@pytest.mark.parametrize(
    "a, b",
    [
        ("Zhi-Hua Zhou", "Zhi-hua Zhou"),
        ("Zhi-Hua Zhou", "Zhihua Zhou"),
        ("Sébastien Bubeck", "Sebastien Bubeck"),
        ("Łukasz Kaiser", "Lukasz Kaiser"),
        ("S.V.N. Vishwanathan", "S. V. N. Vishwanathan"),
        ("Anirudh  Goyal", "Anirudh Goyal"),
        ("Hieu Pham*", "Hieu Pham"),
        ("Alexandre D’Aspremont", "Alexandre d'Aspremont"),
        ("Jos\\'{e} M. F. Moura", "José M. F. Moura"),
        ("PHUONG HA NGUYEN", "Phuong Ha Nguyen"),
    ],
)
def test_spelling_variants_are_one_author(a, b):
    assert author_key(a) == author_key(b)


@pytest.mark.parametrize("a, b", [("Quoc Le", "Quoc V. Le"), ("Jun Zhu", "Jun-Yan Zhu"), ("Xi Chen", "Xin Chen")])
def test_different_names_stay_apart(a, b):
    assert author_key(a) != author_key(b)


# ------------------------------------------------------------------ builds on the shared data


@pytest.fixture(scope="module")
def conferences():
    return require(CONFERENCES)


@pytest.fixture(scope="module")
def built(conferences):
    """{(config, track): tasks} for the checked configs, plus the original papers by id."""
    tasks = {(config, track): build_tasks(conferences, config, track) for config in CHECKED_CONFIGS for track in ac.TRACKS}
    originals = {}
    for config in CHECKED_CONFIGS:
        venue, history, target = CONFIGS[config]
        for papers in load_venue(conferences, venue, [*history, target]).values():
            originals.update((paper.id, paper) for paper in papers)
    return tasks, originals


@pytest.mark.parametrize("config", CHECKED_CONFIGS)
@pytest.mark.parametrize("track", ac.TRACKS)
def test_tasks_are_well_formed(built, config, track):
    tasks = built[0][(config, track)]
    venue, history_years, target_year = CONFIGS[config]
    assert tasks, f"{config}: no qualifying authors"
    keys = [author_key(task.author) for task in tasks]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for task in tasks:
        assert (task.venue, task.target_year) == (venue, target_year)
        collection_ids = {paper.id for paper in task.collection}
        assert task.relevant and task.relevant <= collection_ids
        assert len(task.library) >= 3
        assert all(paper.year in history_years and paper.venue == venue for paper in task.library)
        assert all(paper.year == target_year for paper in task.collection)
        assert not collection_ids & {paper.id for paper in task.library}
        assert len({paper.identity for paper in task.library}) == len(task.library)


def test_expected_scale(built):
    tasks = built[0]
    assert 250 <= len(tasks[("icml2019", "text")]) <= 350
    assert len(tasks[("iclr2018", "text")]) >= 20
    for config in CHECKED_CONFIGS:
        assert [t.author for t in tasks[(config, "text")]] == [t.author for t in tasks[(config, "authors")]]


@pytest.mark.parametrize("config", CHECKED_CONFIGS)
def test_text_track_has_no_authors(built, config):
    tasks = built[0][(config, "text")]
    for task in tasks:
        assert all(paper.authors == [] for paper in (*task.library, *task.collection))
    # One collection list for every task, not a copy each.
    assert all(task.collection is tasks[0].collection for task in tasks)


@pytest.mark.parametrize("config", CHECKED_CONFIGS)
def test_authors_track_removes_exactly_the_task_author(built, config):
    tasks, originals = built[0][(config, "authors")], built[1]
    kept_coauthors = 0
    for task in tasks:
        key = author_key(task.author)
        library_ids = {paper.id for paper in task.library}
        for paper in (*task.library, *task.collection):
            original = originals[paper.id]
            # Exactly the task's author (every spelling of it) is gone; co-authors stay, in order.
            expected = [name for name in original.authors if author_key(name) != key]
            assert paper.authors == expected, (task.author, paper.id)
            mine = len(expected) < len(original.authors)
            assert mine == (paper.id in task.relevant or paper.id in library_ids), (task.author, paper.id)
            if mine:
                kept_coauthors += bool(paper.authors)
            else:
                assert paper is original  # only the author's own papers are copied
            assert (paper.title, paper.abstract, paper.year) == (original.title, original.abstract, original.year)
    assert kept_coauthors > len(tasks)
    # The shared originals are untouched.
    assert all(originals[pid].authors for task in tasks for pid in task.relevant)


def test_builds_are_deterministic(conferences):
    first = build_tasks(conferences, "iclr2018", "authors")
    ac._FILE_CACHE.clear()
    ac._PREPARED_CACHE.clear()
    second = build_tasks(conferences, "iclr2018", "authors")
    assert first == second
    assert build_tasks(conferences, "icml2019", "text") == build_tasks(conferences, "icml2019", "text")


@pytest.mark.parametrize("config", CHECKED_CONFIGS)
def test_max_tasks_samples_deterministically(built, conferences, config):
    full = built[0][(config, "text")]
    sample = build_tasks(conferences, config, "text", max_tasks=10, seed=1)
    assert len(sample) == 10
    names = [task.author for task in full]
    positions = [names.index(task.author) for task in sample]
    assert positions == sorted(positions)  # a subset, in the full order
    assert sample == build_tasks(conferences, config, "text", max_tasks=10, seed=1)
    assert [t.author for t in sample] != [t.author for t in build_tasks(conferences, config, "text", max_tasks=10, seed=2)]
    assert build_tasks(conferences, config, "text", max_tasks=10**6) == full
    assert build_tasks(conferences, config, "text", max_tasks=0) == []


def test_min_history_is_a_threshold(conferences):
    loose = build_tasks(conferences, "iclr2018", "text", min_history=2)
    strict = build_tasks(conferences, "iclr2018", "text")
    assert len(loose) > len(strict)
    assert {t.author for t in strict} <= {t.author for t in loose}


def test_neurips_files_load_despite_unicode_line_separators(conferences):
    # nips2012.jsonl.gz has U+2029 inside a JSON string; JSON Lines break at "\n" only.
    papers = load_venue(conferences, "NeurIPS", [2012])[2012]
    assert len(papers) == 370
    assert {p.venue for p in papers} == {"NeurIPS"}


def test_unknown_config_and_track(conferences):
    with pytest.raises(ValueError):
        build_tasks(conferences, "icml2099", "text")
    with pytest.raises(ValueError):
        build_tasks(conferences, "icml2019", "names")


def test_the_cli_runs_the_benchmark_and_reports_every_model():
    import json

    from click.testing import CliRunner

    from recommender.cli import main

    result = CliRunner().invoke(main, ["evaluate", "--benchmark", "author-continuity", "--data", str(require(CONFERENCES)),
                                       "--limit", "3", "--methods", "hybrid,learned,random", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    results = json.loads(result.stdout)["results"]
    assert set(results) == {"icml2019", "neurips2018", "iclr2018"}
    for tracks in results.values():
        assert set(tracks) == {"text", "authors"}
        for track in tracks.values():
            assert track["tasks"] == 3 and set(track["methods"]) == {"hybrid", "learned", "random"}
