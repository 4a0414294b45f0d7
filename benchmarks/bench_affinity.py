"""Affinity at scale: one profile against generated collections of 10k, 100k and 1M papers, on Dask.

    python -m benchmarks.bench_affinity                          # 10,000 / 100,000 / 1,000,000 papers
    python -m benchmarks.bench_affinity --sizes 10000 100000 --workers 2

Collections are synthesised at run time from the shared conference abstracts
(:mod:`benchmarks.synthetic_collection`, JSON Lines shards in a temporary directory, deleted
afterwards). Each size runs in a process of its own, so its peak memory is its own: reading the
shards, building the collection index (vocabularies, TF-IDF, BM25, authors: the work shared by
all profiles), then scoring the example library (one profile, 55 papers) on a local Dask cluster
of ``--workers`` single-threaded workers, the collection cut into partitions of 50,000 papers.
Printed per size: seconds per stage, the driver's peak RSS and each worker's, and at the end how
each stage grows from one size to the next (ratios of the same run).
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
    from recommender.affinity import AffinityScorer, partition_bounds
    from recommender.cluster import engine
    from recommender.hybrid import HybridModel

    figures: dict = {"papers": size}
    with tempfile.TemporaryDirectory(prefix="litrank-bench-affinity-") as directory:
        start = time.perf_counter()
        write_collection(Path(directory), size, shards)
        figures["generate_s"] = time.perf_counter() - start
        start = time.perf_counter()
        collection = connectors.load(directory)
        figures["read_s"] = time.perf_counter() - start
    profile = {"example": connectors.load(Path(__file__).resolve().parents[1] / "examples" / "diffusion-library.bib")}
    model = HybridModel()
    start = time.perf_counter()
    index = model.index_builder().set_params(lsa_components=0).build(collection)
    figures["index_s"] = time.perf_counter() - start
    figures["index_peak_mib"] = _peak_mib()
    del collection
    with engine(workers=workers) as runner:
        n_partitions = max(workers, len(partition_bounds(index.n_papers)))
        start = time.perf_counter()
        (result,) = AffinityScorer(model, top=100).score(index, profile, runner, n_partitions)
        figures["score_s"] = time.perf_counter() - start
        figures["worker_peak_mib"] = sorted(runner.client.run(_peak_mib).values())
        figures["partitions"] = n_partitions
    figures["best"] = result.paper_ids(index)[0]
    figures["driver_peak_mib"] = _peak_mib()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    shards = lambda size: max(1, size // 50_000)  # noqa: E731
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
        print(f"{size:>9,} papers: read {figures['read_s']:6.1f} s | index {figures['index_s']:6.1f} s "
              f"(peak {figures['index_peak_mib'] / 1024:.2f} GiB) | score 1 profile on {arguments.workers} workers, "
              f"{figures['partitions']} partitions {figures['score_s']:6.1f} s (worker peaks "
              f"{', '.join(f'{m / 1024:.2f}' for m in figures['worker_peak_mib'])} GiB) | index+score {total:6.1f} s "
              f"(target < {TARGET_SECONDS} s: {'met' if total < TARGET_SECONDS else 'NOT met'}); "
              f"driver peak {figures['driver_peak_mib'] / 1024:.2f} GiB "
              f"(target < {TARGET_GIB} GiB: {'met' if figures['driver_peak_mib'] / 1024 < TARGET_GIB else 'NOT met'})")
    for smaller, larger in zip(rows, rows[1:]):
        factor = larger["papers"] / smaller["papers"]
        print(f"{smaller['papers']:,} -> {larger['papers']:,} papers (x{factor:g}): index x"
              f"{larger['index_s'] / smaller['index_s']:.1f}, score x{larger['score_s'] / smaller['score_s']:.1f}, "
              f"driver peak x{larger['driver_peak_mib'] / smaller['driver_peak_mib']:.1f}")


if __name__ == "__main__":
    main()
