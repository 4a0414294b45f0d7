"""Ranking quality on researcher-shaped libraries composed from CSFCube's expert judgements.

A real library is a researcher's publication list: 5–200 papers on several topics, not the
one query paper of the CSFCube protocol (:mod:`recommender.evaluation.human_judgements`).
A **composite library** of one fold is built, seeded, from that fold's query-facets:

* query-facets are taken in turn from the fold's facets (shuffled; so neighbouring topics
  differ in facet), never two of the same query paper, until the library reaches its target
  size (targets spread evenly over 5–20); at least two query papers per library;
* each query paper comes with some of its grade-3 candidates (the researcher's own papers on
  that topic): half of them, rounded up, when it has two or more, none when it has one, so
  that every topic keeps grade-3 candidates to find;
* the **collection** is the union of the chosen query-facets' pools, without the library's papers;
* each candidate is judged by its **best grade against any query-facet of the library**
  (0 when it was pooled but never graded above 0).

A **publication list** (:func:`build_publication_libraries`) is the other end of real
libraries: 3–6 topics of several papers each, as a researcher's own papers are. Every other
list is **balanced**: each topic a query paper with half (rounded up) of its grade-2 and
grade-3 candidates, from query-facets with at least :data:`PUBLICATION_MIN_RELEVANT` of them.
The others have **a main line and side interests**: the first topic takes three quarters
(rounded up) of its grade-2+ candidates (from a query-facet with at least
:data:`MAIN_TOPIC_MIN_RELEVANT`), each further topic its query paper and one of them.
Collection and judgements as above.

Libraries of a fold (``fold1_dev``: for tuning; ``fold1_test``: for reporting) use only that
fold's query-facets. Metrics are the protocol's NDCG%20 (cut at 20% of the collection) and MAP
(grade >= 2 relevant), averaged over the libraries, and per library-size bucket
(:data:`BUCKETS`); main-line lists also on each side of them, the main topic's judgements
alone and the side topics' alone (:func:`main_line_sides`). Methods, all on the same
libraries in the same run:

``random``, ``bm25``, ``tfidf``  as in the single-query protocol (``tfidf``: the best cosine
                                 over the library papers; ``bm25``: the library as one query)
``similarity``, ``learned``      litrank v1 and the LightGBM ranker (not in the default set)
``hybrid``                       litrank's default, lexical only
``embedding``                    sentence-embedding cosine, the best over the library papers
``embedding-top3``               the mean of a candidate's 3 best cosines to library papers
``hybrid+embeddings``            the default with the embedder
``static``, ``hybrid+static``    the default install's dense channel (the static table): its best
                                 cosine, and the default ranking with it (not with ``--embedder static``,
                                 where the embedding methods are these)

The data arrives from the caller (an object with ``papers``, ``pool(query, facet)`` and
``query_facets(fold)``, as :class:`connectors.files.csfcube.CSFCube` has).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

# The scorers are holdout's (library, collection) ones, which the single-query protocol shares.
from recommender.evaluation.holdout import Scorer, default_install_methods, model_scorer, top_mean_cosine  # noqa: F401
from recommender.evaluation.holdout import library_scorers as method_scorers
from recommender.evaluation.human_judgements import (
    CUTOFF_SHARE,
    METRICS,
    average_precision,
    ndcg_at_share,
    paired_lead,
)

SIZES = (5, 20)
# Publication lists: topics per library (cycled through) and the grade-2+ candidates a
# query-facet needs to be one of their topics (half join the library, half are left to find).
PUBLICATION_TOPICS = (3, 6)
PUBLICATION_MIN_RELEVANT = 6
MAIN_TOPIC_MIN_RELEVANT = 12
PUBLICATIONS_PER_FOLD = 20
BUCKETS = ((5, 8), (9, 14), (15, 20))
LIBRARIES_PER_FOLD = 30
MIN_QUERIES = 2
OWN_GRADE = 3
LEXICAL_METHODS = ("random", "bm25", "tfidf", "hybrid")
EMBEDDING_METHODS = ("embedding", "embedding-top3", "hybrid+embeddings")
OTHER_METHODS = ("similarity", "learned", "learned+embeddings")
# The default's rows (words alone, the default install, with the extra) and the baselines
# their leads are measured against, library by library (:func:`leads`).
DEFAULT_ROWS = ("hybrid", "hybrid+static", "hybrid+embeddings")
LEAD_BASELINES = ("tfidf", "static", "embedding", "embedding-top3")
# What a main-line list's ranking gives each side of the list (:func:`topic_sides`): NDCG%20
# against the main topic's judgements alone and against the side topics' alone, and how much
# of the cut (the first 20%) the main topic's pool takes.
SIDE_METRICS = ("ndcg%20 main topic", "ndcg%20 side topics", "cut from main pool")

@dataclass(frozen=True)
class CompositeLibrary:
    """One researcher-shaped library and its judged collection.

    Attributes
    ----------
    name : str
        ``"<fold>#<number>"``.
    fold : str
    query_facets : tuple of (query id, facet)
        The topics, in the order they were drawn.
    library : tuple of str
        The library's paper ids: each query paper followed by its own papers.
    grades : dict of str to int
        Every collection paper's best grade against the library's query-facets.
    shape : str
        ``"topics"`` (a composite library), ``"balanced"`` or ``"main line"`` (publication lists).
    """

    name: str
    fold: str
    query_facets: tuple[tuple[str, str], ...]
    library: tuple[str, ...]
    grades: dict[str, int]
    shape: str = "topics"

    @property
    def size(self) -> int:
        return len(self.library)

    @property
    def collection(self) -> list[str]:
        return sorted(self.grades)


def own_paper_count(n_grade3: int) -> int:
    """How many of a query's grade-3 candidates join the library: half, rounded up, of two or
    more (at least one is always left to find); none of one."""
    return (n_grade3 + 1) // 2 if n_grade3 >= 2 else 0


def target_sizes(count: int, sizes: tuple[int, int] = SIZES) -> list[int]:
    """``count`` library sizes spread evenly over ``sizes`` (inclusive)."""
    low, high = sizes
    return [low + (i * (high - low + 1)) // count for i in range(count)]


def _facet_round_robin(pairs: Sequence[tuple[str, str]], rng: np.random.Generator) -> list[tuple[str, str]]:
    """The pairs shuffled within each facet, then taken from the facets in turn (the facets'
    order shuffled too)."""
    by_facet: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        by_facet.setdefault(pair[1], []).append(pair)
    facets = sorted(by_facet)
    queues = [[by_facet[f][i] for i in rng.permutation(len(by_facet[f]))] for f in (facets[i] for i in
                                                                                     rng.permutation(len(facets)))]
    order = []
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return order


def best_grades(data, query_facets: Sequence[tuple[str, str]], library: Sequence[str]) -> dict[str, int]:
    """Every paper pooled for the ``query_facets`` and not in the ``library``, with its best grade
    against any of them."""
    members = set(library)
    grades: dict[str, int] = {}
    for query, facet in query_facets:
        for paper, grade in data.pool(query, facet).items():
            if paper not in members:
                grades[paper] = max(grades.get(paper, 0), int(grade))
    return grades


def topic_sides(data, library: CompositeLibrary) -> tuple[dict[str, int], dict[str, int]]:
    """A main-line list's judgements split by side: the grades against its main (first)
    query-facet alone, and the best grades against its side query-facets; each over the papers
    of those pools, none of the library's."""
    main, *side = library.query_facets
    return best_grades(data, [main], library.library), best_grades(data, side, library.library)


def side_metrics(ranked: Sequence[str], main: Mapping[str, int], side: Mapping[str, int]) -> dict[str, float]:
    """:data:`SIDE_METRICS` of a ranking of a main-line list's collection (``main`` and ``side``:
    :func:`topic_sides`)."""
    cut = ranked[:int(CUTOFF_SHARE * len(ranked))]
    return {"ndcg%20 main topic": ndcg_at_share(ranked, main), "ndcg%20 side topics": ndcg_at_share(ranked, side),
            "cut from main pool": sum(paper in main for paper in cut) / len(cut) if cut else 0.0}


def build_library(data, fold: str, pairs: Sequence[tuple[str, str]], target: int, rng: np.random.Generator,
                  name: str, min_queries: int = MIN_QUERIES) -> CompositeLibrary:
    """One composite library of about ``target`` papers from the fold's ``pairs`` (see the module docstring)."""
    library: list[str] = []
    chosen: list[tuple[str, str]] = []
    for query, facet in _facet_round_robin(pairs, rng):
        if query in library:  # the same paper under another facet, or already someone's own paper
            continue
        reserve = max(0, min_queries - len(chosen) - 1)  # room kept for the query papers still needed
        if len(library) + 1 + reserve > target:
            break
        library.append(query)
        chosen.append((query, facet))
        pool = data.pool(query, facet)
        own = sorted(paper for paper, grade in pool.items() if grade >= OWN_GRADE)
        take = min(own_paper_count(len(own)), target - len(library) - reserve)
        free = [paper for paper in (own[i] for i in rng.permutation(len(own))) if paper not in library]
        library.extend(free[:max(0, take)])
        if len(library) >= target and len(chosen) >= min_queries:
            break
    return CompositeLibrary(name, fold, tuple(chosen), tuple(library), best_grades(data, chosen, library))


def build_libraries(data, fold: str, count: int = LIBRARIES_PER_FOLD, sizes: tuple[int, int] = SIZES,
                    seed: int = 0, min_queries: int = MIN_QUERIES) -> list[CompositeLibrary]:
    """``count`` composite libraries from the query-facets of ``fold`` alone, target sizes
    spread over ``sizes``; the same ``seed`` and data give the same libraries. A library that
    cannot reach ``sizes[0]`` papers or ``min_queries`` topics (a fold too small) is left out."""
    pairs = list(data.query_facets(fold))
    rng = np.random.default_rng([seed, zlib.crc32(fold.encode("utf-8"))])
    libraries = []
    for number, target in enumerate(target_sizes(count, sizes)):
        library = build_library(data, fold, pairs, target, rng, f"{fold}#{number}", min_queries)
        if library.size >= sizes[0] and len(library.query_facets) >= min_queries:
            libraries.append(library)
    return libraries


def _own_share(n_relevant: int, main_line: bool, first: bool) -> int | None:
    """How many of a topic's ``n_relevant`` grade-2+ candidates join a publication list (None:
    too few for the topic to be taken)."""
    if not main_line:
        return (n_relevant + 1) // 2 if n_relevant >= PUBLICATION_MIN_RELEVANT else None
    if first:
        return (3 * n_relevant + 3) // 4 if n_relevant >= MAIN_TOPIC_MIN_RELEVANT else None
    return 1 if n_relevant >= 3 else None


def build_publication_library(data, fold: str, pairs: Sequence[tuple[str, str]], n_topics: int,
                              rng: np.random.Generator, name: str, main_line: bool = False) -> CompositeLibrary:
    """One publication list of ``n_topics`` topics from the fold's ``pairs``, balanced or (``main_line``)
    a main topic and side interests (see the module docstring)."""
    library: list[str] = []
    chosen: list[tuple[str, str]] = []
    for query, facet in _facet_round_robin(pairs, rng):
        if query in library:
            continue
        relevant = sorted(paper for paper, grade in data.pool(query, facet).items() if grade >= 2)
        take = _own_share(len(relevant), main_line, not chosen)
        if take is None:
            continue
        own = [relevant[i] for i in rng.permutation(len(relevant))][:take]
        library.append(query)
        library.extend(paper for paper in own if paper not in library)
        chosen.append((query, facet))
        if len(chosen) == n_topics:
            break
    return CompositeLibrary(name, fold, tuple(chosen), tuple(library), best_grades(data, chosen, library),
                            "main line" if main_line else "balanced")


def build_publication_libraries(data, fold: str, count: int = PUBLICATIONS_PER_FOLD, seed: int = 0,
                                topics: tuple[int, int] = PUBLICATION_TOPICS) -> list[CompositeLibrary]:
    """``count`` publication lists (3, 4, 5, 6, 3... topics; balanced, then a main line and side
    interests, in turn) from the query-facets of ``fold`` alone, named
    ``"<fold>/publications#<number>"``; seeded as :func:`build_libraries`. A list that finds
    fewer than ``topics[0]`` topics is left out."""
    pairs = list(data.query_facets(fold))
    rng = np.random.default_rng([seed, zlib.crc32(f"{fold}/publications".encode("utf-8"))])
    low, high = topics
    libraries = []
    for number in range(count):
        library = build_publication_library(data, fold, pairs, low + number % (high - low + 1), rng,
                                            f"{fold}/publications#{number}", main_line=number % 2 == 1)
        if len(library.query_facets) >= low:
            libraries.append(library)
    return libraries


def default_methods(embedder=None) -> list[str]:
    """The lexical methods, the default install's (``static``, ``hybrid+static``) and, with an
    ``embedder``, the embedding methods."""
    return (list(LEXICAL_METHODS) + default_install_methods(embedder)
            + (list(EMBEDDING_METHODS) if embedder is not None else []))


def evaluate_composite(data, libraries: Sequence[CompositeLibrary], methods: Sequence[str], embedder=None,
                       seed: int = 0, extra_scorers: Mapping[str, Scorer] | None = None,
                       progress: Callable[[str], None] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """``{method: {library name: {"ndcg%20", "map"}}}``: every method on every library, and on
    main-line lists also :data:`SIDE_METRICS`.

    ``extra_scorers`` adds methods by name (a sweep of model settings, say).
    """
    scorers = {**method_scorers(embedder, seed), **(extra_scorers or {})}
    unknown = [m for m in methods if m not in scorers]
    if unknown:
        need = " (they need --embedder)" if set(unknown) & {*EMBEDDING_METHODS, "learned+embeddings"} else ""
        raise ValueError(f"unknown composite methods {', '.join(unknown)}{need}; choose from {', '.join(scorers)}")
    results: dict[str, dict[str, dict[str, float]]] = {method: {} for method in methods}
    for library in libraries:
        papers = [data.papers[paper_id] for paper_id in library.library]
        collection_ids = library.collection
        collection = [data.papers[paper_id] for paper_id in collection_ids]
        sides = topic_sides(data, library) if library.shape == "main line" else None
        for method in methods:
            scores = np.asarray(scorers[method](papers, collection), dtype=np.float64)
            order = sorted(range(len(collection_ids)), key=lambda i: (-float(scores[i]), collection_ids[i]))
            ranked = [collection_ids[i] for i in order]
            results[method][library.name] = {"ndcg%20": ndcg_at_share(ranked, library.grades),
                                             "map": average_precision(ranked, library.grades),
                                             **(side_metrics(ranked, *sides) if sides else {})}
        if progress:
            progress(library.name)
    return results


def publication_summary(results: Mapping[str, Mapping[str, Mapping[str, float]]],
                        lists: Sequence[CompositeLibrary]) -> dict[str, dict]:
    """``{"all", "balanced", "main line": {"libraries": n, "methods": {method: {"ndcg%20", "map"}}}}``
    over publication lists."""
    groups = {"all": list(lists), **{shape: [lib for lib in lists if lib.shape == shape]
                                     for shape in ("balanced", "main line")}}
    return {group: summary(results, members, buckets=())["all"] for group, members in groups.items()}


def main_line_sides(data, results: Mapping[str, Mapping[str, Mapping[str, float]]],
                    lists: Sequence[CompositeLibrary]) -> dict:
    """Over the main-line lists among ``lists``: ``{"libraries": n, "relevant": {"main topic",
    "side topics": grade-2+ candidates left to find, mean a list}, "methods": {method:
    {SIDE_METRICS: mean}}}``, metrics rounded to 4 places.

    Which of a list's topics a ranking serves: the main topic's papers fill most of the
    library, so most of what is left to find belongs to the side interests."""
    main_lines = [library for library in lists if library.shape == "main line"]
    relevant = {"main topic": [], "side topics": []}
    for library in main_lines:
        for name, grades in zip(relevant, topic_sides(data, library)):
            relevant[name].append(sum(grade >= 2 for grade in grades.values()))
    methods = {method: {metric: round(float(np.mean([per_library[lib.name][metric] for lib in main_lines])), 4)
                        for metric in SIDE_METRICS}
               for method, per_library in results.items() if main_lines}
    means = {name: round(float(np.mean(counts)), 1) if counts else 0.0 for name, counts in relevant.items()}
    return {"libraries": len(main_lines), "relevant": means, "methods": methods}


def leads(results: Mapping[str, Mapping[str, Mapping[str, float]]], names: Sequence[str],
          defaults: Sequence[str] = DEFAULT_ROWS, baselines: Sequence[str] = LEAD_BASELINES) -> dict[str, dict]:
    """``{default: {baseline: {"lead", "se"}}}``: each default row's NDCG%20 lead over each
    baseline on the libraries ``names``, library by library
    (:func:`~recommender.evaluation.human_judgements.paired_lead`); rows and baselines not in
    ``results`` are left out, and all of them without libraries."""
    if not names:
        return {}

    def values(method):
        return [results[method][name]["ndcg%20"] for name in names]

    return {default: {baseline: paired_lead(values(default), values(baseline)) for baseline in baselines
                      if baseline in results and baseline != default}
            for default in defaults if default in results}


def bucket_name(size: int, buckets: Sequence[tuple[int, int]] = BUCKETS) -> str | None:
    for low, high in buckets:
        if low <= size <= high:
            return f"{low}-{high}"
    return None


def summary(results: Mapping[str, Mapping[str, Mapping[str, float]]], libraries: Sequence[CompositeLibrary],
            buckets: Sequence[tuple[int, int]] = BUCKETS) -> dict[str, dict]:
    """``{"all" or "<low>-<high>": {"libraries": n, "methods": {method: {"ndcg%20", "map"}}}}``
    over the given libraries, metrics rounded to 4 places."""
    groups: dict[str, list[str]] = {"all": [library.name for library in libraries]}
    for low, high in buckets:
        groups[f"{low}-{high}"] = [library.name for library in libraries if low <= library.size <= high]
    out: dict[str, dict] = {}
    for group, names in groups.items():
        methods = {}
        for method, per_library in results.items():
            values = [per_library[name] for name in names if name in per_library]
            methods[method] = {metric: (round(float(np.mean([v[metric] for v in values])), 4) if values
                                        else float("nan")) for metric in METRICS}
        out[group] = {"libraries": len(names), "methods": methods}
    return out


def describe(libraries: Sequence[CompositeLibrary]) -> dict[str, float]:
    """Shape of a set of libraries: counts and means of sizes, topics, collection sizes and
    relevant (grade >= 2) candidates."""
    if not libraries:
        return {"libraries": 0}
    return {
        "libraries": len(libraries),
        "size_min": min(lib.size for lib in libraries), "size_max": max(lib.size for lib in libraries),
        "size_mean": round(float(np.mean([lib.size for lib in libraries])), 2),
        "topics_mean": round(float(np.mean([len(lib.query_facets) for lib in libraries])), 2),
        "collection_mean": round(float(np.mean([len(lib.grades) for lib in libraries])), 1),
        "relevant_mean": round(float(np.mean([sum(g >= 2 for g in lib.grades.values()) for lib in libraries])), 1),
    }
