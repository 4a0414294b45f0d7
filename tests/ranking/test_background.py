"""Work in a second process (recommender.runtime) and the library read beside the collection."""
from __future__ import annotations

import logging
import os

import pytest
from click.testing import CliRunner

import connectors
from recommender import runtime as background
from recommender.cli import common as cli_common
from recommender.cli import main
from tests.conftest import DATA, SEEDS, require


def _parse_and_log(path: str):
    """In the child: what a connector does, warnings and all; the pid shows where it ran."""
    logging.getLogger("litrank").warning("first note from %s", "the child")
    papers = connectors.load(path)
    return os.getpid(), [paper.id for paper in papers]


def _refuse(path: str):
    logging.getLogger("litrank").warning("about to refuse %s", path)
    raise connectors.SourceError(f"{path}: no such file or directory")


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def litrank_messages():
    logger = logging.getLogger("litrank")
    keep, saved = _Keep(), (logger.handlers, logger.level, logger.propagate)
    logger.handlers, logger.propagate = [keep], False
    logger.setLevel(logging.INFO)
    yield keep.messages
    logger.handlers, logger.level, logger.propagate = saved


@pytest.mark.skipif(not background.spare_core(), reason="one core: run_aside runs in this process")
def test_a_result_from_the_second_process_with_its_warnings_replayed_in_order(litrank_messages):
    library = str(DATA / "broken-library.bib")
    pid, ids = background.run_aside(_parse_and_log, library)()
    assert pid != os.getpid()
    assert ids == [paper.id for paper in connectors.load(library)] and len(ids) > 5
    assert litrank_messages[0] == "first note from the child"
    n = (len(litrank_messages) - 1) // 2  # the child's warnings, then the direct load's above
    from_child, direct = litrank_messages[1:1 + n], litrank_messages[1 + n:]
    assert any(":44: entry 'rombach2022high' could not be parsed" in m for m in from_child)
    assert from_child == direct  # the same warnings, in the same order


def test_errors_of_the_second_process_are_raised_where_the_result_is_taken(litrank_messages):
    take = background.run_aside(_refuse, "gone.bib")
    with pytest.raises(connectors.SourceError, match="gone.bib: no such file"):
        take()
    assert litrank_messages == ["about to refuse gone.bib"]


def test_without_a_second_process_the_work_runs_here():
    pid, _ = background.run_aside(_parse_and_log, str(DATA / "broken-library.bib"), aside=False)()
    assert pid == os.getpid()


@pytest.mark.parametrize("aside_from", [0, 1 << 60])
def test_rank_reads_a_library_beside_the_collection_with_the_same_picks(monkeypatch, aside_from, tmp_path):
    """A library file parsed in a second process: the same picks, its broken entry still named."""
    monkeypatch.setattr(cli_common, "ASIDE_MIN_BYTES", aside_from)
    seeds = require(SEEDS)
    index = tmp_path / "seeds.litrank"
    assert CliRunner().invoke(main, ["index", str(seeds), "-o", str(index)]).exit_code == 0
    library = str(DATA / "broken-library.bib")
    outputs = []
    for collection in (index, seeds):
        result = CliRunner().invoke(main, ["rank", "-l", library, "-c", str(collection), "-n", "8", "--format",
                                           "jsonl", "--no-feedback"], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        assert "broken-library.bib:44: entry 'rombach2022high' could not be parsed" in result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 8


def test_a_missing_library_file_still_exits_2(monkeypatch, tmp_path):
    monkeypatch.setattr(cli_common, "ASIDE_MIN_BYTES", 0)
    empty = tmp_path / "empty.bib"
    empty.write_text("% nothing here\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["rank", "-l", str(empty), "-n", "3"])
    assert result.exit_code == 2 and "contains no papers" in result.stderr
