"""Author-continuity benchmark: litrank against today's scoring rules, on real conference data
(the runs themselves: :mod:`recommender.evaluation.author_continuity_runs`).

    python -m benchmarks.run_author_continuity                      # everything (~15 min on 2 cores)
    python -m benchmarks.run_author_continuity --configs icml2019 --max-tasks 60
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import connectors
from benchmarks.author_continuity import DEFAULT_CONFERENCES
from recommender.evaluation.author_continuity import CONFIGS, TRACKS
from recommender.evaluation.author_continuity_runs import DEFAULT_METHODS, markdown, run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--tracks", nargs="+", default=list(TRACKS), choices=list(TRACKS))
    parser.add_argument("--max-tasks", type=int, default=None, help="a seeded sample of authors per config")
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS))
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES)
    parser.add_argument("--output", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--embedder", default=None, help="add embedding features and the recency_cosine_embedding "
                                                         "baseline ('default' = all-MiniLM-L6-v2, needs the extra; "
                                                         "'static' = the bundled static table)")
    args = parser.parse_args(argv)
    embedder = None
    if args.embedder:
        from recommender.models.embeddings import resolve_embedder

        embedder = resolve_embedder(args.embedder)
    try:
        results = run(args.conferences, args.configs, args.tracks, args.methods, args.max_tasks, embedder,
                      progress=lambda line: print(line, flush=True), read=connectors.load)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    print()
    print(markdown(results))
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
