"""Work in a second process (recommender.runtime), the library read beside the collection, and
SciPy imported without numpy's unused extras."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import connectors
from recommender import runtime as background
from recommender.cli import common as cli_common
from recommender.cli import main
from tests.conftest import DATA, EXAMPLE_LIBRARY, SEEDS, require


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


def _character_counts(texts: list[str]):
    """In the child: the character n-gram counts of a collection (a large result of arrays)."""
    from recommender.features.index_features import _compact_char_counts

    return os.getpid(), _compact_char_counts(texts, len(texts))


@pytest.mark.skipif(not background.spare_core() or "fork" not in background.multiprocessing.get_all_start_methods(),
                    reason="one core, or no fork: run_aside runs here or returns through its pipe")
def test_a_forked_childs_result_comes_back_through_a_file_when_taken(monkeypatch):
    """A forked child writes its result to a file this process opened; nothing but None comes
    through the executor's pipe, the file is read when the result is taken, then closed (an
    unnamed temporary file: gone). The arrays are those counted here."""
    from recommender.features.index_features import _compact_char_counts

    taken = []
    real = background._taken

    def spy(returned, spool):
        taken.append((returned, spool))
        return real(returned, spool)

    monkeypatch.setattr(background, "_taken", spy)
    texts = [paper.text for paper in connectors.load(DATA / "report-collection.jsonl")]
    pid, (counts, terms) = background.run_aside(_character_counts, texts)()
    assert pid != os.getpid() and len(taken) == 1
    returned, spool = taken[0]
    assert returned is None and spool.closed
    expected_counts, expected_terms = _compact_char_counts(texts, len(texts))
    assert terms == expected_terms and (counts != expected_counts).nnz == 0


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


_LEAN_IMPORT = """
import json, sys
import numpy
exported, listing = list(numpy.__all__), sorted(dir(numpy))
from click.testing import CliRunner
from recommender.cli import main
scipy_at_import = "scipy" in sys.modules  # `litrank --help`, `config`, `cache` need no SciPy
result = CliRunner().invoke(main, ["-q", "rank", "-l", sys.argv[1], "-c", sys.argv[2], "-n", "3", "--format", "jsonl",
                                   "--embedder", "none"])
assert result.exit_code == 0, result.output
import scipy._lib.array_api_compat.numpy as array_namespace
from scipy import sparse
product = (sparse.csr_matrix([[1.0, 0.0], [2.0, 3.0]]) @ sparse.csr_matrix([[1.0], [1.0]])).toarray().ravel().tolist()
loaded = sorted(m for m in ("numpy.f2py", "numpy.testing") if m in sys.modules)
import numpy.testing  # still importable as ever, for whoever asks
print(json.dumps({"scipy_at_import": scipy_at_import, "picks": len(result.output.splitlines()), "loaded": loaded,
                  "restored": numpy.__all__ == exported and sorted(dir(numpy)) == listing,
                  "namespace": all(hasattr(array_namespace, name) for name in ("asarray", "linalg", "fft", "float32")),
                  "product": product, "testing": "numpy.testing" in sys.modules}))
"""


def test_a_ranking_command_imports_scipy_without_numpys_f2py_and_testing_and_leaves_numpy_as_it_was():
    """SciPy's array-API layer copies numpy's namespace; copying its lazy submodules imported
    numpy.f2py, numpy.testing and numpy.ma (60 ms of every ranking). A ranking command leaves
    them out of that copy (numpy.ma, 5 ms, is still imported later by SciPy's sparse code), and numpy's own ``__all__`` and ``dir()`` are as before."""
    done = subprocess.run([sys.executable, "-c", _LEAN_IMPORT, str(EXAMPLE_LIBRARY), str(DATA / "report-collection.jsonl")],
                          check=True, capture_output=True, text=True)
    assert json.loads(done.stdout) == {"scipy_at_import": False, "picks": 3, "loaded": [], "restored": True,
                                       "namespace": True, "product": [1.0, 5.0], "testing": True}


def test_scipy_imported_already_is_left_as_it_is():
    script = ("import sys, scipy.sparse\nfrom recommender.runtime import import_scipy_sparse\n"
              "import_scipy_sparse()\nprint('numpy.f2py' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "True"  # scipy's own import loaded it; nothing undone or redone


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim: Linux only")
def test_memory_another_thread_freed_goes_back_to_the_system():
    """What a thread freed stays in its allocator arena until released: after indexing 30,000
    papers the embedding thread's arenas held 130-160 MB. release_free_memory hands it back (a
    fresh subprocess, so that no other test's memory is measured)."""
    script = """
import threading, numpy
from recommender.runtime import release_free_memory
def resident_mb():
    with open('/proc/self/status') as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith('VmRSS'))
kept = []
def work():
    arrays = [numpy.ones(8000) for _ in range(2000)]  # 64 KB each, below malloc's mmap threshold: 128 MB
    kept.append(arrays[-1])  # the last one stays: the arena cannot shrink from its top
thread = threading.Thread(target=work)
thread.start()
thread.join()
before = resident_mb()
released = release_free_memory()
print(before, resident_mb(), released)
"""
    before, after, released = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                             check=True).stdout.split()
    assert released == "True"
    assert int(before) - int(after) > 80  # 153 -> 32 MB when measured
