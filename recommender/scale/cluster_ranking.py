"""``litrank rank`` with the collection partitioned over an engine (a Dask cluster).

:func:`fit_on_cluster` stands in for :func:`~recommender.models.index_fit.fit_on_index`: the
collection's index is built on the workers (:mod:`recommender.scale.partitioned_index`), the LSA
topic space (the diversity re-ordering's similarity) fitted on one worker from the partitions'
word rows, and the hybrid model's scores and their parts computed there with the collection-
wide reduces of :mod:`recommender.scale.affinity`. What :class:`~recommender.ranking.Ranker` does
next (order, MMR over the list head, reasons, shared terms, drivers) reads only the rows of
the picks, which :class:`ClusterFit` fetches from the workers when asked. The result equals
the local ranking.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import sparse

from recommender.features.collection_index import CollectionIndex
from recommender.features.index_features import components_from_basis, fit_lsa, lsa_fits, lsa_rows, widen_columns
from recommender.models.hybrid import HybridModel
from recommender.models.scoring import TermExplainer
from recommender.paper import Paper
from recommender.scale.affinity import AffinityScorer
from recommender.scale.cluster import partition_bounds
from recommender.scale.partitioned_index import build_partitioned


def _fit_lsa(parts: list, n_components: int, random_state: int):
    """The builder's LSA components, fitted on the whole collection's word rows gathered on one worker."""
    word = sparse.vstack([part.word for part in parts], format="csr")
    basis = fit_lsa(word, n_components, random_state)
    return None if basis is None else components_from_basis(word, basis)


def take_rows(part, state, rows: np.ndarray, components) -> dict:
    """The word (and LSA) rows of this part among the global ``rows``."""
    rows = rows[(rows >= part.offset) & (rows < part.offset + len(part))]
    word = part.word[rows - part.offset]
    return {"out": (rows, word, None if components is None else lsa_rows(word, components))}


class _Rows:
    """Rows of one representation in the model's numbering (library rows first, then collection
    row r as ``n_library + r``), the collection's fetched from the workers once each."""

    def __init__(self, library, fetch, name: str):
        """``library``: the library's rows, or a function that makes them (topic rows: the
        topic space is fitted only when some row is first read)."""
        self._library, self.fetch, self.name = library, fetch, name

    @property
    def library(self):
        if callable(self._library):
            self._library = self._library()
        return self._library

    def __getitem__(self, key):
        rows = np.atleast_1d(np.asarray(key, dtype=np.int64))
        n_library = self.library.shape[0]
        found = self.fetch(rows[rows >= n_library] - n_library, self.name == "lsa")
        pieces = [self.library[[row]] if row < n_library else self._widened(found[self.name][row - n_library])
                  for row in rows]
        stacked = sparse.vstack(pieces, format="csr") if sparse.issparse(pieces[0]) else np.vstack(pieces)
        return stacked[0] if np.ndim(key) == 0 else stacked

    def _widened(self, row):
        """A collection row with empty columns for the library's own terms (as ``rank``'s)."""
        return widen_columns(row, self.library.shape[1]) if sparse.issparse(row) else row


class _WordBlock:
    """The word cosine block, only at the rows and columns asked for."""

    def __init__(self, rows: _Rows):
        self.rows = rows

    def __getitem__(self, key):
        rows, columns = (np.asarray(part).ravel() for part in key)
        return (self.rows[rows] @ self.rows[columns].T).toarray()


class _ClusterRepresentations:
    def __init__(self, library_word, library_lsa, fetch, word_names):
        """``library_lsa``: a function making the library's topic rows, None without topics."""
        self.vectors = {"word": _Rows(library_word, fetch, "word")}
        if library_lsa is not None:
            self.vectors["lsa"] = _Rows(library_lsa, fetch, "lsa")
        self.blocks = {"word": _WordBlock(self.vectors["word"])}
        self.word_vectorizer = word_names


class ClusterFit(TermExplainer):
    """A hybrid model's fit whose collection stays on the engine: ``scores_``,
    ``components_``, ``candidate_rows_`` and ``library_rows_`` as :class:`HybridModel` sets
    them, and its explanations (:meth:`similarities`, :meth:`shared_terms`, :meth:`drivers`)."""

    _DRIVER_LABELS = HybridModel._DRIVER_LABELS
    drivers = HybridModel.drivers


def fit_on_cluster(model: HybridModel, engine, collection, library: Sequence[Paper], pool_rows: Sequence[int],
                   not_feedback_rows: Sequence[int] = (), n_partitions: int | None = None) -> ClusterFit:
    """``fit_on_index(model, index, library, pool_rows, judgements={not_feedback: disliked})``
    with the collection (papers, or a :class:`CollectionIndex`) partitioned over ``engine``."""
    library = list(library)
    builder = model.index_builder()
    if isinstance(collection, CollectionIndex):
        index, vocabulary = collection, collection
        has_topics = collection.has_topics

        def fit_topics():
            return collection.lsa_components
    else:
        collection = list(collection)
        bounds = partition_bounds(len(collection), max(n_partitions or 1, engine.n_workers))
        index = build_partitioned(engine, [collection[start:stop] for start, stop in bounds], builder.use_char,
                                  builder.embedder)
        del collection
        vocabulary = index.vocabulary
        has_topics = lsa_fits(index.n_papers, len(vocabulary.word_terms), builder.lsa_components)

        def fit_topics():  # on one worker, only when some topic row is read (--diversity, the report)
            return engine.combine(_fit_lsa, index.parts, builder.lsa_components, builder.random_state)
    pool_rows = np.asarray(pool_rows, dtype=np.int64)
    scorer = AffinityScorer(model)
    scores, parts = scorer.score_library(index, library, engine, np.setdiff1d(np.arange(index.n_papers), pool_rows),
                                         np.asarray(not_feedback_rows, dtype=np.int64), explain=True,
                                         n_partitions=n_partitions)
    fit = ClusterFit()
    fit.scores_ = scores[pool_rows]
    fit.components_ = {name: values[pool_rows] for name, values in parts.items()}
    fit.library_rows_ = np.arange(len(library))
    fit.candidate_rows_ = len(library) + pool_rows
    # The library's word rows as `rank` weighs them: its own IDF, its own terms as extra columns.
    library_word, word_names, _ = vocabulary.library_tfidf("word", [paper.text for paper in library])
    fetched: dict[str, dict[int, object]] = {"word": {}, "lsa": {}}
    topics: list = []  # the components, once fitted (on the engine: a future there)

    def components():
        if not topics:
            topics.append(fit_topics())
        return topics[0]

    def fetch(rows: np.ndarray, with_topics: bool = False) -> dict:
        """The word rows (and topic rows) of collection ``rows``, each fetched once."""
        wanted = fetched["lsa" if with_topics else "word"]
        missing = np.unique(rows[[row not in wanted for row in rows.tolist()]]) if len(rows) else rows
        if len(missing):
            if isinstance(index, CollectionIndex):
                found = [(missing, index.word_rows[missing], index.lsa_rows[missing] if with_topics else None)]
            else:
                found = engine.collect(engine.step(take_rows, index.parts, [None] * len(index.parts), missing,
                                                   components() if with_topics else None), "out")
            for found_rows, word, lsa in found:
                for position, row in enumerate(found_rows.tolist()):
                    fetched["word"][row] = word[position]
                    if lsa is not None:
                        fetched["lsa"][row] = lsa[position:position + 1]
        return {name: {row: fetched[name].get(row) for row in rows.tolist()} for name in ("word", "lsa")}

    def library_topics() -> np.ndarray:
        local = components()
        if not isinstance(local, np.ndarray):
            local = engine.client.gather(local) if hasattr(engine, "client") else local
        return lsa_rows(library_word[:, : len(vocabulary.word_terms)], local)

    fit.rep_ = _ClusterRepresentations(library_word, library_topics if has_topics else None, fetch, word_names)
    dense = model.embedder is not None and model.dense_weight > 0
    fit.description_ = "hybrid: words and character n-grams with pseudo-relevance feedback" + (
        f" + {getattr(model.embedder, 'model_id', 'dense')} embeddings" if dense else "")
    return fit

