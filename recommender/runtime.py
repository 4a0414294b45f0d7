"""What a run takes from its surroundings: the cores it may use (:func:`usable_cores`), a second
process for work that overlaps this one's, the directory every cache lives under, SciPy imported
without what a run never uses, and freed memory handed back to the system
(:func:`release_free_memory`). Both sides use it: the BibTeX reader and the feature builder run
work aside, the static embedder chooses how to tokenise by the cores, the HTTP and embedding
caches live under :func:`user_cache_root`, the CLI imports SciPy through
:func:`import_scipy_sparse`.

**Work aside.**

Two slow steps of a run are pure Python and independent of each other: bibtexparser reading a
library and, meanwhile, reading a collection index (and importing scikit-learn), or the
collection's character n-grams while its word model is built. Threads would not overlap them
(each holds the interpreter lock); a forked process does, on a machine with a second core. Its
result comes back through a file, read when it is taken, not through the executor's pipe.

This module imports nothing heavy: the CLI starts its background work before scikit-learn is
imported, so that the import itself is part of what overlaps.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Callable

# numpy's submodules that SciPy's array-API layer imports only to copy them into its namespace
# of numpy: no array-API function lives there, and SciPy reads ``xp.testing`` only from CuPy's
# and PyTorch's namespaces (``scipy._lib._array_api.xp_assert_*``), never from this one.
_NUMPY_EXTRAS_UNUSED = frozenset({"f2py", "testing", "ma", "polynomial", "ctypeslib", "rec", "char", "strings", "test"})


def usable_cores() -> int:
    """How many cores this process may use (its affinity mask, where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity masks on this platform
        return os.cpu_count() or 1


def spare_core() -> bool:
    """Whether this process may use a second core."""
    return usable_cores() > 1


def run_aside(function: Callable, *args, aside: bool = True) -> Callable[[], object]:
    """``function(*args)`` started in a second process when ``aside`` and a second core allow
    (else run here, now); returns a function that gives its result or raises its error.

    What ``function`` logs on the ``litrank`` logger there is logged here when the result is
    taken, in order: a broken entry's warning reaches the same stderr (or test runner) as the
    rest of the run.
    """
    if aside and spare_core():
        try:
            from concurrent.futures import ProcessPoolExecutor

            # fork: the child has this process's imports and arguments at no cost.
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            executor = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context(method))
            # A forked child writes its result to a file this process opened (it shares the
            # descriptor), read back when the result is taken. Through the executor's pipe, a
            # result arrived whenever the child finished, on the executor's thread, held twice
            # while it was unpickled: the character counts of 30,000 abstracts are 72 MB, and
            # the 144 MB landed in the middle of the collection's word counting.
            spool = tempfile.TemporaryFile() if method == "fork" else None
            future = executor.submit(_logged, function, spool.fileno() if spool else None, *args)
            executor.shutdown(wait=False)
            return lambda: _replay(*_taken(future.result(), spool))
        except (OSError, RuntimeError, ValueError):  # no processes allowed here: stay serial
            pass
    result = function(*args)
    return lambda: result


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelno, record.getMessage()))


def _logged(function: Callable, spool: int | None, *args):
    """In the second process: ``function(*args)`` with what it logs collected, not printed; with
    ``spool`` (a descriptor of the parent's file) the three are written there and None returned."""
    logger = logging.getLogger("litrank")
    collect = _Collect()
    logger.handlers, logger.propagate = [collect], False
    try:
        outcome = function(*args), collect.records, None
    except Exception as exc:  # raised where the result is taken, after what was logged before it
        outcome = None, collect.records, exc
    if spool is None:
        return outcome
    with os.fdopen(os.dup(spool), "wb") as handle:
        pickle.dump(outcome, handle, protocol=pickle.HIGHEST_PROTOCOL)
    return None


def _taken(returned, spool):
    """What :func:`_logged` gave: returned, or read back from ``spool`` (then closed, and so gone)."""
    if spool is None:
        return returned
    with spool:
        spool.seek(0)
        return pickle.load(spool)


def _replay(result, records: list[tuple[int, str]], error: Exception | None):
    logger = logging.getLogger("litrank")
    for level, message in records:
        logger.log(level, "%s", message)
    if error is not None:
        raise error
    return result


def release_free_memory() -> bool:
    """Hand the memory this process has freed back to the system (glibc's ``malloc_trim``):
    True when some was, False when none was or there is no such call (another C library,
    another system).

    Freed memory stays in the allocator's arenas, one per thread that allocated: after a
    collection is indexed, the embedding thread's and the tokenizer's arenas held 130-160 MB
    at 30,000 papers that the scoring after it could not reuse, and the run's peak stood that
    much higher."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        _MALLOC_TRIM = False
        if sys.platform.startswith("linux"):
            import ctypes

            try:  # the process's own symbols, libc's among them (musl has no malloc_trim)
                _MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", False)
            except OSError:
                pass
    return bool(_MALLOC_TRIM(0)) if _MALLOC_TRIM else False


_MALLOC_TRIM = None  # glibc's malloc_trim once looked up; False where there is none


def user_cache_root() -> Path:
    """``$LITRANK_CACHE_DIR``, else the user cache directory (platformdirs): every cache's parent."""
    root = os.environ.get("LITRANK_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("litrank")
    return Path(root).expanduser()


def import_scipy_sparse() -> None:
    """Import ``scipy.sparse`` (when not yet imported) without numpy's f2py, testing and ma.

    SciPy's array-API layer (``scipy._lib.array_api_compat.numpy``) copies numpy's namespace
    name by name, and copying a lazily loaded submodule imports it: numpy.f2py, numpy.testing
    and numpy.ma, with the regular expressions they compile, were 60 ms of every ranking, more
    than the rest of SciPy's sparse import (0.095 -> 0.036 s). They are left out of that copy
    (hidden from ``numpy.__all__`` and ``dir(numpy)`` during the import, then restored); numpy
    itself is untouched and imports them as usual for whoever asks (SciPy's sparse code asks
    for numpy.ma later, 5 ms). The CLI's ranking commands call this before anything else.
    """
    if "scipy.sparse" in sys.modules:
        return
    import numpy

    exported, listing = numpy.__dict__.get("__all__"), numpy.__dict__.get("__dir__")
    if not isinstance(exported, list) or listing is None:  # another numpy than this was written for
        import scipy.sparse  # noqa: F401

        return
    numpy.__all__ = [name for name in exported if name not in _NUMPY_EXTRAS_UNUSED]
    numpy.__dir__ = lambda: [name for name in listing() if name not in _NUMPY_EXTRAS_UNUSED]
    try:
        import scipy.sparse  # noqa: F401
    finally:
        numpy.__all__, numpy.__dir__ = exported, listing
