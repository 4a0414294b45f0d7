"""Affinity at scale: one profile against generated collections of 10k, 100k and 1M papers, on Dask.

    python -m benchmarks.bench_affinity                          # 10,000 / 100,000 / 1,000,000 papers
    python -m benchmarks.bench_affinity --sizes 10000 100000 --workers 2

Collections are synthesised at run time from the shared conference abstracts
(:mod:`benchmarks.synthetic_collection`, JSON Lines shards of 25,000 papers in a temporary
directory, deleted afterwards). Each size runs in a process of its own, so its peak memory is
its own. On a local Dask cluster of ``--workers`` single-threaded workers (memory limit 4 GiB
each: Dask spills to the worker's disk from half of it), each worker reads its shards and the
collection index is built there partition by partition
(:func:`recommender.partitioned_index.build_partitioned`: only vocabularies come back to this
process); then the example library (one profile, 55 papers) is scored against it. Printed per
size: seconds to index and to score, each worker's peak RSS and this process's (the driver),
and at the end how each grows from one size to the next (ratios of the same run).
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS, TARGET_GIB = 180, 4.0
PARTITION_ROWS = 25_000  # a partition's tokenising peaks at ~1 GiB


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


def measure(size: int, workers: int, shards: int) -> dict:
    """One size, in this process: the figures as a dict."""
    import connectors
    from benchmarks.synthetic_collection import write_collection
    from recommender.affinity import AffinityScorer
    from recommender.cluster import engine
    from recommender.hybrid import HybridModel
    from recommender.partitioned_index import build_partitioned

    figures: dict = {"papers": size}
    profile = {"example": connectors.load(Path(__file__).resolve().parents[1] / "examples" / "diffusion-library.bib")}
    model = HybridModel()
    with tempfile.TemporaryDirectory(prefix="litrank-bench-affinity-") as directory:
        start = time.perf_counter()
        paths = write_collection(Path(directory), size, shards)
        figures["generate_s"] = time.perf_counter() - start
        import dask

        # The 4 GiB target as the workers' limit: Dask spills what a worker holds to its local
        # disk from half of it rather than let the worker grow (never kills it: terminate off).
        with dask.config.set({"distributed.worker.memory.target": 0.5, "distributed.worker.memory.spill": 0.6,
                              "distributed.worker.memory.pause": 0.9, "distributed.worker.memory.terminate": False}), \
                engine(workers=workers, memory_limit=f"{TARGET_GIB}GiB") as runner:
            start = time.perf_counter()
            # Each worker reads its shards and tokenises them; only vocabularies come back here.
            index = build_partitioned(runner, [str(path) for path in paths], use_char=model.char_weight > 0)
            runner.client.wait_for_workers(workers)
            from distributed import wait

            wait(index.parts)
            figures["index_s"] = time.perf_counter() - start
            figures["index_peak_mib"] = _peak_mib()
            figures["vocabulary"] = [len(index.vocabulary.word_terms), len(index.vocabulary.char_terms or ())]
            start = time.perf_counter()
            (result,) = AffinityScorer(model, top=100).score(index, profile, runner)
            figures["score_s"] = time.perf_counter() - start
            figures["worker_peak_mib"] = sorted(runner.client.run(_peak_mib).values())
            figures["partitions"] = len(index.parts)
    figures["best"] = result.paper_ids(index)[0]
    figures["driver_peak_mib"] = _peak_mib()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    shards = lambda size: max(arguments.workers, -(-size // PARTITION_ROWS))  # noqa: E731
    if arguments.one:
        print(json.dumps(measure(arguments.one, arguments.workers, shards(arguments.one))))
        return
    rows = []
    for size in arguments.sizes:
        process = subprocess.run([sys.executable, "-m", "benchmarks.bench_affinity", "--one", str(size),
                                  "--workers", str(arguments.workers)], capture_output=True, text=True)
        if process.returncode:
            print(f"{size:>9,} papers: failed (exit {process.returncode}): {process.stderr.strip()[-400:]}")
            continue
        figures = json.loads(process.stdout.strip().splitlines()[-1])
        rows.append(figures)
        total = figures["index_s"] + figures["score_s"]
        worker_gib = max(figures["worker_peak_mib"]) / 1024
        print(f"{size:>9,} papers ({figures['partitions']} partitions): index on {arguments.workers} workers "
              f"{figures['index_s']:6.1f} s | score 1 profile {figures['score_s']:6.1f} s | index+score {total:6.1f} s "
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
