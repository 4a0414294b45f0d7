"""Ranking quality on expert relevance judgements: the CSFCube protocol.

Each query paper is a one-paper library and its judged pool the collection; a facet-blind
ranker ranks each pool once. Per query-facet:

* **NDCG%20**: NDCG with linear gain (grade / log2(rank + 1)) cut at 20% of the pool size;
* **MAP**: average precision with grade >= 2 relevant.

Both are averaged over the query-facets of a fold, for all facets together and per facet.
The query paper itself is not a candidate (the released SPECTER rankings leave it out too).
All methods run on the same pools in the same run:

``random``        a seeded shuffle
``bm25``          Okapi BM25, the query paper as the query
``tfidf``         plain TF-IDF cosine (sublinear tf, English stop words, fitted on the pool)
``specter``       SPECTER's released rankings of the same pools (from the dataset)
``similarity``    litrank v1 (TF-IDF max/top-3/centroid blend)
``learned``       the LightGBM ranker (with a one-paper library: its pre-trained prior)
``hybrid``        litrank's default (:class:`recommender.models.hybrid.HybridModel`), lexical only
``embedding``     plain sentence-embedding cosine (needs an embedder)
``hybrid+embeddings``, ``learned+embeddings``  the litrank models with the embedder
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from recommender.evaluation.holdout import library_scorers
from recommender.paper import Paper

FACETS = ("background", "method", "result")
METRICS = ("ndcg%20", "map")
RELEVANT_GRADE = 2
CUTOFF_SHARE = 0.2
LEXICAL_METHODS = ("random", "bm25", "tfidf", "specter", "similarity", "learned", "hybrid")
EMBEDDING_METHODS = ("embedding", "learned+embeddings", "hybrid+embeddings")


def ndcg_at_share(ranked: Sequence[str], grades: Mapping[str, int], share: float = CUTOFF_SHARE) -> float:
    """NDCG with linear gain cut at ``share`` of the ranking's length (CSFCube's NDCG%20)."""
    cutoff = int(share * len(ranked))
    gains = [grades.get(paper_id, 0) for paper_id in ranked[:cutoff]]
    ideal = sorted(grades.values(), reverse=True)[:cutoff]
    ideal_dcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    if ideal_dcg == 0:
        return 0.0
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains)) / ideal_dcg


def average_precision(ranked: Sequence[str], grades: Mapping[str, int], threshold: int = RELEVANT_GRADE) -> float:
    """Average precision over every candidate graded ``threshold`` or more (0 if none is)."""
    relevant = {paper_id for paper_id, grade in grades.items() if grade >= threshold}
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    for rank, paper_id in enumerate(ranked, start=1):
        if paper_id in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


def _metrics(ranked: Sequence[str], grades: Mapping[str, int]) -> dict[str, float]:
    return {"ndcg%20": ndcg_at_share(ranked, grades), "map": average_precision(ranked, grades)}


def method_scorers(embedder=None, seed: int = 0) -> dict[str, Callable[[Paper, list[Paper]], np.ndarray] | None]:
    """Scoring functions ``(query_paper, pool) -> scores`` by method name: the library scorers of
    :func:`~recommender.evaluation.holdout.library_scorers` with the query paper as a one-paper
    library (``specter`` is None: it is read from the dataset). Embedding methods are included
    only with an ``embedder``."""
    scorers: dict[str, Callable | None] = {"specter": None}
    for name, score in library_scorers(embedder, seed).items():
        if name != "embedding-top3":  # with one library paper, the same as "embedding"
            scorers[name] = lambda query, pool, score=score: score([query], pool)
    return scorers


@dataclass
class Scores:
    """Per query-facet metrics of one method, averaged on demand."""

    per_query_facet: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def mean(self, facet: str = "all") -> dict[str, float]:
        values = [metrics for (_, name), metrics in self.per_query_facet.items() if facet in ("all", name)]
        return {metric: (float(np.mean([v[metric] for v in values])) if values else float("nan")) for metric in METRICS}


def paired_lead(values: Sequence[float], baseline: Sequence[float]) -> dict[str, float]:
    """How far ``values`` lead ``baseline``, item by item (the same query-facets, libraries or
    tasks in the same order): ``{"lead": mean difference, "se": its standard error}`` (the
    differences' spread over √items; 0 with fewer than two). Paired, the spread between items,
    which two methods share, cancels: a lead of more than about two standard errors is one the
    items agree on. Rounded to 4 places."""
    differences = np.asarray(values, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    if differences.size == 0:
        return {"lead": float("nan"), "se": float("nan")}
    spread = float(np.std(differences, ddof=1) / np.sqrt(differences.size)) if differences.size > 1 else 0.0
    return {"lead": round(float(differences.mean()), 4), "se": round(spread, 4)}


def evaluate_csfcube(data, methods: Sequence[str], query_facets: Sequence[tuple[str, str]], embedder=None,
                     seed: int = 0, progress: Callable[[str], None] | None = None) -> dict[str, Scores]:
    """Metrics of every method on every query-facet (see the module docstring).

    Parameters
    ----------
    data : connectors.files.csfcube.CSFCube
    methods : names from :data:`LEXICAL_METHODS` and :data:`EMBEDDING_METHODS`
    query_facets : ``(query_id, facet)`` pairs to evaluate
    embedder : needed for the embedding methods
    """
    scorers = method_scorers(embedder, seed)
    unknown = [m for m in methods if m not in scorers]
    if unknown:
        need = " (they need --embedder)" if set(unknown) & set(EMBEDDING_METHODS) else ""
        raise ValueError(f"unknown CSFCube methods {', '.join(unknown)}{need}; choose from {', '.join(scorers)}")
    results = {method: Scores() for method in methods}
    ranked_cache: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    for query, facet in query_facets:
        grades = data.pool(query, facet)
        pool_ids = sorted(grades)
        pool = [data.papers[paper_id] for paper_id in pool_ids]
        for method in methods:
            key = (method, query, tuple(pool_ids))
            if key not in ranked_cache:  # facet-blind: a pool is ranked once per query
                if method == "specter":
                    order = data.reference_rankings["specter"][facet][query]
                    ranked_cache[key] = [p for p in order if p in grades] + sorted(set(pool_ids) - set(order))
                else:
                    scores = scorers[method](data.papers[query], pool)
                    order = sorted(range(len(pool_ids)), key=lambda i: (-float(scores[i]), pool_ids[i]))
                    ranked_cache[key] = [pool_ids[i] for i in order]
            results[method].per_query_facet[(query, facet)] = _metrics(ranked_cache[key], grades)
        if progress:
            progress(f"{query}_{facet}")
    return results


def evaluate_delivered(data, query_facets: Sequence[tuple[str, str]], model_factory: Callable[[], object],
                       diversity: float) -> Scores:
    """Metrics of the order ``litrank rank --diversity D`` delivers: each pool ranked by
    ``model_factory()``'s scores, then its head re-ranked as :class:`~recommender.ranking.Ranker`
    does (:func:`~recommender.ranking.diversified`; :func:`evaluate_csfcube` ranks by the scores
    alone, which is the same for ``diversity=0``)."""
    from recommender.ranking import diversified, score_order

    scores = Scores()
    orders: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for query, facet in query_facets:
        grades = data.pool(query, facet)
        pool_ids = sorted(grades)
        key = (query, tuple(pool_ids))
        if key not in orders:
            model = model_factory().fit([data.papers[query]], [data.papers[paper_id] for paper_id in pool_ids])
            values = np.asarray(model.scores_)
            orders[key] = [pool_ids[i] for i in diversified(score_order(values, pool_ids), values, model, diversity)]
        scores.per_query_facet[(query, facet)] = _metrics(orders[key], grades)
    return scores


def summary(results: Mapping[str, Scores], query_facets: Sequence[tuple[str, str]]) -> dict[str, dict]:
    """``{method: {"all": {...}, "background": {...}, "method": {...}, "result": {...}}}`` over the given
    query-facets, metrics rounded to 4 places."""
    wanted = set(query_facets)
    out: dict[str, dict] = {}
    for method, scores in results.items():
        subset = Scores({key: value for key, value in scores.per_query_facet.items() if key in wanted})
        out[method] = {facet: {metric: round(value, 4) for metric, value in subset.mean(facet).items()}
                       for facet in ("all", *FACETS)}
    return out
