"""The ranking pipeline: library + collection in, ordered, explained and diverse picks out."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence, Union

import numpy as np

from recommender.defaults import DEFAULT_DIVERSITY, MODEL_NAMES
from recommender.feedback import (
    DISLIKED,
    LIKED,
    is_litrank_item,
    is_trashed,
    judgements_from_keywords,
    merge_judgements,
    zotero_judgements,
)
from recommender.models.hybrid import HybridModel
from recommender.models.scoring import Driver, LearnedModel, SimilarityModel
from recommender.paper import IdentityIndex, Paper


def make_model(name: str = "hybrid", embedder=None):
    """A fresh model by its ``--model`` name (``similarity`` reads no embeddings)."""
    if name == "hybrid":
        return HybridModel(embedder=embedder)
    if name == "learned":
        return LearnedModel(embedder=embedder)
    if name == "similarity":
        return SimilarityModel()
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")


PapersOrSources = Union[str, Path, Sequence[Union[Paper, str, Path]]]
# A collection may also be a recommender.features.collection_index.CollectionIndex (`litrank index`).

MAX_REASONS = 3
# Below this cosine a library paper is no real reason for a pick.
MIN_REASON_SIMILARITY = 0.02
# MMR re-ranks only the head of the list: deep candidates never reach the top anyway.
MMR_POOL = 200


@dataclass(frozen=True)
class Reason:
    """A library paper a pick is close to, and the terms they share."""

    paper: Paper
    similarity: float
    terms: tuple[str, ...] = ()


@dataclass
class Recommendation:
    """One ranked paper of the collection.

    ``rank`` starts at 1; ``score`` is the model's relevance (higher is better, comparable
    within one ranking); ``because`` lists up to three library papers it is closest to;
    ``drivers`` the model features that raised its score most (learned model only).
    """

    paper: Paper
    score: float
    rank: int
    because: list[Reason] = field(default_factory=list)
    drivers: list[Driver] = field(default_factory=list)


@dataclass
class Ranking:
    """The full result of one ranking run, with what the CLI reports about it.

    ``library`` and ``candidates`` are the papers the model saw (library after feedback;
    candidates in input order), ``scores`` the model's score of each candidate and
    ``fitted_model`` the fitted model itself (its ``rep_`` draws the report's map).
    """

    recommendations: list[Recommendation]
    n_candidates: int
    already_in_library: list[Paper]
    n_library: int
    model: str
    liked: list[Paper] = field(default_factory=list)
    disliked: list[Paper] = field(default_factory=list)
    library: list[Paper] = field(default_factory=list, repr=False)
    candidates: list[Paper] = field(default_factory=list, repr=False)
    scores: np.ndarray | None = field(default=None, repr=False, compare=False)
    fitted_model: object = field(default=None, repr=False, compare=False)

    @property
    def n_judgements(self) -> int:
        """How many of the user's judgements this ranking used (liked and disliked papers)."""
        return len(self.liked) + len(self.disliked)

    def judgements_note(self) -> str:
        """``"re-ranked with your 12 judgements (5 liked, 7 disliked)"``, or "" without any."""
        n = self.n_judgements
        if not n:
            return ""
        return (f"re-ranked with your {n} judgement{'s' if n != 1 else ''} "
                f"({len(self.liked)} liked, {len(self.disliked)} disliked)")

    def library_overlap(self, head: int = 10) -> float:
        """How close the best picks come to the library: the median, over the first ``head``
        picks, of the cosine to their closest library paper (0 when none is close at all).

        Below :data:`WEAK_OVERLAP` the library shares little with the collection and the
        picks are weak, however their scores read (a radiology library against ICML, say).
        """
        closest = [max((reason.similarity for reason in pick.because), default=0.0)
                   for pick in self.recommendations[:head]]
        return float(np.median(closest)) if closest else 0.0


# Measured on the bundled ICML 2026 list and ICML 2019 (shared conference data): libraries on
# the collection's topics give medians of 0.034-0.09 (one paper) to 0.07-0.12 (50 papers); a
# library of literature, film and cell biology 0.025.
WEAK_OVERLAP = 0.03


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


def _deduplicated(papers: list[Paper], where: str) -> list[Paper]:
    """Each distinct paper once, merges said (as loading does): the Python API merges nothing
    silently either. Papers loaded by the CLI arrive merged already, so nothing is said twice."""
    import connectors

    return connectors.deduplicated(papers, where)


def mmr_order(scores: np.ndarray, similarity: np.ndarray, diversity: float) -> list[int]:
    """Maximal marginal relevance: each next pick trades relevance against redundancy.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Relevance, any scale (rescaled to [0, 1] here).
    similarity : ndarray of shape (n, n)
        Pairwise similarity of the candidates.
    diversity : float in [0, 1]
        0 keeps the relevance order; 1 picks the least redundant paper each time.
    """
    n = len(scores)
    if n == 0:
        return []
    spread = scores.max() - scores.min()
    relevance = (scores - scores.min()) / spread if spread > 0 else np.zeros(n)
    chosen = [int(np.argmax(relevance))]
    redundancy = similarity[chosen[0]].copy()
    available = np.ones(n, dtype=bool)
    available[chosen[0]] = False
    while len(chosen) < n:
        value = (1 - diversity) * relevance - diversity * redundancy
        value[~available] = -np.inf
        best = int(np.argmax(value))
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return chosen


def score_order(scores: np.ndarray, ids: Sequence[str]) -> list[int]:
    """Positions by score, best first; equal scores (to 10 decimals: the same paper scored
    through another path) by id, so the order is reproducible."""
    return sorted(range(len(ids)), key=lambda i: (-round(float(scores[i]), 10), ids[i]))


def diversified(order: list[int], scores: np.ndarray, model, diversity: float) -> list[int]:
    """``order`` (candidate positions, best first) with its first :data:`MMR_POOL` re-ranked by
    :func:`mmr_order` over the fitted ``model``'s ``candidate_similarity``; as is for 0."""
    if diversity <= 0 or len(order) < 2:
        return list(order)
    head = np.array(order[:MMR_POOL])
    similarity = model.candidate_similarity(model.candidate_rows_[head])
    return [int(head[i]) for i in mmr_order(np.asarray(scores)[head], similarity, diversity)] + list(order[MMR_POOL:])


class Ranker:
    """Scores a collection against a library with a model and explains the picks.

    Parameters
    ----------
    model : object with ``fit(library, candidates, judgements, library_grades)``, optional
        Default: ``HybridModel`` with the embedder ``litrank rank`` would use ("auto").
        See :mod:`recommender.models.hybrid` and :mod:`recommender.models.scoring`.
    diversity : float in [0, 1], default=0.0
        Weight of redundancy in the maximal-marginal-relevance re-ranking of the list head
        (0: score order, what ranks best on expert judgements).
    engine : recommender.scale.cluster engine, optional
        Score the collection partitioned over it (a Dask cluster); the hybrid model only. The
        ranking equals the one computed in this process.
    """

    def __init__(self, model=None, diversity: float = DEFAULT_DIVERSITY, engine=None):
        if model is None:  # the default model with the default embedder, as `litrank rank` chooses it
            from recommender.models.embeddings import resolve_embedder

            model = HybridModel(embedder=resolve_embedder("auto"))
        self.model = model
        self.diversity = diversity
        self.engine = engine

    def rank(self, library: PapersOrSources, collection: PapersOrSources, top: int | None = None,
             explain_terms: int = 0, judgements: Mapping[str, int] | None = None) -> Ranking:
        """Rank ``collection`` against ``library``.

        Papers of the collection already in the library (same identity) are left out and
        listed in ``Ranking.already_in_library``. ``judgements`` maps paper id -> +1 (liked)
        / -1 (disliked), for library and collection papers: a liked candidate joins the
        library for this run, a disliked one is never recommended, and both teach the model.
        Equal inputs always give the same order. ``top`` (None or 0: all) limits the list;
        ``explain_terms`` > 0 adds that many shared key terms to each reason.
        """
        if not 0 <= self.diversity <= 1:
            raise ValueError(f"diversity must be between 0 and 1, got {self.diversity}")
        from recommender.features.collection_index import CollectionIndex
        from recommender.models.index_fit import fit_on_index

        judgements = dict(judgements or {})
        library_papers = [p for p in _deduplicated(_as_papers(library), "the library") if p.text.strip()]
        index = collection if isinstance(collection, CollectionIndex) else None
        collection_papers = index.papers if index is not None else _deduplicated(_as_papers(collection),
                                                                                  "the collection")
        known = IdentityIndex(library_papers)
        candidates, already, liked, disliked = [], [], [], []
        identity_keys = index.identity_keys() if index is not None else [None] * len(collection_papers)
        for paper, keys in zip(collection_papers, identity_keys):
            if known.find(paper, keys) is not None:
                already.append(paper)
            elif judgements.get(paper.id) == LIKED and paper.text.strip():
                liked.append(paper)
            elif judgements.get(paper.id) == DISLIKED:
                disliked.append(paper)
            else:
                candidates.append(paper)
        disliked += [p for p in library_papers if judgements.get(p.id) == DISLIKED]
        library_papers = [p for p in library_papers if judgements.get(p.id) != DISLIKED] + liked
        if not library_papers:
            raise ValueError("the library has no papers with a title or abstract")
        recommendations: list[Recommendation] = []
        model, scores = None, None
        if candidates:
            grades = {i: 2 for i, p in enumerate(library_papers) if judgements.get(p.id) == LIKED}
            if self.engine is not None:
                if not isinstance(self.model, HybridModel):
                    raise ValueError("ranking on a cluster uses the hybrid model (--model hybrid)")
                if self.model.disliked_weight > 0:
                    raise ValueError("ranking on a cluster does not push down disliked papers (disliked_weight=0)")
                from recommender.scale.cluster_ranking import fit_on_cluster

                row_of = {id(paper): row for row, paper in enumerate(collection_papers)}
                model = fit_on_cluster(self.model, self.engine, index if index is not None else collection_papers,
                                       library_papers, [row_of[id(p)] for p in candidates + disliked if id(p) in row_of],
                                       [row_of[id(p)] for p in disliked if id(p) in row_of])
            elif index is None and hasattr(self.model, "index_builder"):
                # The hybrid model scores against an index of the whole collection, the same
                # whether it was built now or read from a `litrank index` file.
                index = self.model.index_builder().build(collection_papers, library=library_papers)
            if index is not None and self.engine is None:
                row_of = {id(paper): row for row, paper in enumerate(index.papers)}
                # Disliked library papers are not in the index: they only ever leave the feedback.
                pool_rows = [row_of[id(p)] for p in candidates] + [row_of[id(p)] for p in disliked if id(p) in row_of]
                model = fit_on_index(self.model, index, library_papers, pool_rows,
                                     judgements={i: DISLIKED for i in range(len(candidates), len(pool_rows))},
                                     library_grades=grades)
            elif self.engine is None:
                pool = candidates + disliked
                model = self.model.fit(library_papers, pool, judgements={len(candidates) + i: DISLIKED
                                                                        for i in range(len(disliked))},
                                       library_grades=grades)
            scores = np.asarray(model.scores_)[: len(candidates)]
            order = diversified(score_order(scores, [paper.id for paper in candidates]), scores, model,
                                self.diversity)
            if top:
                order = order[:top]
            rows = model.candidate_rows_[order]
            similarity_rows = model.similarities(rows)
            for rank, (index, row_similarity) in enumerate(zip(order, similarity_rows), start=1):
                because = self._reasons(model, int(model.candidate_rows_[index]), row_similarity,
                                        library_papers, explain_terms)
                recommendations.append(Recommendation(candidates[index], float(scores[index]), rank, because,
                                                      model.drivers(index) if explain_terms else []))
        return Ranking(recommendations, len(candidates), already, len(library_papers),
                       getattr(model if model is not None else self.model, "description_", type(self.model).__name__),
                       liked, disliked,
                       library_papers, candidates, scores, model)

    @staticmethod
    def _reasons(model, candidate_row: int, similarity_row: np.ndarray, library: list[Paper],
                 explain_terms: int) -> list[Reason]:
        closest = np.argsort(-similarity_row, kind="stable")[:MAX_REASONS]
        reasons = []
        for index in closest:
            if similarity_row[index] < MIN_REASON_SIMILARITY:
                break
            terms = ()
            if explain_terms:
                terms = tuple(model.shared_terms(candidate_row, int(model.library_rows_[index]), explain_terms))
            reasons.append(Reason(library[index], float(similarity_row[index]), terms))
        return reasons


def rank(library: PapersOrSources, collection: PapersOrSources, top: int | None = None,
         embedder="auto") -> list[Recommendation]:
    """Rank the papers of ``collection`` by relevance to ``library`` with the default model.

    Parameters
    ----------
    library, collection : path, list of paths, or list of Paper
        Paths are loaded with :func:`connectors.load` (BibTeX, abstract lists, JSONL, CSV...).
    top : int, optional
        Return only the best ``top`` recommendations (default: all).
    embedder : "auto", "none", a model name or path, or an object with ``embed(texts)``
        The dense signal, chosen as ``litrank rank`` chooses it (default "auto": the embeddings
        extra's all-MiniLM-L6-v2 when installed, or ``$LITRANK_EMBEDDER``); "none" (or False)
        ranks without embeddings. See :func:`recommender.models.embeddings.resolve_embedder`.

    Returns
    -------
    list of Recommendation
        Best first; papers already in the library are left out.
    """
    from recommender.models.embeddings import resolve_embedder

    return Ranker(HybridModel(embedder=resolve_embedder(embedder))).rank(library, collection, top=top).recommendations


def write_index(index, path: str | Path) -> None:
    """Write a :class:`~recommender.features.collection_index.CollectionIndex` to a ``.litrank``
    file at ``path``, atomically (the file format: :mod:`connectors.files.litrank_index`)."""
    from connectors.files import litrank_index
    from recommender.version import __version__

    metadata, arrays = index.to_parts()
    litrank_index.write(path, metadata, arrays, index.papers, litrank_version=__version__)


def read_index(path: str | Path):
    """The :class:`~recommender.features.collection_index.CollectionIndex` stored in a
    ``.litrank`` file; a file that is not one, or damaged, raises
    :class:`connectors.SourceError` naming the problem."""
    from connectors import SourceError
    from connectors.files import litrank_index
    from recommender.features.collection_index import CollectionIndex

    metadata, arrays, papers = litrank_index.read_parts(path)
    try:
        return CollectionIndex.from_parts(metadata, arrays, papers)
    except ValueError as exc:
        raise SourceError(f"{Path(path).expanduser()}: {exc}") from None


# The feedback store's source of the dislikes that moving a pick to the Zotero trash gives.
TRASH_SOURCE = "zotero-trash"


@dataclass
class Judgements:
    """What :func:`gather_judgements` found: ``judgements`` (paper id -> +1 / -1) for a ranking,
    the ``(paper, judgement)`` pairs read from litrank's Zotero items, and the picks ``restored``
    from the Zotero trash (whose dislike was forgotten)."""

    judgements: dict[str, int]
    from_zotero: list[tuple[Paper, int]] = field(default_factory=list)
    restored: list[Paper] = field(default_factory=list)


def gather_judgements(library: Sequence[Paper], collection: Sequence[Paper], store) -> Judgements:
    """The user's judgements for ranking ``collection`` against ``library``.

    Judgements given in Zotero on litrank's own items of ``library`` (tags, removal from the
    reading-list collection, the trash) are first saved in ``store`` (a
    :class:`connectors.files.feedback_store.FeedbackStore`), so that every later run knows them;
    a pick restored from the trash is no longer a "no". Then the stored judgements and the
    ``litrank:liked``/``litrank:disliked`` keywords (which win) of the library's and the
    collection's papers.
    """
    from_zotero = zotero_judgements(library)
    if from_zotero:
        trashed = [(paper, value) for paper, value in from_zotero if is_trashed(paper)]
        store.record_many([pair for pair in from_zotero if not is_trashed(pair[0])], source="zotero")
        store.record_many(trashed, source=TRASH_SOURCE)
    ours = [paper for paper in library if is_litrank_item(paper) and not is_trashed(paper)]
    entries = store.entries_of(ours)
    restored = [paper for paper in ours if paper.id in entries and entries[paper.id].source == TRASH_SOURCE]
    if restored:
        store.forget_many(restored)
    papers = [p for p in library if not is_litrank_item(p)] + list(collection)
    merged = merge_judgements(store.judgements(papers), judgements_from_keywords(papers))
    return Judgements(merged, from_zotero, restored)
