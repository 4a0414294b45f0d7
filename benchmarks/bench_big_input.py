"""Big input: a generated BibTeX library of ~200 MB, and a 50,000-paper collection, end to end.

    python -m benchmarks.bench_big_input                   # 200 MB library, 50,000-paper collection
    python -m benchmarks.bench_big_input --bib-mb 20 --collection 10000

Each stage runs as its own ``litrank`` process (its own peak RSS: VmHWM, polled), so
the figures are what a user's machine would see:

* ranking a 50,000-paper collection against a 500-paper library;
* reading the library alone (``litrank fetch big.bib -o big.jsonl``): parse time and peak
  memory against the file's size (the target is < 4x the file size);
* ranking 5 papers against that whole library (``litrank rank -l big.bib``).

Inputs are generated from the shared conference abstracts (``../shared/data/conferences``) in a
temporary directory and deleted afterwards; nothing is committed.
"""
from __future__ import annotations

import argparse
import itertools
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import connectors
from benchmarks.author_continuity import DEFAULT_CONFERENCES

# Above this many library papers the ranking stage is skipped: see the message it prints.
MAX_RANKED_LIBRARY = 20000


def conference_papers(conferences: Path):
    for path in sorted(conferences.glob("*.jsonl.gz")):
        yield from connectors.load(path)


def write_big_bib(path: Path, megabytes: float, papers) -> int:
    """Write BibTeX entries cycling through ``papers`` (keys made unique) until the file has the size."""
    target, written, count = megabytes * 1024 * 1024, 0, 0
    with path.open("w", encoding="utf-8") as handle:
        for round_, paper in zip(itertools.count(), itertools.cycle(papers)):
            text = connectors.dumps([paper], "bibtex").replace("{", f"{{b{round_}", 1)
            handle.write(text + "\n")
            written += len(text.encode("utf-8")) + 1
            count += 1
            if written >= target:
                break
    return count


def _high_water_mib(pid: int) -> float | None:
    """The process's peak RSS so far (VmHWM of its current program), None once it has exited."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_measured(command: list[str], timeout: float | None = None) -> tuple[float, float, bool]:
    """Wall seconds, the child's own peak RSS in MiB, and whether it finished within ``timeout``.

    The peak is the child's VmHWM, read every 50 ms: getrusage's ru_maxrss would also count
    the pages the child shared with this (large) benchmark process between fork and exec.
    """
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        peak, finished = 0.0, True
        while child.poll() is None:
            peak = max(peak, _high_water_mib(child.pid) or 0.0)
            if timeout and time.perf_counter() - started > timeout:
                child.kill()
                child.wait()
                finished = False
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        if finished and child.returncode != 0:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed: {errors.read().decode(errors='replace').strip()[-500:]}")
    return seconds, peak, finished


def _took(seconds: float, done: bool) -> str:
    return f"{seconds:.1f} s" if done else f"not done after {seconds:.0f} s (stopped)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bib-mb", type=float, default=200.0)
    parser.add_argument("--collection", type=int, default=50000)
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a stage may take before it is stopped")
    args = parser.parse_args(argv)
    litrank = Path(sys.executable).with_name("litrank")
    if not litrank.exists() or not args.conferences.is_dir():
        print("needs the installed litrank command and ../shared/data/conferences", file=sys.stderr)
        return 2
    papers = list(conference_papers(args.conferences))
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small = tmp / "five.jsonl"
        connectors.dump(rng.sample(papers, 5), small)
        library = tmp / "library.bib"
        connectors.dump(rng.sample(papers, 500), library)
        collection = tmp / "collection.jsonl"
        pool = [p for p in papers]
        rng.shuffle(pool)
        connectors.dump(list(itertools.islice(itertools.cycle(pool), args.collection)), collection)
        base = [str(litrank), "-q", "rank", "--embedder", "none", "--no-feedback", "-n", "20", "--format", "jsonl"]
        seconds, peak, done = run_measured(base + ["-l", str(library), "-c", str(collection)], args.timeout)
        print(f"rank {args.collection:,} papers x 500-paper library: {_took(seconds, done)}, peak RSS {peak:,.0f} MiB")
        big = tmp / "big.bib"
        entries = write_big_bib(big, args.bib_mb, papers)
        size_mb = big.stat().st_size / 1024 / 1024
        # Reading alone: `litrank fetch` reads any file litrank reads and writes it back as JSONL.
        tiny = tmp / "five.bib"
        connectors.dump(connectors.load(small), tiny)
        _, baseline, _ = run_measured([str(litrank), "-q", "fetch", str(tiny), "-o", str(tmp / "five-out.jsonl")])
        seconds, peak, done = run_measured([str(litrank), "-q", "fetch", str(big), "-o", str(tmp / "big.jsonl")],
                                           args.timeout)
        print(f"read a {size_mb:,.0f} MB BibTeX library ({entries:,} entries), write it as JSONL: "
              f"{_took(seconds, done)}, peak RSS {peak:,.0f} MiB ({peak / size_mb:.1f}x the file; target < 4x); "
              f"{peak - baseline:,.0f} MiB more than for a 5-entry file ({(peak - baseline) / size_mb:.1f}x the file)")
        if entries > MAX_RANKED_LIBRARY:
            print(f"the same library ranked against 5 papers: skipped ({entries:,} library papers; the ranker keeps "
                  f"a library x library similarity block, n^2 memory: ~{8 * entries ** 2 / 2 ** 30:,.0f} GiB a block)")
            return 0
        seconds, peak, done = run_measured(base + ["-l", str(big), "-c", str(small)], args.timeout)
        print(f"the same library ranked against 5 papers: {_took(seconds, done)}, peak RSS {peak:,.0f} MiB "
              f"({peak / size_mb:.1f}x the file)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
