"""Affinity: many profiles (libraries) scored against one collection, each as ``litrank rank`` would.

The collection is indexed once (:class:`~recommender.features.collection_index.CollectionIndex`: its
vocabularies, TF-IDF rows, BM25 weights, authors and embeddings); every profile is then only
transformed with the index's vectorisers and scored. The collection is cut into partitions of
rows, run on an engine (:mod:`recommender.scale.cluster`: this process or a Dask cluster), and the
hybrid model's collection-wide steps are reduced here (:mod:`recommender.scale.partitioned_scoring`),
so a profile's score of a paper equals the score ``litrank rank --no-feedback`` gives that paper
for that library, however the collection is partitioned. Papers of a profile that are in the
collection are not its candidates (as ``rank`` skips papers already in the library).

Profiles are scored in groups of at most ``column_budget`` library papers, so memory is bounded
by partition rows × group columns, not by the number of profiles.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
from scipy import sparse

from recommender.features.collection_index import CollectionIndex
from recommender.features.index_features import author_incidence
from recommender.features.library_weighting import LibraryWeighting
from recommender.features.sparse_products import normalize_rows
from recommender.models.hybrid import HybridModel
from recommender.paper import Paper
from recommender.scale import partitioned_scoring as steps
from recommender.scale.cluster import partition_bounds
from recommender.scale.partitioned_index import PartitionedIndex

COLUMN_BUDGET = 256


@dataclass
class ProfileScores:
    """One profile's scores: ``rows`` (collection rows, best first) scored ``scores``."""

    profile_id: str
    rows: np.ndarray
    scores: np.ndarray

    def paper_ids(self, index) -> list[str]:
        ids = paper_ids(index)
        return [ids[row] for row in self.rows]


def paper_ids(index) -> list[str]:
    """The ids of an index's papers, row by row (a :class:`CollectionIndex` or a
    :class:`~recommender.scale.partitioned_index.PartitionedIndex`)."""
    if isinstance(index, PartitionedIndex):
        return index.paper_ids
    return [paper.id for paper in index.papers]


class AffinityScorer:
    """Scores profiles against a collection index with the hybrid model's settings.

    Parameters
    ----------
    model : HybridModel
        Its parameters (and embedder) are the scores' model; it is not fitted here.
    top : int or None
        Keep each profile's ``top`` best papers (None: every paper).
    column_budget : int
        Library papers scored together (profiles are grouped up to this many).
    progress : callable or None
        Told each map step's wall time as it ends (long runs on a cluster).
    """

    def __init__(self, model: HybridModel | None = None, top: int | None = None, column_budget: int = COLUMN_BUDGET,
                 progress: Callable[[str], None] | None = None):
        self.model = model if model is not None else HybridModel()
        self.top = top
        self.column_budget = column_budget
        self.progress = progress
        self._clock = time.perf_counter()

    def _step_done(self, name: str) -> None:
        if self.progress is not None:
            now = time.perf_counter()
            self.progress(f"scoring: {name} in {now - self._clock:.1f} s")
            self._clock = now

    def score(self, index: CollectionIndex | PartitionedIndex, profiles: Mapping[str, Sequence[Paper]], engine,
              n_partitions: int | None = None) -> Iterator[ProfileScores]:
        """Each profile's scores, in the order of ``profiles``; partitions run on ``engine``."""
        if not isinstance(self.model, HybridModel):
            raise ValueError("affinity scores use the hybrid model (--model hybrid)")
        index.check_embedder(self.model.embedder)
        names = list(profiles)
        libraries = [list(profiles[name]) for name in names]
        self._clock = time.perf_counter()
        parts, columns = self._placed(index, engine, n_partitions, libraries)
        self._step_done("the profiles' rows (transformed with the index's vectorisers)")
        ids = np.array(paper_ids(index), dtype=object)
        offsets = np.cumsum([0] + [len(library) for library in libraries])
        for group in _groups([len(library) for library in libraries], self.column_budget):
            rows = np.concatenate([np.arange(offsets[g], offsets[g + 1]) for g in group])
            group_columns = self._columns(columns, rows, [libraries[g] for g in group])
            block_scores = self._score_group(engine, parts, group_columns, [libraries[g] for g in group])
            self._step_done("final scores")
            for position, g in enumerate(group):
                yield self._ranked(names[g], ids, block_scores[:, position])

    def score_library(self, index, library: Sequence[Paper], engine, excluded_rows: np.ndarray,
                      not_feedback: np.ndarray | None = None, explain: bool = False, n_partitions: int | None = None):
        """``rank``'s scores of every collection row for one ``library`` (NaN at ``excluded_rows``,
        the rows that are not candidates; ``not_feedback``: candidates never used as feedback) and,
        with ``explain``, the score's parts (the hybrid model's ``components_``), row by row."""
        library = list(library)
        parts, columns = self._placed(index, engine, n_partitions, [library])
        group = self._columns(columns, np.arange(len(library)), [library])
        group = dataclasses.replace(group, library=dataclasses.replace(group.library, not_feedback=not_feedback,
                                                                       explain=explain))
        states = self._final_states(engine, parts, group, [np.asarray(excluded_rows, dtype=np.int64)])
        scores = np.vstack(engine.collect(states, "out"))[:, 0]
        components = {}
        if explain:
            for found in engine.collect(states, "components"):
                for name, values in found.items():
                    components.setdefault(name, []).append(values[:, 0])
        return scores, {name: np.concatenate(values) for name, values in components.items()}

    def _placed(self, index, engine, n_partitions: int | None, libraries: list[list[Paper]]):
        """The index's partitions on ``engine`` and the library rows of every profile."""
        if isinstance(index, PartitionedIndex):  # its rows are on the engine already
            return index.parts, _library_rows(index.vocabulary, libraries, self.model)
        bounds = partition_bounds(index.n_papers, n_partitions)
        parts = engine.put([steps.CollectionPart.of_index(index, start, stop) for start, stop in bounds])
        return parts, _library_rows(index, libraries, self.model)

    def _columns(self, columns: dict, rows: np.ndarray, libraries: list[list[Paper]]) -> "_Columns":
        model = self.model
        profile_of = np.repeat(np.arange(len(libraries)), [len(library) for library in libraries])
        counts = columns["unigrams"][rows]
        queries = np.vstack([np.log1p(np.asarray(counts[profile_of == p].sum(axis=0)).ravel())
                             for p in range(len(libraries))])
        word, char = columns["word"][rows], None if columns["char"] is None else columns["char"][rows]
        layout = _Layout(columns["word_columns"], columns["word"].shape[1], columns["char_columns"],
                         0 if char is None else char.shape[1])
        papers = [paper for library in libraries for paper in library]
        return _Columns(layout, word, char, steps.LibraryColumns(
            papers=papers, profile_of=profile_of,
            word=layout.collection_part(word, "word"), char=layout.collection_part(char, "char"),
            embeddings=None if columns["embedding"] is None else columns["embedding"][rows], queries=queries,
            authors=columns["authors"][rows], char_weight=model.char_weight, dense_weight=model.dense_weights(papers),
            feedback_docs=model.feedback_docs, feedback_weight=model.feedback_weight,
            profile_weight=model.profile_weight, author_weight=model.author_weight, aggregation=model.aggregation,
            column_scale=model.column_scale, column_prior=model.column_prior,
            dense_depth=model.dense_depth, short_text_trust=model.short_text_trust(papers)))

    def _score_group(self, engine, parts, columns: "_Columns", libraries: list[list[Paper]]) -> np.ndarray:
        return np.vstack(engine.collect(self._final_states(engine, parts, columns, libraries), "out"))

    def _final_states(self, engine, parts, columns: "_Columns", libraries: list) -> list:
        """The map and reduce steps; each part's last state holds its scores under ``"out"``."""
        library = columns.library
        states = engine.step(steps.first_moments, parts, [None] * len(parts), library, libraries)
        moments = engine.collect(states, "out")
        self._step_done("first-pass similarities and their moments")
        statistics = {name: steps.merge_moments(m[name] for m in moments) for name in ("lexical", "dense")
                      if name in moments[0]}
        best = np.max([m["bm25_max"] for m in moments], axis=0)
        candidates = np.array([m["lexical"][0] for m in moments]).sum(axis=0)  # per column
        library_vectors = steps.joined(columns.word, columns.char, library.char_weight)
        feedback = self.model.feedback_docs > 0 and self.model.feedback_weight > 0
        # The library papers' lexical cosines to each other: they serve the feedback and the
        # "topics" aggregation depth.
        own = steps.lexical_block(columns.word, columns.char, columns.word, columns.char, library.char_weight) \
            if feedback or library.aggregation == "topics" else None
        statistics["depths"] = steps.profile_depths(own, library, statistics["lexical"])
        # As the model scales its columns:
        statistics.update(steps.pooled_spreads(statistics, library, ("lexical", "dense"), candidates))
        expanded = library_vectors
        if feedback:
            expanded = self._feedback(engine, parts, states, columns, library_vectors, statistics, candidates, own)
        expanded = columns.layout.to_collection(sparse.csr_matrix(expanded))
        states = engine.step(steps.expanded_moments, parts, states, expanded, library.char_weight, best)
        moments = engine.collect(states, "out")
        self._step_done("expanded cosines and their moments")
        for name in ("expanded", "bm25"):
            statistics[name] = steps.merge_moments(m[name] for m in moments)
        statistics.update(steps.pooled_spreads(statistics, library, ("expanded",), candidates))
        return engine.step(steps.final_scores, parts, states, library, statistics)

    def _feedback(self, engine, parts, states, columns: "_Columns", library_vectors, statistics,
                  candidates: np.ndarray, own: np.ndarray):
        """Each library paper moved towards the centroid of its best first-pass papers (Rocchio),
        those chosen among every partition's candidates and the profile's other papers."""
        library = columns.library
        n_columns = len(library.profile_of)
        sizes = library.sizes()
        # Library rows as feedback (``own``: their lexical cosines): a profile's other papers, never the paper itself.
        own_dense = None if "dense" not in statistics else np.asarray(library.embeddings @ library.embeddings.T)
        own_scores = steps.first_pass(own, own_dense, statistics, library.dense_weight)
        same_profile = library.profile_of[:, None] == library.profile_of[None, :]
        own_scores[~same_profile | np.eye(n_columns, dtype=bool)] = -np.inf
        # k as the model sets it: feedback_docs, or fewer when a profile has fewer papers to offer.
        available = candidates + (sizes[library.profile_of] - 1)
        k_of = np.minimum(self.model.feedback_docs,
                          np.array([available[library.profile_of == p].min() for p in range(len(sizes))]))
        k_max = int(k_of.max()) if len(k_of) else 0
        local = engine.collect(engine.step(steps.local_feedback, parts, states, library, statistics, k_max), "out")
        self._step_done("feedback candidates (local top-k)")
        # Library rows are named -1 - column, collection rows by their row.
        own_rows = np.broadcast_to((-1 - np.arange(n_columns))[:, None], (n_columns, n_columns))
        rows = np.vstack([own_rows] + [found for found, _ in local])
        scores = np.vstack([own_scores] + [values for _, values in local])
        selected = np.full((k_max, n_columns), -1, dtype=np.int64)
        chosen_own = sparse.lil_matrix((n_columns, n_columns))
        for column in range(n_columns):
            k = int(k_of[library.profile_of[column]])
            if k <= 0:
                continue
            best = np.argpartition(-scores[:, column], k - 1)[:k]
            picked = rows[best, column]
            collection_rows = picked[picked >= 0]
            selected[: len(collection_rows), column] = collection_rows
            for library_row in -1 - picked[picked < 0]:
                chosen_own[column, library_row] = 1.0
        sums = engine.collect(engine.step(steps.centroid_sums, parts, states, selected, library.char_weight), "out")
        self._step_done("feedback centroids")
        sums = [columns.layout.from_collection(sparse.csr_matrix(part_sum)) for part_sum in sums]
        centroids = functools.reduce(operator.add, sums, chosen_own.tocsr() @ library_vectors)
        inverse_k = np.where(k_of > 0, 1.0 / np.maximum(k_of, 1), 0.0)[library.profile_of]
        weights = np.where(k_of > 0, self.model.feedback_weight / sizes, 0.0)[library.profile_of]
        centroids = normalize_rows(sparse.csr_matrix(sparse.diags(inverse_k) @ centroids))
        return normalize_rows(sparse.csr_matrix(library_vectors) + sparse.diags(weights) @ centroids)

    def _ranked(self, name: str, ids: np.ndarray, scores: np.ndarray) -> ProfileScores:
        rows = np.flatnonzero(~np.isnan(scores))
        values = scores[rows]
        order = np.lexsort((ids[rows], -np.round(values, 10)))  # rank's order: score, then paper id
        if self.top:
            order = order[: self.top]
        return ProfileScores(name, rows[order], values[order])


@dataclass
class _Layout:
    """Where the collection's columns sit among the library columns' (word | char, each followed
    by the profiles' own terms, which no collection paper holds)."""

    word_columns: int
    word_width: int
    char_columns: int
    char_width: int

    def collection_part(self, rows, name: str):
        if rows is None:
            return None
        return sparse.csr_matrix(rows)[:, : self.word_columns if name == "word" else self.char_columns]

    def to_collection(self, joined: sparse.csr_matrix) -> sparse.csr_matrix:
        """Joined library-layout rows restricted to the collection's joined columns (word | char)."""
        coo = joined.tocoo()
        word = coo.col < self.word_columns
        char = (coo.col >= self.word_width) & (coo.col < self.word_width + self.char_columns)
        keep = word | char
        cols = np.where(word, coo.col, coo.col - (self.word_width - self.word_columns))[keep]
        return sparse.csr_matrix((coo.data[keep], (coo.row[keep], cols)),
                                 shape=(joined.shape[0], self.word_columns + self.char_columns))

    def from_collection(self, joined: sparse.csr_matrix) -> sparse.csr_matrix:
        """Joined collection-layout rows placed among the library layout's columns."""
        indices = np.where(joined.indices < self.word_columns, joined.indices,
                           joined.indices + (self.word_width - self.word_columns))
        return sparse.csr_matrix((joined.data, indices, joined.indptr),
                                 shape=(joined.shape[0], self.word_width + self.char_width))


@dataclass
class _Columns:
    """A group's library columns: with their own terms (``word``, ``char``) and as the partitions
    see them (``library``, the collection's columns only)."""

    layout: _Layout
    word: sparse.csr_matrix
    char: sparse.csr_matrix | None
    library: steps.LibraryColumns


def _own_terms_apart(blocks: list[sparse.csr_matrix], n_columns: int) -> sparse.csr_matrix:
    """Profiles' rows stacked, each profile's own-term columns (from ``n_columns`` on) moved
    past the previous profiles' so that no two profiles share one."""
    rows, offset = [], 0
    for block in blocks:
        block = sparse.csr_matrix(block)
        own = block.indices >= n_columns
        indices = np.where(own, block.indices + offset, block.indices)
        rows.append(sparse.csr_matrix((block.data, indices, block.indptr), shape=(block.shape[0], 0)))
        offset += block.shape[1] - n_columns
    width = n_columns + offset
    return sparse.vstack([sparse.csr_matrix((r.data, r.indices, r.indptr), shape=(r.shape[0], width)) for r in rows],
                         format="csr")


def _library_rows(source: LibraryWeighting, libraries: list[list[Paper]], model: HybridModel) -> dict:
    """Every profile's papers transformed with the index's vectorisers, each profile as ``rank``
    transforms a library (its own IDF and terms, see :meth:`LibraryWeighting.library_rows`); one
    embedding call for all (papers shared by several profiles are embedded once, the cache shared).
    ``source``: a :class:`CollectionIndex` or a partitioned index's vocabulary."""
    papers = [paper for library in libraries for paper in library]
    texts = [[paper.text for paper in library] for library in libraries]
    word = [source.library_tfidf("word", profile_texts) for profile_texts in texts]
    char = None if source.char_terms is None else _own_terms_apart(
        [source.library_rows("char", profile_texts) for profile_texts in texts], len(source.char_terms))
    embedding = None
    if model.embedder is not None:
        embedding = np.asarray(model.embedder.embed([paper.text for paper in papers]),
                               dtype=np.float32).reshape(len(papers), -1)
    vocabulary = {name: column for column, name in enumerate(source.author_names)}
    return {"word": _own_terms_apart([rows for rows, _, _ in word], len(source.word_terms)), "char": char,
            "word_columns": len(source.word_terms), "char_columns": 0 if char is None else len(source.char_terms),
            "embedding": embedding,
            "unigrams": sparse.vstack([counts[:, source.unigram_columns] for _, _, counts in word], format="csr"),
            "authors": author_incidence(papers, vocabulary, grow=False)}


def _groups(sizes: list[int], budget: int) -> list[list[int]]:
    groups, current, used = [], [], 0
    for position, size in enumerate(sizes):
        if current and used + size > budget:
            groups.append(current)
            current, used = [], 0
        current.append(position)
        used += size
    if current:
        groups.append(current)
    return groups
