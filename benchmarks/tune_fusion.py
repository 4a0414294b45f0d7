"""A grid of HybridModel fusion settings on CSFCube's tuning fold, single-query and composite
libraries together, one embedder at a time.

    python -m benchmarks.tune_fusion --embedder auto   --output benchmarks/results/tune_fusion_minilm.json
    python -m benchmarks.tune_fusion --embedder static --output benchmarks/results/tune_fusion_static.json
    python -m benchmarks.tune_fusion --embedder none   --output benchmarks/results/tune_fusion_none.json
    python -m benchmarks.tune_fusion --fold fold1_test --grid "aggregation=1,profile_weight=0"  # report a choice
    python -m benchmarks.tune_fusion --grid "aggregation=auto|topics|log2;column_scale=library|own" \
        --output benchmarks/results/tune_depth_fold1_dev_minilm.json
    python -m benchmarks.tune_fusion --short-lists --grid "column_prior=0|300|1000"   # 16 candidates a list
    python -m benchmarks.tune_fusion --grid "dense_depth=1|2|3|None"   # None: the channels summed first
    python -m benchmarks.tune_fusion --topics 8-12 --title-only 0.5 --grid ""   # 25-85 papers, half titles alone

Each task (a query paper and its pool, a composite library or a publication list and its
collection, see :mod:`recommender.evaluation.composite`) is indexed once; every setting of the grid is then
fitted on that index, so the settings differ only in the fusion. TF-IDF and the plain dense
cosine (best and top-3 mean over the library papers) run on the same tasks as baselines.
Measures only: choosing from it is done by hand, on ``fold1_dev``, and reported on ``fold1_test``.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from connectors.files import csfcube
from recommender.evaluation import composite, short_lists
from recommender.evaluation.holdout import score_tfidf_max, top_mean_cosine
from recommender.evaluation.human_judgements import average_precision, ndcg_at_share
from recommender.features.collection_index import CollectionIndexBuilder
from recommender.models.embeddings import resolve_embedder
from recommender.models.hybrid import HybridModel
from recommender.models.index_fit import fit_on_index

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "csfcube"
DEFAULT_GRID = "aggregation=auto|topics|log2|1;profile_weight=3|1|0;dense_weight=0.5|1|1.5"


def parse_grid(text: str) -> list[dict]:
    """``"a=1|2;b=x"`` -> every combination, as HybridModel keyword settings."""
    axes = []
    for part in filter(None, (p.strip() for p in text.replace(",", ";").split(";"))):
        name, values = part.split("=", 1)
        axes.append([(name, _value(v)) for v in values.split("|")])
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def _value(text: str):
    if text == "None":  # dense_depth=None, say
        return None
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def tasks(data, fold: str, topics: tuple[int, int] | None = None) -> list[tuple[str, list[str], dict[str, int]]]:
    """(kind, library ids, grades of the collection) for every single query-facet and composite library,
    or, with ``topics``, only publication lists of that many topics (researcher-sized: 25-85 papers
    for 8-12 topics)."""
    if topics is not None:
        return [(f"{library.shape} lists", list(library.library), dict(library.grades))
                for library in composite.build_publication_libraries(data, fold, topics=topics)]
    out = []
    for query, facet in data.query_facets(fold):
        grades = data.pool(query, facet)
        out.append(("single", [query], dict(grades)))
    for library in composite.build_libraries(data, fold):
        out.append(("composite", list(library.library), dict(library.grades)))
    for library in composite.build_publication_libraries(data, fold):
        out.append((f"{library.shape} lists", list(library.library), dict(library.grades)))
    return out


def metrics(collection_ids: list[str], scores, grades: dict[str, int]) -> tuple[float, float]:
    order = sorted(range(len(collection_ids)), key=lambda i: (-float(scores[i]), collection_ids[i]))
    ranked = [collection_ids[i] for i in order]
    return ndcg_at_share(ranked, grades), average_precision(ranked, grades)


def without_abstract(paper, share: float):
    """``paper`` with its abstract left out, for a seeded ``share`` of papers (by id): a library
    as BibTeX files and Zotero often hold one, many items a title alone."""
    if share <= 0 or zlib.crc32(paper.id.encode("utf-8")) % 1000 >= share * 1000:
        return paper
    return dataclasses.replace(paper, abstract="")


def embed(embedder, vectors: dict[str, np.ndarray], papers) -> np.ndarray:
    """The papers' embeddings, shape (n_papers, dim), each text embedded once a run."""
    missing = [text for text in dict.fromkeys(p.text for p in papers) if text not in vectors]
    if missing:
        for text, vector in zip(missing, embedder.embed(missing)):
            vectors[text] = np.asarray(vector)
    return np.stack([vectors[p.text] for p in papers])


def run(data, fold: str, embedder, grid: list[dict], topics: tuple[int, int] | None = None,
        title_only: float = 0.0) -> dict:
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}

    def record(kind: str, name: str, value: tuple[float, float]) -> None:
        results.setdefault(name, {}).setdefault(kind, []).append(value)

    builder = CollectionIndexBuilder(use_char=True, embedder=embedder)
    vectors: dict[str, np.ndarray] = {}
    for kind, library_ids, grades in tasks(data, fold, topics):
        collection_ids = sorted(grades)
        library = [without_abstract(data.papers[i], title_only) for i in library_ids]
        collection = [data.papers[i] for i in collection_ids]
        record(kind, "tfidf", metrics(collection_ids, score_tfidf_max(library, collection), grades))
        if embedder is not None:
            lib_v, col_v = embed(embedder, vectors, library), embed(embedder, vectors, collection)
            for k, name in ((1, "dense max"), (3, "dense top3")):
                record(kind, name, metrics(collection_ids, top_mean_cosine(lib_v, col_v, k), grades))
        index = builder.build(collection)
        for settings in grid:
            model = HybridModel(embedder=embedder, **settings)
            scores = fit_on_index(model, index, library).scores_
            record(kind, label(settings), metrics(collection_ids, scores, grades))
    return {name: {kind: [round(float(np.mean([v[j] for v in values])), 4) for j in (0, 1)]
                   for kind, values in kinds.items()} for name, kinds in results.items()}


def large_short_lists(data, fold: str, topics: tuple[int, int]) -> list[short_lists.ShortList]:
    """Short lists drawn as :func:`short_lists.build_short_lists` draws them, from the publication
    lists of ``topics`` topics only."""
    return short_lists.draw_short_lists([(library.name, library.shape, tuple(library.library), dict(library.grades))
                                         for library in composite.build_publication_libraries(data, fold,
                                                                                              topics=topics)])


def run_short(data, fold: str, embedder, grid: list[dict], topics: tuple[int, int] | None = None,
              title_only: float = 0.0) -> dict:
    """The grid and the baselines on the fold's short lists (:mod:`recommender.evaluation.short_lists`):
    each list the whole collection, indexed on its own; ``{name: {kind: [loss]}}``."""
    results: dict[str, dict[str, list[float]]] = {}
    builder = CollectionIndexBuilder(use_char=True, embedder=embedder)
    vectors: dict[str, np.ndarray] = {}
    found_lists = short_lists.build_short_lists(data, fold) if topics is None else large_short_lists(data, fold, topics)
    for short in found_lists:
        library_ids, candidate_ids = list(short.library), list(short.candidates)
        library = [without_abstract(data.papers[i], title_only) for i in library_ids]
        collection = [data.papers[i] for i in candidate_ids]
        found = {"tfidf": score_tfidf_max(library, collection)}
        if embedder is not None:
            lib_v, col_v = embed(embedder, vectors, library), embed(embedder, vectors, collection)
            found["dense max"], found["dense top3"] = top_mean_cosine(lib_v, col_v, 1), top_mean_cosine(lib_v, col_v, 3)
        index = builder.build(collection)
        for settings in grid:
            found[label(settings)] = fit_on_index(HybridModel(embedder=embedder, **settings), index, library).scores_
        for name, scores in found.items():
            loss = short_lists.pairwise_loss(candidate_ids, scores, short.grades)
            results.setdefault(name, {}).setdefault(short.kind, []).append(loss)
    return {name: {kind: [round(float(np.mean(values)), 4)] for kind, values in kinds.items()}
            for name, kinds in results.items()}


def label(settings: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in settings.items()) or "default"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fold", default="fold1_dev")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--grid", default=DEFAULT_GRID)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--short-lists", action="store_true",
                        help="Rank the fold's short lists of 16 graded candidates (weighted pairwise loss, lower "
                             "is better) instead of the pools.")
    parser.add_argument("--topics", default=None, metavar="LOW-HIGH",
                        help="Only publication lists of LOW-HIGH topics (8-12: 25-85 papers, a researcher's "
                             "publication list), balanced and main-line.")
    parser.add_argument("--title-only", type=float, default=0.0, metavar="SHARE",
                        help="Leave out the abstracts of this share of the library papers (seeded by id).")
    args = parser.parse_args(argv)
    embedder = resolve_embedder(args.embedder)
    grid = parse_grid(args.grid)
    if embedder is None:  # the dense weight means nothing without an embedder
        grid = [dict(s) for s in {tuple((k, v) for k, v in s.items() if k != "dense_weight") for s in
                                  map(lambda s: s, grid)}]
    started = time.perf_counter()
    data = csfcube.load(args.data)
    topics = tuple(int(n) for n in args.topics.split("-")) if args.topics else None
    table = (run_short if args.short_lists else run)(data, args.fold, embedder, grid, topics, args.title_only)
    seconds = round(time.perf_counter() - started, 1)
    name = getattr(embedder, "model_id", "none")
    if args.short_lists:
        kinds = short_lists.KINDS if topics is None else ("balanced", "main line")
        print(f"{args.fold} short lists, dense channel {name}: weighted pairwise loss, lower is better "
              f"({' | '.join(kinds)} | mean of the {len(kinds)})\n")
        rows = sorted(table.items(), key=lambda item: sum(item[1][kind][0] for kind in kinds))
        for method, found in rows:
            print(f"{method:55s} " + " | ".join(f"{found[kind][0]:.3f}" for kind in kinds)
                  + f" | {sum(found[kind][0] for kind in kinds) / len(kinds):.3f}")
    else:
        kinds = ("single", "composite", "balanced lists", "main line lists")
        kinds = kinds if topics is None else kinds[2:]
        print(f"{args.fold}, dense channel {name}: NDCG%20 / MAP ({' | '.join(kinds)} | mean of the {len(kinds)} NDCG)\n")
        rows = sorted(table.items(), key=lambda item: -sum(item[1][kind][0] for kind in kinds))
        for method, found in rows:
            print(f"{method:55s} " + " | ".join(f"{found[kind][0]:.3f} / {found[kind][1]:.3f}" for kind in kinds)
                  + f" | {sum(found[kind][0] for kind in kinds) / len(kinds):.3f}")
    print(f"\n({len(grid)} settings in {seconds} s)", file=sys.stderr)
    if args.output:
        args.output.write_text(json.dumps({"benchmark": "csfcube-short-grid" if args.short_lists else
                                           "csfcube-fusion-grid", "fold": args.fold, "topics": args.topics,
                                           "title_only": args.title_only,
                                           "embedder": name,
                                           "results": table, "seconds": seconds}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
