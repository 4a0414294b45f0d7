"""End-to-end speed of ``litrank rank``: a 500-paper library against a 3,000-paper collection.

Runs the installed ``litrank`` command as a subprocess (startup, parsing, features, training,
output: everything a user waits for), for the default hybrid model, the learned model and the
v1 similarity score in the same run, alternating (and ``litrank report``, the hybrid ranking
written as the HTML page with its map), without embeddings (``--embedder none``; the
embedding cost is measured by ``benchmarks.bench_embeddings``), and reports medians and ratios.

    python -m benchmarks.bench_rank_speed [--repeats 3]
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import connectors
from benchmarks.author_continuity import DEFAULT_CONFERENCES

LIBRARY_FILES = ["icml2017.jsonl.gz", "icml2018.jsonl.gz"]
COLLECTION_FILES = ["nips2018.jsonl.gz", "icml2019.jsonl.gz", "iclr2018.jsonl.gz", "aistats2019.jsonl.gz"]


def build_inputs(conferences: Path, directory: Path, n_library: int = 500, n_collection: int = 3000) -> tuple[Path, Path]:
    """A BibTeX library and a JSONL collection of real papers, sampled with a fixed seed."""
    rng = random.Random(0)
    library = [p for name in LIBRARY_FILES for p in connectors.load(conferences / name)]
    collection = [p for name in COLLECTION_FILES for p in connectors.load(conferences / name)]
    library = rng.sample(library, n_library)
    collection = rng.sample(collection, n_collection)
    library_path, collection_path = directory / "library.bib", directory / "collection.jsonl"
    connectors.dump(library, library_path)
    connectors.dump(collection, collection_path)
    return library_path, collection_path


def time_command(command: list[str]) -> float:
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {completed.stderr.strip()}")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES)
    args = parser.parse_args(argv)
    litrank = Path(sys.executable).with_name("litrank")
    if not litrank.exists() or not args.conferences.is_dir():
        print("needs the installed litrank command and ../shared/data/conferences", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        library, collection = build_inputs(args.conferences, Path(tmp))
        base = [str(litrank), "-q", "rank", "-l", str(library), "-c", str(collection), "-n", "20",
                "--format", "jsonl", "--no-feedback", "--embedder", "none"]
        models = {"hybrid": "hybrid", "learned": "learned", "similarity (v1)": "similarity"}
        times: dict[str, list[float]] = {name: [] for name in [*models, "hybrid, HTML report"]}
        report = [str(litrank), "-q", "report", "-l", str(library), "-c", str(collection), "-n", "50",
                  "-o", str(Path(tmp) / "report.html"), "--no-feedback", "--embedder", "none"]
        for _ in range(args.repeats):
            for name, model in models.items():
                times[name].append(time_command(base + ["--model", model]))
            times["hybrid, HTML report"].append(time_command(report))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print("litrank rank, 500-paper library x 3,000-paper collection, end to end "
          f"(median of {args.repeats}):")
    for name, median in medians.items():
        print(f"  {name:16s} {median:6.2f} s   runs: {', '.join(f'{t:.2f}' for t in times[name])}")
    for name in ("hybrid", "learned"):
        print(f"  {name} / v1 ratio: {medians[name] / medians['similarity (v1)']:.2f}")
    print(f"  HTML report (map of 3,500 papers) / hybrid ratio: {medians['hybrid, HTML report'] / medians['hybrid']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
