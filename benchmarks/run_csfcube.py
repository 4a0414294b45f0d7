"""CSFCube benchmark: every method on expert relevance judgements, the README's tables in one run.

    python -m benchmarks.run_csfcube                       # with embeddings when the extra is installed
    python -m benchmarks.run_csfcube --embedder none --output benchmarks/results/csfcube.json
    python -m benchmarks.run_csfcube --diversity 0,0.05,0.1,0.15,0.3   # also what `rank --diversity D` delivers
    python -m benchmarks.run_csfcube --static none           # without the static embedder's two methods

Runs ``litrank evaluate --benchmark csfcube``'s protocol (:mod:`recommender.evaluation.human_judgements`) on
all 50 query-facets, then prints, as Markdown, ``fold1_test`` (the reported fold; litrank's
weights were chosen on ``fold1_dev``) for all facets and per facet, and ``fold1_dev`` and all 50
for all facets. With the static embedder (:mod:`recommender.models.static_embeddings`, numpy and
``tokenizers`` only) it also runs ``static`` (its plain cosine) and ``hybrid+static`` (the hybrid with
it as the dense channel) on the same pools, and prints both embedders' speed.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from connectors import SourceError
from connectors.files import csfcube
from recommender.evaluation.human_judgements import (
    EMBEDDING_METHODS,
    FACETS,
    LEXICAL_METHODS,
    evaluate_csfcube,
    evaluate_delivered,
    summary,
)
from recommender.models.hybrid import HybridModel

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "csfcube"
FOLDS = ("fold1_test", "fold1_dev", "all")
STATIC_METHODS = {"embedding": "static", "hybrid+embeddings": "hybrid+static"}


def embed_speed(embedder, texts: list[str]) -> float:
    """Texts per second of ``embedder.embed(texts)`` (a warm-up text first: loading is not counted)."""
    embedder.embed(["warm-up"])
    started = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - started)


def speed_line(data, embedder, static, n_dense: int = 256) -> str:
    """Both embedders' throughput on CSFCube's title + abstract texts: the static one on all of them,
    the sentence-transformers one on ``n_dense`` through an empty cache (its real cache would answer)."""
    import tempfile

    texts = [paper.text for _, paper in sorted(data.papers.items())]
    parts = [f"static {embed_speed(static, texts):,.0f} texts/s ({len(texts)} texts)"]
    if embedder is not None:
        from recommender.models.embeddings import SentenceEmbedder

        with tempfile.TemporaryDirectory() as cache:
            fresh = SentenceEmbedder(embedder.model, cache_dir=cache)
            parts.append(f"{embedder.model_id} {embed_speed(fresh, texts[:n_dense]):,.0f} texts/s "
                         f"({n_dense} texts, empty cache)")
            fresh.close()
    return "Embedding speed: " + "; ".join(parts)


def markdown(by_fold: dict, counts: dict) -> str:
    test = by_fold["fold1_test"]
    lines = [f"fold1_test ({counts['fold1_test']} query-facets), NDCG%20 / MAP:", "",
             "| method | all | background | method | result |", "| --- | --- | --- | --- | --- |"]
    for method, values in test.items():
        cells = [f"{values[f]['ndcg%20']:.3f} / {values[f]['map']:.3f}" for f in ("all", *FACETS)]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += ["", "All facets, NDCG%20 / MAP, on each fold:", "",
              "| method | " + " | ".join(f"{fold} ({counts[fold]})" for fold in FOLDS) + " |",
              "|" + " --- |" * (len(FOLDS) + 1)]
    for method in test:
        cells = [f"{by_fold[fold][method]['all']['ndcg%20']:.3f} / {by_fold[fold][method]['all']['map']:.3f}"
                 for fold in FOLDS]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def delivered_by_diversity(data, embedder, diversities: list[float]) -> dict[str, dict]:
    """``{D: {fold: {"ndcg%20", "map"}}}``: all facets, for the order `litrank rank --diversity D`
    delivers (hybrid, with the embedder when given): the diversity re-ordering is part of what
    users get, and the protocol above ranks by the scores alone."""
    out: dict[str, dict] = {}
    for diversity in diversities:
        scores = evaluate_delivered(data, data.query_facets(), lambda: HybridModel(embedder=embedder), diversity)
        out[f"{diversity:g}"] = {fold: summary({"hybrid": scores}, data.query_facets(None if fold == "all" else fold))
                                 ["hybrid"]["all"] for fold in FOLDS}
    return out


def diversity_markdown(delivered: dict[str, dict], label: str) -> str:
    lines = [f"What `rank` delivers ({label}, its diversity re-ordering included), all facets, NDCG%20 / MAP:", "",
             "| --diversity | " + " | ".join(FOLDS) + " |", "|" + " --- |" * (len(FOLDS) + 1)]
    for diversity, by_fold in delivered.items():
        lines.append(f"| {diversity} | " + " | ".join(f"{by_fold[fold]['ndcg%20']:.3f} / {by_fold[fold]['map']:.3f}"
                                                   for fold in FOLDS) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the CSFCube directory")
    parser.add_argument("--embedder", default="auto",
                        help="'auto' (the bundled model when the extra is installed), 'none', a name or a path")
    parser.add_argument("--output", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--diversity", default="",
                        help="comma-separated --diversity values: also print what `rank` delivers at each")
    parser.add_argument("--static", default="auto",
                        help="'auto' (the bundled static table), 'none', or a folder written by "
                             "benchmarks/distil_static_embedder.py")
    args = parser.parse_args(argv)
    try:
        data = csfcube.load(args.data)
    except SourceError as exc:
        print(exc, file=sys.stderr)
        return 2
    embedder = None
    if args.embedder != "none":
        from recommender.models.embeddings import EmbeddingsUnavailable, SentenceEmbedder, embeddings_available

        if embeddings_available():
            try:
                embedder = SentenceEmbedder("default" if args.embedder == "auto" else args.embedder)
            except EmbeddingsUnavailable as exc:
                print(exc, file=sys.stderr)
                return 2
        elif args.embedder != "auto":
            print("--embedder needs the optional extra: pip install 'litrank[embeddings]'", file=sys.stderr)
            return 2
    methods = list(LEXICAL_METHODS) + (list(EMBEDDING_METHODS) if embedder is not None else [])
    started = time.perf_counter()
    results = evaluate_csfcube(data, methods, data.query_facets(), embedder=embedder)
    static = None
    if args.static != "none":
        from recommender.models.static_embeddings import StaticEmbedder

        static = StaticEmbedder(None if args.static == "auto" else args.static)
        methods += list(STATIC_METHODS.values())
        extra = evaluate_csfcube(data, list(STATIC_METHODS), data.query_facets(), embedder=static)
        results.update({STATIC_METHODS[method]: scores for method, scores in extra.items()})
    seconds = time.perf_counter() - started
    folds = {fold: data.query_facets(None if fold == "all" else fold) for fold in FOLDS}
    by_fold = {fold: summary(results, pairs) for fold, pairs in folds.items()}
    counts = {fold: len(pairs) for fold, pairs in folds.items()}
    print(markdown(by_fold, counts))
    print(f"\n{len(methods)} methods on {counts['all']} query-facets in {seconds:.0f} s"
          + (f" (embedder {embedder.model_id})" if embedder is not None else " (no embedder)")
          + (f", static embedder {static.model_id}" if static is not None else ""))
    if static is not None:
        print(speed_line(data, embedder, static))
    delivered = None
    if args.diversity:
        delivered = delivered_by_diversity(data, embedder, [float(value) for value in args.diversity.split(",")])
        print("\n" + diversity_markdown(delivered, "hybrid+embeddings" if embedder is not None else "hybrid"))
    if args.output:
        payload = {"benchmark": "csfcube", "tuned_on": "fold1_dev", "query_facets": counts,
                   "embedder": embedder.model_id if embedder is not None else None,
                   "static_embedder": static.model_id if static is not None else None, "folds": by_fold}
        if delivered is not None:
            payload["delivered_by_diversity"] = delivered
        args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
