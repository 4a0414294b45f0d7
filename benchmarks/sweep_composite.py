"""How the hybrid fusion behaves as a library grows: a small sweep of HybridModel settings on
CSFCube's composite libraries (``fold1_dev``, the tuning fold), per library-size bucket.

    python -m benchmarks.sweep_composite --output benchmarks/results/csfcube_composite_sweep.json
    python -m benchmarks.sweep_composite --embedder none

Measures only: the defaults are not changed by it. Each variant is ``hybrid+embeddings`` (or
``hybrid`` with ``--embedder none``) with one setting changed; the libraries are those of
``litrank evaluate --benchmark csfcube-composite`` (:mod:`recommender.evaluation.composite`).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from connectors.files import csfcube
from recommender.evaluation import composite
from recommender.models.embeddings import resolve_embedder
from recommender.models.hybrid import HybridModel

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "csfcube"
# name -> HybridModel settings changed from the defaults
VARIANTS = {
    "default": {},
    "dense_weight=0.25": {"dense_weight": 0.25},  # the lexical channel weighs more
    "dense_weight=1.0": {"dense_weight": 1.0},  # ... less
    "aggregation=1": {"aggregation": 1},  # max over library papers (auto: 3 at 5-7 papers, 4 at 8-15, 5 at 16-20)
    "aggregation=2": {"aggregation": 2},
    "feedback_weight=0": {"feedback_weight": 0.0},  # no pseudo-relevance feedback
    "feedback_weight=4": {"feedback_weight": 4.0},  # 4/n instead of 1/n
    "profile_weight=0": {"profile_weight": 0.0},  # no whole-library BM25 profile
    "aggregation=1+profile_weight=0": {"aggregation": 1, "profile_weight": 0.0},
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fold", default="fold1_dev")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    embedder = resolve_embedder(args.embedder)
    data = csfcube.load(args.data)
    libraries = composite.build_libraries(data, args.fold)
    scorers = {name: composite.model_scorer(lambda settings=VARIANTS[name]: HybridModel(embedder=embedder, **settings))
               for name in args.variants.split(",")}
    started = time.perf_counter()
    results = composite.evaluate_composite(data, libraries, list(scorers), extra_scorers=scorers)
    table = composite.summary(results, libraries)
    seconds = round(time.perf_counter() - started, 1)
    groups = list(table)
    print(f"hybrid{'+embeddings' if embedder else ''} variants, {args.fold} composite libraries, NDCG%20 / MAP:\n")
    print("| variant | " + " | ".join(f"{g} ({table[g]['libraries']})" for g in groups) + " |")
    print("|" + " --- |" * (len(groups) + 1))
    for name in scorers:
        print(f"| {name} | " + " | ".join(f"{table[g]['methods'][name]['ndcg%20']:.3f} / "
                                         f"{table[g]['methods'][name]['map']:.3f}" for g in groups) + " |")
    print(f"\n({len(scorers)} variants on {len(libraries)} libraries in {seconds} s)", file=sys.stderr)
    if args.output:
        args.output.write_text(json.dumps({
            "benchmark": "csfcube-composite-sweep", "fold": args.fold, "model": "hybrid",
            "embedder": getattr(embedder, "model_id", None), "variants": {n: VARIANTS[n] for n in scorers},
            "shape": composite.describe(libraries), "results": table, "seconds": seconds}, indent=2) + "\n",
            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
