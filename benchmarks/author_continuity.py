"""Inspect the author-continuity tasks of a configuration (the benchmark itself lives in
:mod:`recommender.evaluation.author_continuity`; ``litrank evaluate --benchmark author-continuity``
and :mod:`benchmarks.run_author_continuity` run it).

    python -m benchmarks.author_continuity --config icml2019 --track text --show 5
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Sequence

import connectors
from recommender.evaluation.author_continuity import CONFIGS, TRACKS, build_tasks_with_stats, summarize

DEFAULT_CONFERENCES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "conferences"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.author_continuity", description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=[*CONFIGS, "all"], default="icml2019")
    parser.add_argument("--track", choices=[*TRACKS, "both"], default="text")
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES, help="directory of <venue><year>.jsonl.gz files")
    parser.add_argument("--min-history", type=int, default=3)
    parser.add_argument("--min-target", type=int, default=1)
    parser.add_argument("--max-tasks", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, metavar="N", help="also list the first N tasks")
    parser.add_argument("--collapses", action="store_true", help="also list examples of collapsed author spellings")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)

    configs = list(CONFIGS) if args.config == "all" else [args.config]
    tracks = list(TRACKS) if args.track == "both" else [args.track]
    for config in configs:
        for track in tracks:
            tasks, stats = build_tasks_with_stats(
                args.conferences, config, track, args.min_history, args.min_target, args.max_tasks, args.seed,
                read=connectors.load,
            )
            print(summarize(tasks, stats))
            if args.collapses:
                for names in stats.collapse_examples:
                    print("    " + " | ".join(names))
            for task in tasks[: args.show]:
                print(f"    {task.author}: library {len(task.library)}, relevant {sorted(task.relevant)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
