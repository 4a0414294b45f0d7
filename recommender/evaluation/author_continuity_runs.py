"""Author-continuity benchmark: litrank against today's scoring rules, on real conference data.

For each configuration (ICML 2013–2018 → 2019, NeurIPS 2010–2017 → 2018, ICLR 2017 → 2018)
and track (``text``: no authors anywhere; ``authors``: the author's own name removed from
every paper), every qualifying author's earlier papers are the library and the target
year's full list is the collection; the author's own target-year papers are the relevant
ones. All methods run on the same tasks in the same run.

    python -m benchmarks.run_author_continuity                      # everything (~15 min on 2 cores)
    python -m benchmarks.run_author_continuity --configs icml2019 --max-tasks 60
    litrank evaluate --benchmark author-continuity --data DIR        # the same from the CLI

The conference files are read by the caller's ``read`` (``connectors.load``).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from recommender.evaluation.author_continuity import CONFIGS, TRACKS, Reader, build_tasks
from recommender.evaluation.holdout import BASELINES, METRICS, MethodSummary, method_scores, rank_ids, ranking_metrics
from recommender.evaluation.shared_representations import SharedRepresentations
from recommender.features.representations import RepresentationBuilder
from recommender.models.hybrid import HybridModel
from recommender.models.scoring import LearnedModel, SimilarityModel

REPORTED = ("ndcg@10", "recall@20", "mrr")
# litrank's models (the --model names), computed on the representations shared by all tasks of
# a configuration; the *_lexical variants do without embeddings (they differ only with --embedder).
MODEL_FACTORIES = {"hybrid": HybridModel, "hybrid_lexical": HybridModel, "learned": LearnedModel,
                   "learned_lexical": LearnedModel, "similarity": SimilarityModel}
DEFAULT_METHODS = ["hybrid", "learned", *BASELINES, "similarity"]


# Baselines read no author fields, so both tracks give them identical tasks: the text track's
# results are reused for the authors track (same authors, same order).
_TEXT_ONLY_RESULTS: dict[tuple[str, str, int | None], tuple[MethodSummary, float]] = {}


def run_config(config: str, track: str, conferences: Path, methods: list[str], max_tasks: int | None,
               embedder=None, factories=None, *, read: Reader) -> tuple[dict[str, MethodSummary], dict]:
    """Every method on every task of one configuration and track; ``factories`` overrides
    :data:`MODEL_FACTORIES` (e.g. to compare parameter settings)."""
    factories = {**MODEL_FACTORIES, **(factories or {})}
    started = time.perf_counter()
    tasks = build_tasks(conferences, config, track, max_tasks=max_tasks, read=read)
    shared = SharedRepresentations([task.library for task in tasks], tasks[0].collection,
                                   RepresentationBuilder(embedder=embedder))
    setup = time.perf_counter() - started
    summaries = {method: MethodSummary() for method in methods}
    seconds = {method: 0.0 for method in methods}
    reused = [m for m in methods if m not in factories and (config, m, max_tasks) in _TEXT_ONLY_RESULTS]
    for method in reused:
        summaries[method], seconds[method] = _TEXT_ONLY_RESULTS[(config, method, max_tasks)]
    for index, task in enumerate(tasks):
        for method in methods:
            if method in reused:
                continue
            start = time.perf_counter()
            if method in factories:
                rep = shared.for_task(task.library, task.collection)
                if method not in ("hybrid", "learned"):  # the lexical variants do without embeddings
                    rep.vectors.pop("embedding", None)
                    rep.blocks.pop("embedding", None)
                model = factories[method]()
                n = len(task.library)
                scores = model.fit_representations(rep, np.arange(n), np.arange(n, n + len(task.collection)),
                                                   task.library).scores_
            else:
                scores = method_scores(method, task.library, task.collection, seed=index, embedder=embedder)
            seconds[method] += time.perf_counter() - start
            summaries[method].add(ranking_metrics(rank_ids(task.collection, scores), task.relevant))
    for method in methods:
        if method not in factories:
            _TEXT_ONLY_RESULTS[(config, method, max_tasks)] = (summaries[method], seconds[method])
    info = {"tasks": len(tasks), "collection": len(tasks[0].collection),
            "mean_library": float(np.mean([len(t.library) for t in tasks])),
            "setup_seconds": round(setup, 1), "seconds": {m: round(s, 1) for m, s in seconds.items()}}
    return summaries, info


def markdown(results: dict) -> str:
    columns = [(config, track) for config in results for track in results[config]]
    methods = list(next(iter(next(iter(results.values())).values()))["methods"])
    header = "| method | " + " | ".join(f"{c} {t}: nDCG@10 / R@20 / MRR" for c, t in columns) + " |"
    lines = [header, "|" + " --- |" * (len(columns) + 1)]
    for method in methods:
        cells = []
        for config, track in columns:
            values = results[config][track]["methods"][method]
            cells.append(" / ".join(f"{values[m]['mean']:.3f}" for m in REPORTED))
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(conferences: Path, configs=tuple(CONFIGS), tracks=TRACKS, methods=tuple(DEFAULT_METHODS),
        max_tasks: int | None = None, embedder=None, progress=None, *, read: Reader) -> dict:
    """Every method on every configuration and track: ``{config: {track: {..., "methods": {method:
    {metric: {"mean", "std"}}}}}}``. ``progress`` receives one summary line per configuration and track."""
    methods = list(methods)
    if embedder is not None:
        methods += [m for m in ("hybrid_lexical", "learned_lexical", "recency_cosine_embedding") if m not in methods]
    if not Path(conferences).is_dir():
        raise FileNotFoundError(f"conference data not found at {conferences}")
    results: dict = {}
    for config in configs:
        for track in tracks:
            summaries, info = run_config(config, track, Path(conferences), methods, max_tasks, embedder=embedder,
                                         read=read)
            results.setdefault(config, {})[track] = {
                **info,
                "methods": {m: {metric: {"mean": s.mean(metric), "std": s.std(metric)} for metric in METRICS}
                            for m, s in summaries.items()},
            }
            if progress is not None:
                best = max((m for m in summaries if m not in MODEL_FACTORIES), key=lambda m: summaries[m].mean("ndcg@10"))
                progress(f"{config} {track}: {info['tasks']} tasks, collection {info['collection']}, "
                         f"mean library {info['mean_library']:.1f}; nDCG@10 "
                         + ", ".join(f"{m} {summaries[m].mean('ndcg@10'):.3f}" for m in methods if m in MODEL_FACTORIES)
                         + f" vs best baseline {best} {summaries[best].mean('ndcg@10'):.3f}; seconds {info['seconds']}")
    return results
