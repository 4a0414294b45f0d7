"""Affinity at scale: one profile against generated collections of 10k, 100k and 1M papers, on Dask.

    python -m benchmarks.bench_affinity                          # 10,000 / 100,000 / 1,000,000 papers
    python -m benchmarks.bench_affinity --sizes 10000 100000 --workers 2

Collections are synthesised at run time from the shared conference abstracts
(:mod:`benchmarks.synthetic_collection`, JSON Lines shards of 12,500 papers in a temporary
directory, deleted afterwards). Each size runs in a process of its own, so its peak memory is
its own. On a local Dask cluster of ``--workers`` single-threaded workers (memory limit 4 GiB
each: Dask spills to the worker's disk from 80% of it), each worker reads its shards and the
collection index is built there partition by partition
(:func:`recommender.scale.partitioned_index.build_partitioned`: only vocabularies come back to this
process); then the example library (one profile, 55 papers) is scored against it. Printed per
size: seconds to build the index (once: every profile is then scored against it), seconds to
score one profile against it and their sum, each worker's peak RSS and this process's (the
driver), and at the end how each grows from one size to the next (ratios of the same run).
First, unless ``--no-baseline``, one partition is tokenised in this process twice, by
scikit-learn's vectorisers and by the numpy counting the workers use (a ratio of the same run:
the machine's load does not cancel it). While a
size runs, its progress goes to stderr as it happens: each partition's seconds per stage
(read, words, character 4-grams, authors), the vocabulary, each scoring step, and every 30 s
the workers' memory, so that a run stopped half-way still says how far it got.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TARGET_SECONDS, TARGET_GIB = 180, 4.0
PARTITION_ROWS = 12_500  # a partition of 12,500 abstracts: tokenising it peaks at ~0.6 GiB


def _peak_mib() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited by a worker from the
    process that started it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mib() -> tuple[float, float]:
    """This process's RSS now and its peak (VmRSS, VmHWM), MiB."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line[:5]] = int(line.split()[1]) / 1024
    return found.get("VmRSS", 0.0), found.get("VmHWM", 0.0)


class _Log:
    """Progress lines on stderr as they happen, with the seconds since the start of the size;
    every ``every`` seconds also the workers' memory (a run stopped half-way keeps its figures)."""

    def __init__(self, size: int, every: float = 30.0):
        self.size, self.every, self.start = size, every, time.perf_counter()
        self.client = None
        self._stop = threading.Event()

    def __call__(self, message: str) -> None:
        print(f"[{self.size:,} papers, {time.perf_counter() - self.start:7.1f} s] {message}", file=sys.stderr,
              flush=True)

    def memory(self) -> None:
        try:
            found = self.client.run(_rss_mib)
        except Exception as error:  # noqa: BLE001 (a busy or lost worker: say so, keep sampling)
            self(f"workers' memory not read: {error!r}")
            return
        now, peak = _rss_mib()
        self("memory: workers " + ", ".join(f"{rss / 1024:.2f} GiB (peak {high / 1024:.2f})"
                                            for rss, high in found.values())
             + f"; driver {now / 1024:.2f} GiB (peak {peak / 1024:.2f})")

    def watch(self, client) -> None:
        self.client = client
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.memory()

    def stop(self) -> None:
        self._stop.set()


def measure(size: int, workers: int, shards: int) -> dict:
    """One size, in this process: the figures as a dict."""
    import connectors
    from benchmarks.synthetic_collection import write_collection
    from recommender.models.hybrid import HybridModel
    from recommender.scale.affinity import AffinityScorer
    from recommender.scale.cluster import engine
    from recommender.scale.partitioned_index import build_partitioned

    figures: dict = {"papers": size}
    log = _Log(size)
    profile = {"example": connectors.load(Path(__file__).resolve().parents[1] / "examples" / "diffusion-library.bib")}
    model = HybridModel()
    with tempfile.TemporaryDirectory(prefix="litrank-bench-affinity-") as directory:
        start = time.perf_counter()
        paths = write_collection(Path(directory), size, shards)
        figures["generate_s"] = time.perf_counter() - start
        log(f"generated {len(paths)} shards in {figures['generate_s']:.1f} s (not counted)")
        import dask

        # The 4 GiB target as the workers' limit. A worker's parts are its index: spilling them
        # to disk only to read each back at every scoring step is what thrashed at 1M, so Dask
        # spills late (from 80% of the limit) and never kills a worker (terminate off).
        with dask.config.set({"distributed.worker.memory.target": 0.8, "distributed.worker.memory.spill": 0.85,
                              "distributed.worker.memory.pause": 0.95, "distributed.worker.memory.terminate": False}), \
                engine(workers=workers, memory_limit=f"{TARGET_GIB}GiB") as runner:
            runner.client.wait_for_workers(workers)
            log.watch(runner.client)
            start, cpu = time.perf_counter(), time.process_time()
            # Each worker reads its shards and tokenises them; only vocabularies come back here.
            index = build_partitioned(runner, [str(path) for path in paths], use_char=model.char_weight > 0,
                                      progress=log, read=connectors.load)
            from distributed import wait

            wait(index.parts)
            figures["index_s"] = time.perf_counter() - start
            figures["index_driver_cpu_s"] = time.process_time() - cpu
            log(f"index built in {figures['index_s']:.1f} s (rows placed on the workers; this process, the driver "
                f"and scheduler, used {figures['index_driver_cpu_s']:.1f} s of CPU meanwhile)")
            log.memory()
            figures["index_peak_mib"] = _peak_mib()
            figures["vocabulary"] = [len(index.vocabulary.word_terms), len(index.vocabulary.char_terms or ())]
            start = time.perf_counter()
            (result,) = AffinityScorer(model, top=100, progress=log).score(index, profile, runner)
            figures["score_s"] = time.perf_counter() - start
            log(f"scored 1 profile in {figures['score_s']:.1f} s")
            log.stop()
            log.memory()
            figures["worker_peak_mib"] = sorted(runner.client.run(_peak_mib).values())
            figures["partitions"] = len(index.parts)
    figures["best"] = result.paper_ids(index)[0]
    figures["driver_peak_mib"] = _peak_mib()
    return figures


def tokenising_baseline() -> dict:
    """One partition's tokenising in this process, scikit-learn's vectorisers (the reference
    the numpy counting must equal) beside the numpy counting the workers run: a ratio of the
    same run and the same 12,500 papers, whatever the load on the machine."""
    import connectors
    from benchmarks.synthetic_collection import write_collection
    from recommender.features.index_features import char_counter, count_chars, fit_counts, fold_accents, word_counter
    from recommender.features.word_grams import CodePoints, word_grams
    from recommender.text import STOP_WORDS

    with tempfile.TemporaryDirectory(prefix="litrank-bench-affinity-") as directory:
        (path,) = write_collection(Path(directory), PARTITION_ROWS, 1)
        texts = [paper.text for paper in connectors.load(path)]
    figures = {}
    start = time.perf_counter()
    fit_counts(word_counter(n_papers=1), texts)
    fit_counts(char_counter(n_papers=1), texts)
    figures["scikit_learn_s"] = time.perf_counter() - start
    start = time.perf_counter()
    word_grams(CodePoints(texts, fold_accents), STOP_WORDS)  # (as a worker counts them: terms as numbers)
    count_chars(texts, n_papers=1)
    figures["numpy_s"] = time.perf_counter() - start
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip tokenising one partition in this process with scikit-learn and numpy (a ratio)")
    arguments = parser.parse_args()
    shards = lambda size: max(arguments.workers, -(-size // PARTITION_ROWS))  # noqa: E731
    if arguments.one:
        print(json.dumps(measure(arguments.one, arguments.workers, shards(arguments.one))))
        return
    if not arguments.one and not arguments.no_baseline:
        base = tokenising_baseline()
        print(f"one partition ({PARTITION_ROWS:,} papers) tokenised in this process, words and character 4-grams: "
              f"scikit-learn's vectorisers {base['scikit_learn_s']:.1f} s, numpy counting {base['numpy_s']:.1f} s "
              f"(x{base['scikit_learn_s'] / base['numpy_s']:.1f}; same counts and terms)", flush=True)
    rows = []
    for size in arguments.sizes:
        # The run's progress (stderr) shows as it happens; its figures come back on stdout.
        process = subprocess.run([sys.executable, "-m", "benchmarks.bench_affinity", "--one", str(size),
                                  "--workers", str(arguments.workers)], stdout=subprocess.PIPE, text=True)
        if process.returncode:
            print(f"{size:>9,} papers: failed (exit {process.returncode}; its progress above)", flush=True)
            continue
        figures = json.loads(process.stdout.strip().splitlines()[-1])
        rows.append(figures)
        total = figures["index_s"] + figures["score_s"]
        worker_gib = max(figures["worker_peak_mib"]) / 1024
        print(f"{size:>9,} papers ({figures['partitions']} partitions, {arguments.workers} workers): index "
              f"{figures['index_s']:6.1f} s (built once, reused for every profile) | scoring 1 profile against it "
              f"{figures['score_s']:6.1f} s | sum {total:6.1f} s "
              f"(target < {TARGET_SECONDS} s: {'met' if total < TARGET_SECONDS else 'NOT met'}) | worker peaks "
              f"{', '.join(f'{m / 1024:.2f}' for m in figures['worker_peak_mib'])} GiB (target < {TARGET_GIB} GiB: "
              f"{'met' if worker_gib < TARGET_GIB else 'NOT met'}) | driver peak {figures['driver_peak_mib'] / 1024:.2f} "
              f"GiB | vocabulary {figures['vocabulary'][0]:,} words, {figures['vocabulary'][1]:,} char 4-grams "
              f"| generating the shards {figures['generate_s']:.1f} s (not counted)", flush=True)
    for smaller, larger in zip(rows, rows[1:]):
        factor = larger["papers"] / smaller["papers"]
        print(f"{smaller['papers']:,} -> {larger['papers']:,} papers (x{factor:g}): index x"
              f"{larger['index_s'] / smaller['index_s']:.1f}, score x{larger['score_s'] / smaller['score_s']:.1f}, "
              f"worker peak x{max(larger['worker_peak_mib']) / max(smaller['worker_peak_mib']):.1f}, "
              f"driver peak x{larger['driver_peak_mib'] / smaller['driver_peak_mib']:.1f}")


if __name__ == "__main__":
    main()
