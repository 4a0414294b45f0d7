"""Train litrank's pre-trained default ranker (``recommender/data/prior-ranker.txt``).

The prior learns, from real author-continuity tasks, how the similarity signals of a
library predict which papers of a new list its owner will write (and so care about). Its
training data are kept disjoint from the benchmark's evaluation years (2010–2019): every
training configuration is from 2009 or earlier, or 2020 and later.

    python -m benchmarks.train_prior                     # about 2 minutes on 2 cores; deterministic
    python -m benchmarks.train_prior --embedder default  # the prior with embedding features

Each configuration contributes both tracks (text only, and authors with the author's own name
removed); a third of the tasks also lose their candidates' titles, as in abstract-only lists.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

import connectors
from benchmarks.author_continuity import DEFAULT_CONFERENCES
from recommender.evaluation.author_continuity import CONFIGS, build_tasks
from recommender.evaluation.shared_representations import SharedRepresentations
from recommender.features.representations import RepresentationBuilder
from recommender.models.lightgbm_ranker import LightGBMRanker
from recommender.models.signals import candidate_features, feature_names

# venue, history years, target year: none of the years 2010–2019 the benchmark evaluates on.
TRAINING_CONFIGS = {
    "nips2009": ("NeurIPS", range(2001, 2009), 2009),
    "nips2004": ("NeurIPS", range(1996, 2004), 2004),
    "aistats2025": ("AISTATS", range(2020, 2025), 2025),
    "uai2024": ("UAI", range(2020, 2024), 2024),
    "colt2024": ("COLT", range(2020, 2024), 2024),
    "ijcai2024": ("IJCAI", range(2020, 2024), 2024),
    "wacv2025": ("WACV", range(2020, 2025), 2025),
    "corl2025": ("CORL", range(2021, 2025), 2025),
}
DATA = Path(__file__).resolve().parents[1] / "recommender" / "data"
MAX_NEGATIVES = 400
PRIOR_PARAMS = dict(n_estimators=200, learning_rate=0.05, num_leaves=7, min_child_samples=100)


def training_matrix(conferences: Path, configs: dict, seed: int = 0, verbose: bool = True, embedder=None):
    """Features, labels and groups of every task of ``configs`` (both tracks)."""
    CONFIGS.update(configs)
    rng = np.random.default_rng(seed)
    Xs, ys, groups = [], [], []
    for config in configs:
        for track in ("text", "authors"):
            started = time.perf_counter()
            tasks = build_tasks(conferences, config, track, read=connectors.load)
            if not tasks:
                continue
            shared = SharedRepresentations([task.library for task in tasks], tasks[0].collection,
                                           RepresentationBuilder(embedder=embedder))
            for index, task in enumerate(tasks):
                rep = shared.for_task(task.library, task.collection)
                n = len(task.library)
                rows = np.arange(n, n + len(task.collection))
                relevant = np.array([paper.id in task.relevant for paper in task.collection])
                negatives = np.flatnonzero(~relevant)
                if len(negatives) > MAX_NEGATIVES:
                    negatives = np.sort(rng.choice(negatives, MAX_NEGATIVES, replace=False))
                chosen = np.concatenate([np.flatnonzero(relevant), negatives])
                if index % 3 == 2 and "title" in rep.blocks:
                    # Abstract-only lists (the ICML 2026 pages) have no real titles: teach that case.
                    rep.blocks["title"][n:] = 0.0
                    rep.vectors["title"] = rep.vectors["title"].multiply(np.r_[np.ones(n), np.zeros(len(rows))][:, None]).tocsr()
                Xs.append(candidate_features(rep, rows[chosen], np.arange(n), task.library, embedder is not None))
                ys.append(relevant[chosen].astype(int))
                groups.append(len(chosen))
            if verbose:
                print(f"{config} {track}: {len(tasks)} tasks in {time.perf_counter() - started:.1f}s", flush=True)
    return np.vstack(Xs), np.concatenate(ys), groups


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES)
    parser.add_argument("--embedder", default=None,
                        help="train the prior with embedding features ('default' = all-MiniLM-L6-v2; needs the extra)")
    parser.add_argument("--output", type=Path, default=None,
                        help="default: recommender/data/prior-ranker.txt (prior-ranker-embeddings.txt with --embedder)")
    args = parser.parse_args(argv)
    embedder = None
    if args.embedder:
        from recommender.models.embeddings import DEFAULT_EMBEDDER, SentenceEmbedder

        embedder = SentenceEmbedder(DEFAULT_EMBEDDER if args.embedder == "default" else args.embedder)
    output = args.output or DATA / ("prior-ranker-embeddings.txt" if embedder else "prior-ranker.txt")
    if not args.conferences.is_dir():
        print(f"conference data not found at {args.conferences}", file=sys.stderr)
        return 2
    X, y, groups = training_matrix(args.conferences, TRAINING_CONFIGS, embedder=embedder)
    print(f"training on {len(groups)} tasks, {len(y)} rows, {int(y.sum())} positives", flush=True)
    ranker = LightGBMRanker(**PRIOR_PARAMS).fit(X, y, groups, feature_names(embedder is not None))
    ranker.save(output)
    digest = hashlib.sha256(output.read_bytes()).hexdigest()[:16]
    print(f"wrote {output} ({output.stat().st_size / 1024:.0f} KiB, sha256 {digest})")
    importance = ranker.booster_.feature_importance("gain")
    for name, gain in sorted(zip(ranker.feature_names_, importance), key=lambda item: -item[1])[:10]:
        print(f"  {name:18s} {gain:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
