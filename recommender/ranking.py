"""The ranking pipeline: library + collection in, ordered and explained recommendations out."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence, Union

import numpy as np

from .features import TfidfLibrarySimilarity
from .paper import IdentityIndex, Paper, deduplicate
from .scoring import WeightedSimilarityScorer

PapersOrSources = Union[str, Path, Sequence[Union[Paper, str, Path]]]

MAX_REASONS = 3
# Below this cosine a library paper is no real reason for a pick.
MIN_REASON_SIMILARITY = 0.02


@dataclass(frozen=True)
class Reason:
    """A library paper a pick is close to."""

    paper: Paper
    similarity: float
    terms: tuple[str, ...] = ()


@dataclass
class Recommendation:
    """One ranked paper of the collection.

    ``rank`` starts at 1; ``score`` is the model's relevance (higher is better, comparable
    within one ranking); ``because`` lists up to three library papers it is closest to.
    """

    paper: Paper
    score: float
    rank: int
    because: list[Reason] = field(default_factory=list)


@dataclass
class Ranking:
    """The full result of one ranking run, with what the CLI reports about it."""

    recommendations: list[Recommendation]
    n_candidates: int
    already_in_library: list[Paper]
    n_library: int
    model: str


def _as_papers(value: PapersOrSources) -> list[Paper]:
    """Papers from a path, a list of paths, or a list of Paper (loaded through connectors)."""
    if isinstance(value, (str, Path)):
        value = [value]
    papers: list[Paper] = []
    for item in value:
        if isinstance(item, Paper):
            papers.append(item)
        else:
            import connectors  # only here: the pipeline itself does no I/O

            papers.extend(connectors.load(item))
    return papers


class Ranker:
    """Scores a collection against a library with a feature builder and a scorer.

    Parameters
    ----------
    features : transformer, default=TfidfLibrarySimilarity()
        Has ``fit(library, corpus=...)``, ``transform(candidates)`` and ``similarities``.
    scorer : estimator, default=WeightedSimilarityScorer()
        Has ``fit(X)`` and ``predict(X)`` returning one score per row.
    """

    def __init__(self, features=None, scorer=None):
        self.features = features if features is not None else TfidfLibrarySimilarity()
        self.scorer = scorer if scorer is not None else WeightedSimilarityScorer()

    def rank(self, library: PapersOrSources, collection: PapersOrSources, top: int | None = None,
             explain_terms: int = 0) -> Ranking:
        """Rank ``collection`` against ``library``.

        Papers of the collection that are already in the library (same identity) are left
        out and listed in ``Ranking.already_in_library``. Ties are broken by paper id, so
        equal inputs always give the same order. ``top`` (None or 0: all) limits the list;
        ``explain_terms`` > 0 adds that many shared key terms to each reason.
        """
        library_papers = [paper for paper in deduplicate(_as_papers(library)) if paper.text.strip()]
        if not library_papers:
            raise ValueError("the library has no papers with a title or abstract")
        collection_papers = list(deduplicate(_as_papers(collection)))
        known = IdentityIndex(library_papers)
        candidates, already = [], []
        for paper in collection_papers:
            (already if paper in known else candidates).append(paper)
        recommendations: list[Recommendation] = []
        if candidates:
            self.features.fit(library_papers, corpus=candidates)
            X = self.features.transform(candidates)
            scores = self.scorer.fit(X).predict(X)
            order = sorted(range(len(candidates)), key=lambda i: (-round(float(scores[i]), 12), candidates[i].id))
            if top:
                order = order[:top]
            chosen = [candidates[i] for i in order]
            similarity = self.features.similarities(chosen)
            for rank, (index, row) in enumerate(zip(order, similarity), start=1):
                because = self._reasons(candidates[index], row, library_papers, explain_terms)
                recommendations.append(Recommendation(candidates[index], float(scores[index]), rank, because))
        return Ranking(recommendations, len(candidates), already, len(library_papers),
                       getattr(self.scorer, "name", type(self.scorer).__name__))

    def _reasons(self, candidate: Paper, similarity_row: np.ndarray, library: list[Paper],
                 explain_terms: int) -> list[Reason]:
        closest = np.argsort(-similarity_row, kind="stable")[:MAX_REASONS]
        reasons = []
        for index in closest:
            if similarity_row[index] < MIN_REASON_SIMILARITY:
                break
            terms = ()
            if explain_terms:
                terms = tuple(self.features.shared_terms(candidate, library[index], explain_terms))
            reasons.append(Reason(library[index], float(similarity_row[index]), terms))
        return reasons


def rank(library: PapersOrSources, collection: PapersOrSources, top: int | None = None) -> list[Recommendation]:
    """Rank the papers of ``collection`` by relevance to ``library``.

    Parameters
    ----------
    library, collection : path, list of paths, or list of Paper
        Paths are loaded with :func:`connectors.load` (BibTeX, abstract lists, JSONL, CSV...).
    top : int, optional
        Return only the best ``top`` recommendations (default: all).

    Returns
    -------
    list of Recommendation
        Best first; papers already in the library are left out.
    """
    return Ranker().rank(library, collection, top=top).recommendations
