"""A collection index built partition by partition on an engine (this process or Dask workers).

:class:`~recommender.collection_index.CollectionIndexBuilder` tokenises the whole collection in
one process and holds every matrix there. :func:`build_partitioned` does the same fit with the
collection cut into partitions, in two map steps and one reduce:

1. each partition is tokenised (word uni+bigrams, character 4-grams, authors) with no
   vocabulary limits, and sends back its terms with their document frequencies (and, for
   BM25, their total counts); its count matrices stay where they were made;
2. here, the terms' document frequencies are summed over the partitions and the builder's
   rules applied to the sums (:func:`~recommender.collection_index.document_frequency_limits`),
   which gives the one-process vocabulary, IDF and BM25 statistics exactly;
3. each partition maps its local columns onto that vocabulary and keeps its rows
   (:class:`~recommender.partitioned_scoring.CollectionPart`).

Only vocabularies and per-term counts travel to this process, never a collection-sized
matrix; scoring then runs on the parts where they are (:mod:`recommender.affinity`). The
numbers equal the one-process index's: same vocabulary, same IDF, same rows.
"""
from __future__ import annotations

import warnings
from array import array
from dataclasses import dataclass
from itertools import repeat
from typing import Sequence

import numpy as np
from scipy import sparse

from .collection_index import LibraryWeighting
from .index_features import (author_incidence, bm25_parameters_of, bm25_weights, char_counter,
                             document_frequency_limits, embedder_id, idf_of, tfidf_rows, word_counter)
from .paper import Paper
from .partitioned_scoring import CollectionPart


@dataclass
class IndexVocabulary(LibraryWeighting):
    """The collection-wide fitted state of a partitioned index: what transforms a library (as
    :class:`~recommender.collection_index.CollectionIndex` does, by the same
    :class:`~recommender.collection_index.LibraryWeighting`)."""

    word_terms: list[str]
    word_idf: np.ndarray
    char_terms: list[str] | None
    char_idf: np.ndarray | None
    unigram_columns: np.ndarray
    bm25_idf: np.ndarray
    bm25_average_length: float
    author_names: list[str]
    n_papers: int
    # Collection papers holding each term (the library's IDF counts them with its own papers).
    word_df: np.ndarray
    char_df: np.ndarray | None = None
    embedder_id: str | None = None

    def document_frequencies(self, name: str) -> np.ndarray:
        return self.word_df if name == "word" else self.char_df


@dataclass
class PartitionedIndex:
    """A collection index whose rows live on an engine: ``parts`` (one
    :class:`CollectionPart` each, or a Dask future of one) holding rows ``bounds[i]``."""

    vocabulary: IndexVocabulary
    parts: list
    bounds: list[tuple[int, int]]
    paper_ids: list[str]

    @property
    def n_papers(self) -> int:
        return len(self.paper_ids)

    @property
    def embedder_id(self) -> str | None:
        return self.vocabulary.embedder_id

    def check_embedder(self, embedder) -> None:
        wanted = embedder_id(embedder)
        if wanted is not None and wanted != self.embedder_id:
            raise ValueError(f"the index holds {'no embeddings' if self.embedder_id is None else self.embedder_id}"
                             f" but embedder {wanted} was asked for")


# ------------------------------------------------------------------------------ map steps


def _local_counts(counter, texts: list[str]):
    """Counts of a partition with its own (unlimited) vocabulary: (csr, terms, df, total counts)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            counts = sparse.csr_matrix(counter.fit_transform(texts), dtype=np.float32)
        counts.sort_indices()  # sorted here, sorted on the collection's vocabulary: the order is kept
        terms = counter.get_feature_names_out().tolist()
    except ValueError:  # only stop words here: no terms, which other partitions may still have
        return sparse.csr_matrix((len(texts), 0), dtype=np.float32), [], np.zeros(0, np.int64), np.zeros(0)
    df = np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.int64)
    return counts, terms, df, np.asarray(counts.sum(axis=0), dtype=np.float64).ravel()


def count_partition(source, state, use_char: bool) -> dict:
    """Map 1: tokenise one partition (a list of papers, or ``(papers, embeddings)``, or a path
    read with ``connectors.load`` where it runs); its terms and document frequencies go out."""
    embeddings = None
    if isinstance(source, tuple):
        source, embeddings = source
    if not isinstance(source, list):
        import connectors  # a file read where the partition is processed (the pipeline's one I/O door)

        source = connectors.load(source)
    papers = source
    texts = [paper.text for paper in papers]
    word, word_terms, word_df, word_total = _local_counts(word_counter(n_papers=1), texts)
    out = {"n": len(papers), "ids": [paper.id for paper in papers], "word": (word_terms, word_df, word_total)}
    state = {"papers": papers, "word": word, "embeddings": embeddings}
    if use_char:
        char, char_terms, char_df, _ = _local_counts(char_counter(n_papers=1), texts)
        state["char"] = char
        out["char"] = (char_terms, char_df, None)
    authors: dict[str, int] = {}
    state["authors"] = author_incidence(papers, authors, grow=True)
    out["authors"] = list(authors)
    state["out"] = out
    return state


def _remapped(counts: sparse.csr_matrix, columns: np.ndarray, width: int) -> sparse.csr_matrix:
    """``counts`` with local column j moved to ``columns[j]`` (-1: dropped). The map keeps the
    order of the columns it keeps (both vocabularies are sorted), so rows stay sorted."""
    new = columns[counts.indices] if len(columns) else np.zeros(0, dtype=np.int64)
    keep = new >= 0
    row_of_value = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    lengths = np.bincount(row_of_value[keep], minlength=counts.shape[0])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sparse.csr_matrix((counts.data[keep], new[keep].astype(np.int32), indptr), shape=(counts.shape[0], width))


def place_partition(mapping: dict, state: dict, vocabulary: IndexVocabulary) -> CollectionPart:
    """Map 2: the partition's rows on the collection's vocabulary (``mapping``: offset and the
    local → global column maps of this partition)."""
    word_counts = _remapped(state["word"], mapping["word"], len(vocabulary.word_terms))
    char_rows = None
    if vocabulary.char_terms is not None:
        char_rows = tfidf_rows(_remapped(state["char"], mapping["char"], len(vocabulary.char_terms)),
                               vocabulary.char_idf)
    local_authors = state["authors"]
    authors = sparse.csr_matrix((local_authors.data, mapping["authors"][local_authors.indices], local_authors.indptr),
                                shape=(local_authors.shape[0], len(vocabulary.author_names)))
    authors.sort_indices()
    unigrams = word_counts[:, vocabulary.unigram_columns]
    return CollectionPart(mapping["offset"], state["papers"], tfidf_rows(word_counts, vocabulary.word_idf), char_rows,
                          state["embeddings"], bm25_weights(unigrams, vocabulary.bm25_idf, vocabulary.bm25_average_length),
                          authors)


# --------------------------------------------------------------------------------- reduce


class _TermCounts:
    """Document frequencies (and total counts) summed over partitions, in compact arrays; each
    term numbered when first seen."""

    def __init__(self):
        self.number: dict[str, int] = {}
        self.df = array("q")
        self.total = array("d")
        self.local: list[np.ndarray] = []  # per partition: its terms' numbers

    def add(self, terms: list[str], df: np.ndarray, total) -> None:
        number, df_sums, totals = self.number, self.df, self.total
        numbers = np.empty(len(terms), dtype=np.int32)
        for position, (term, count, tf) in enumerate(zip(terms, df.tolist(),
                                                         total.tolist() if total is not None else repeat(0.0))):
            found = number.get(term)
            if found is None:
                found = number[term] = len(df_sums)
                df_sums.append(count)
                totals.append(tf)
            else:
                df_sums[found] += count
                totals[found] += tf
            numbers[position] = found
        self.local.append(numbers)

    def vocabulary(self, kind: str, n_papers: int) -> tuple[list[str], np.ndarray, np.ndarray, list[np.ndarray]]:
        """The builder's vocabulary (sorted, limited by document frequency), its terms' df and
        total counts, and each partition's local → vocabulary column map."""
        min_df, max_df = document_frequency_limits(kind, n_papers)
        df = np.frombuffer(self.df, dtype=np.int64)
        kept = (df >= min_df) & (df <= max_df * n_papers)
        terms = sorted(term for term, number in self.number.items() if kept[number])
        if not terms:
            raise ValueError("cannot build a vocabulary from the collection's texts (after pruning, no terms remain)")
        column = np.full(len(df), -1, dtype=np.int64)
        numbers = np.array([self.number[term] for term in terms], dtype=np.int64)
        column[numbers] = np.arange(len(terms))
        return terms, df[numbers], np.frombuffer(self.total)[numbers], [column[local] for local in self.local]


def build_partitioned(engine, sources: Sequence, use_char: bool = True, embedder=None) -> PartitionedIndex:
    """Fit a collection index with its rows built and kept on ``engine``'s workers.

    ``sources``: one per partition, in collection order: a list of papers, or a path each
    worker reads itself (``connectors.load``; the papers then never pass through here).
    ``embedder`` embeds paper lists here, partition by partition (paths: not supported).
    """
    items = []
    for source in sources:
        if embedder is not None:
            if not isinstance(source, list):
                raise ValueError("embeddings of partitions read by the workers are not supported; "
                                 "give the papers, or no embedder")
            texts = [paper.text for paper in source]
            source = (source, np.asarray(embedder.embed(texts), dtype=np.float32).reshape(len(texts), -1))
        items.append(source)
    states = engine.step(count_partition, engine.put(items), [None] * len(items), use_char)
    word, char = _TermCounts(), _TermCounts()
    authors: dict[str, int] = {}
    author_maps, sizes, ids = [], [], []
    for state in states:  # one partition's terms at a time: never every partition's lists at once
        (out,) = engine.collect([state], "out")
        word.add(*out["word"])
        if use_char:
            char.add(*out["char"])
        author_maps.append(np.array([authors.setdefault(name, len(authors)) for name in out["authors"]],
                                    dtype=np.int64))
        sizes.append(out["n"])
        ids.extend(out["ids"])
        del out
    n_papers = sum(sizes)
    if not n_papers:
        raise ValueError("the collection has no papers to index")
    word_terms, word_df, word_total, word_maps = word.vocabulary("word", n_papers)
    unigram_columns = np.flatnonzero([" " not in term for term in word_terms])
    bm25_idf, average_length = bm25_parameters_of(word_df[unigram_columns], float(word_total[unigram_columns].sum()),
                                                  n_papers)
    char_terms = char_idf = char_df = None
    char_maps = [None] * len(sizes)
    if use_char:
        char_terms, char_df, _, char_maps = char.vocabulary("char", n_papers)
        char_idf = idf_of(char_df, n_papers)
    vocabulary = IndexVocabulary(word_terms, idf_of(word_df, n_papers), char_terms, char_idf, unigram_columns,
                                 bm25_idf, average_length, list(authors), n_papers, word_df, char_df,
                                 embedder_id(embedder))
    offsets = np.cumsum([0] + sizes)
    mappings = [{"offset": int(offsets[i]), "word": word_maps[i], "char": char_maps[i], "authors": author_maps[i]}
                for i in range(len(sizes))]
    parts = engine.step(place_partition, engine.put(mappings), states, vocabulary)
    del states
    bounds = [(int(start), int(stop)) for start, stop in zip(offsets[:-1], offsets[1:])]
    return PartitionedIndex(vocabulary, parts, bounds, ids)


def index_on(engine, builder, papers: Sequence[Paper], n_partitions: int | None = None):
    """The index ``builder`` (a :class:`CollectionIndexBuilder`) fits on ``papers``: built in
    this process by a local engine, partition by partition on the workers of a cluster."""
    from .affinity import partition_bounds
    from .cluster import LocalEngine

    if isinstance(engine, LocalEngine):
        return builder.set_params(lsa_components=0).build(papers)
    papers = list(papers)
    if not papers:
        raise ValueError("the collection has no papers to index")
    bounds = partition_bounds(len(papers), max(n_partitions or 1, engine.n_workers))
    return build_partitioned(engine, [papers[start:stop] for start, stop in bounds], use_char=builder.use_char,
                             embedder=builder.embedder)
