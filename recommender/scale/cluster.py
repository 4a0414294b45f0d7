"""Where partitioned work runs: in this process, or on a ``dask.distributed`` cluster.

:class:`LocalEngine` and :class:`DaskEngine` have one interface: ``put(partitions)`` places
them, ``step(function, partitions, states, *shared)`` runs ``function(partition, state, *shared)``
on each (``shared`` values go to every call, sent once) and returns the new states, and
``collect(states, key)`` brings back one value of each state (or ``pick`` leaves it there, and
``completed`` + ``value`` bring each as it is done); ``combine(function, partitions)`` runs one
function over all of them in one place (a fit that needs the whole collection). The
partitioned scoring is one piece of code whichever engine runs it. Dask is the optional extra
``pip install 'litrank[dask]'``; it is imported only here and only when a cluster is asked for.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterator, Sequence

import numpy as np

# Dask priority of what this process waits on: a worker runs it before its queued steps.
URGENT = 10
# glibc's largest mmap threshold on 64-bit (its DEFAULT_MMAP_THRESHOLD_MAX), for local workers.
MMAP_THRESHOLD = str(32 << 20)
DASK_HINT = "running on a cluster needs the optional extra: pip install 'litrank[dask]'"
# Rows per partition: a partition's blocks are rows × library columns float64 (50,000 × 256: 100 MB).
PARTITION_ROWS = 50_000


def partition_bounds(n_papers: int, n_partitions: int | None = None, rows: int = PARTITION_ROWS) -> list[tuple[int, int]]:
    """Contiguous row ranges: ``n_partitions`` of them when given, else of at most ``rows`` rows."""
    if n_papers == 0:
        return []
    count = max(1, min(n_papers, n_partitions or -(-n_papers // rows)))
    edges = np.linspace(0, n_papers, count + 1).round().astype(int)
    return [(int(start), int(stop)) for start, stop in zip(edges[:-1], edges[1:]) if stop > start]


class ClusterUnavailable(RuntimeError):
    """No cluster can be used here; the message says what to install or fix."""


class LocalEngine:
    """Runs every partition in this process, one after another."""

    description = "this process"
    n_workers = 1

    def put(self, items: Sequence) -> list:
        return list(items)

    def step(self, function: Callable, items: Sequence, states: Sequence, *shared, urgent: bool = False) -> list:
        return [function(item, state, *shared) for item, state in zip(items, states)]

    def collect(self, states: Sequence, key: str) -> list:
        return [state[key] for state in states]

    def pick(self, states: Sequence, key: str) -> list:
        """One value of each state, left where it is (:meth:`value` brings one here)."""
        return [state[key] for state in states]

    def value(self, picked):
        return picked

    def completed(self, states: Sequence) -> Iterator[tuple[int, object]]:
        """``(position, state)`` of each state (or picked value) as it is done (here: in order)."""
        return enumerate(states)

    def combine(self, function: Callable, items: Sequence, *shared):
        return function(list(items), *shared)


def _pick(state: dict, key: str):
    return state[key]


def _released_after(function: Callable, *arguments):
    """``function(*arguments)`` on a worker, then the heap's free pages given back to the system:
    with temporaries of up to 32 MiB on the heap (see :func:`engine`), a worker holding its
    partitions would otherwise keep each step's freed temporaries mapped too (~0.3 GiB a worker)."""
    result = function(*arguments)
    _trim_heap()
    return result


@functools.lru_cache(maxsize=None)
def _malloc_trim():
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim  # glibc only; elsewhere nothing to do
    except (AttributeError, OSError):
        return None


def _trim_heap() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class DaskEngine:
    """Runs partitions on the workers of a ``distributed.Client``.

    Partitions are sent once (:meth:`put`); each step's state (the partition's intermediate
    blocks) stays on the workers as a future, and only what a reduce step needs (the value
    under one key of each state) comes back (:meth:`collect`). Steps are pure functions of
    their inputs, so a state moved or recomputed by Dask is the same state."""

    def __init__(self, client, description: str):
        self.client = client
        self.description = description

    @property
    def n_workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def put(self, items: Sequence) -> list:
        return self.client.scatter(list(items))

    def step(self, function: Callable, items: Sequence, states: Sequence, *shared, urgent: bool = False) -> list:
        """See :class:`LocalEngine`; ``urgent`` steps run before queued ones (a step that frees memory)."""
        from distributed import Future

        shared = [value if isinstance(value, Future) else self.client.scatter(value, broadcast=True) for value in shared]
        return [self.client.submit(_released_after, function, item, state, *shared, pure=False,
                                   priority=URGENT if urgent else 0)
                for item, state in zip(items, states)]

    def collect(self, states: Sequence, key: str) -> list:
        # Ahead of any queued step (Dask may run newer tasks first): this process waits for these.
        return self.client.gather([self.client.submit(_pick, state, key, pure=False, priority=URGENT)
                                   for state in states])

    def pick(self, states: Sequence, key: str) -> list:
        """Futures of one value of each state, computed on its worker as soon as the state is
        (urgent); :meth:`value` then only transfers it, whatever the worker is doing."""
        return [self.client.submit(_pick, state, key, pure=False, priority=URGENT) for state in states]

    def value(self, picked):
        return picked.result()

    def completed(self, states: Sequence) -> Iterator[tuple[int, object]]:
        """``(position, state)`` of each state (or picked value) as its worker finishes it: the workers do not run
        partitions in the order they were given, and a reduce waiting for them in that order
        leaves the finished ones' results piling up on the workers."""
        from distributed import as_completed

        position = {state.key: number for number, state in enumerate(states)}
        pending = as_completed(list(states))
        # No reference to the states kept here once yielded: the caller may release them (and
        # their data on the workers) as it goes.
        del states
        for state in pending:
            yield position[state.key], state
            del state

    def combine(self, function: Callable, items: Sequence, *shared):
        """``function(all items, *shared)`` on one worker; its result stays there (a future that
        later steps take as a shared value)."""
        return self.client.submit(function, list(items), *shared, pure=False)


def dask_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("distributed") is not None
    except (ImportError, ValueError):
        return False


@contextlib.contextmanager
def engine(scheduler: str | None = None, workers: int | None = None,
           memory_limit: str = "auto") -> Iterator[LocalEngine | DaskEngine]:
    """The engine for ``--scheduler ADDRESS`` (an existing cluster) or ``--workers N`` (a
    ``LocalCluster`` of N single-threaded worker processes, closed on exit); neither: this process."""
    if scheduler is None and not workers:
        yield LocalEngine()
        return
    if not dask_available():
        raise ClusterUnavailable(DASK_HINT)
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterUnavailable(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        with client:
            yield DaskEngine(client, f"the Dask cluster at {scheduler}")
        return
    import dask

    # Dask starts its workers with MALLOC_TRIM_THRESHOLD_ set, which also pins glibc's mmap
    # threshold at 128 KiB: every larger numpy temporary is then mapped, page-faulted in and
    # unmapped again, and tokenising and scoring ran ~1.3x slower than in a plain process.
    # Arrays up to 32 MiB come from the heap again, one arena (a task runs in a thread, whose
    # own arena behaved as badly), and each step gives the freed pages back (_released_after).
    # Nor do local workers run Dask's sampling profiler (every 10 ms it walks the task's stack
    # under the GIL): litrank's steps report their own times.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD,
                          "distributed.nanny.pre-spawn-environ.MALLOC_ARENA_MAX": "1",
                          "distributed.worker.profile.enabled": False,
                          # A step runs where its partition lives: a stolen one would copy the partition.
                          "distributed.scheduler.work-stealing": False}), \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                         memory_limit=memory_limit) as cluster, Client(cluster) as client:
        yield DaskEngine(client, f"a local Dask cluster of {workers} worker{'s' if workers != 1 else ''}")
