"""A collection index built partition by partition on an engine (this process or Dask workers).

:class:`~recommender.features.collection_index.CollectionIndexBuilder` tokenises the whole collection in
one process and holds every matrix there. :func:`build_partitioned` does the same fit with the
collection cut into partitions, in two map steps and one reduce:

1. each partition is tokenised (word uni+bigrams, character 4-grams, authors) with no
   vocabulary limits, and sends back its terms with their document frequencies (and, for
   BM25, their total counts), word terms as numbers (its distinct words and, per term, the
   places of its two words); its count matrices stay where they were made;
2. here (:mod:`recommender.scale.partition_terms`), the terms' document frequencies are summed
   over the partitions and the builder's rules applied to the sums
   (:func:`~recommender.features.collection_index.document_frequency_limits`), which gives the one-process vocabulary, IDF and BM25 statistics exactly;
3. each partition maps its local columns onto that vocabulary and keeps its rows
   as counts (:class:`CompactPart`).

Only vocabularies and per-term counts travel to this process, never a collection-sized
matrix; scoring then runs on the parts where they are (:mod:`recommender.scale.affinity`). The
numbers equal the one-process index's: same vocabulary, same IDF, same rows.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import sparse

from recommender.features.compact_counts import compact_counts
from recommender.features.index_features import (
    CountedTfidf,
    author_incidence,
    bm25_parameters_of,
    bm25_weights,
    count_chars,
    embedder_id,
    fold_accents,
    idf_of,
    tfidf_norms,
)
from recommender.features.library_weighting import LibraryWeighting
from recommender.paper import Paper
from recommender.scale.cluster import LocalEngine, partition_bounds
from recommender.scale.partition_terms import TermCounts, WordTermCounts


@dataclass
class IndexVocabulary(LibraryWeighting):
    """The collection-wide fitted state of a partitioned index: what transforms a library (as
    :class:`~recommender.features.collection_index.CollectionIndex` does, by the same
    :class:`~recommender.features.library_weighting.LibraryWeighting`)."""

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
    :class:`CompactPart` each, or a Dask future of one) holding rows ``bounds[i]``."""

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


def _local_words(texts: list[str]):
    """A partition's word counts with its own (unlimited) vocabulary, its terms as numbers
    (see :class:`~recommender.scale.partition_terms.WordTermCounts`): (csr, (words, first, second,
    df, total counts))."""
    from recommender.features.word_grams import CodePoints, word_grams
    from recommender.text import STOP_WORDS

    try:
        grams = word_grams(CodePoints(texts, fold_accents), STOP_WORDS)
    except ValueError:  # only stop words here: no terms, which other partitions may still have
        none = np.zeros(0, np.int64)
        return sparse.csr_matrix((len(texts), 0), dtype=np.float32), ([], none, none, none, np.zeros(0))
    counts = grams.counts
    # 32-bit numbers: half the bytes to send (a partition's words and counts fit them).
    df = np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.int32)
    totals = np.bincount(counts.indices, weights=counts.data, minlength=counts.shape[1]).astype(np.int32)
    return counts, (grams.words, grams.first.astype(np.int32), grams.second.astype(np.int32), df, totals)


def _local_chars(texts: list[str]):
    """A partition's character n-gram counts with its own vocabulary: (csr, (n-grams, df, None))."""
    try:
        counts, terms = count_chars(texts, n_papers=1)  # one paper's limits: every n-gram
    except ValueError:
        return sparse.csr_matrix((len(texts), 0), dtype=np.float32), ([], np.zeros(0, np.int64), None)
    return counts, (terms, np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.int32), None)


def count_partition(source, state, use_char: bool, read: Callable[[object], list] | None = None) -> dict:
    """Map 1: tokenise one partition (a list of papers, or ``(papers, embeddings)``, or a source
    that ``read`` turns into papers where it runs); its terms and document frequencies go out,
    its counts (compact) and the papers' identity keys stay, not the papers."""
    seconds = {}
    started = time.time()  # wall clock: compared with the driver's (same machine, or near enough)
    clock = time.perf_counter()
    embeddings = None
    if isinstance(source, tuple):
        source, embeddings = source
    if not isinstance(source, list):
        # A file read where the partition is processed, by the reader the caller chose (the
        # pipeline passes connectors.load: this room does no I/O of its own).
        if read is None:
            raise ValueError(f"partition {source!r} is not a list of papers, and no reader was given")
        source = read(source)
    papers = source
    texts = [paper.text for paper in papers]
    clock = _lap(seconds, "read", clock)
    word, out_word = _local_words(texts)
    out = {"n": len(papers), "ids": [paper.id for paper in papers], "word": out_word}
    state = {"word": compact_counts(word), "embeddings": embeddings}
    del word, out_word
    clock = _lap(seconds, "words", clock)
    if use_char:
        char, out["char"] = _local_chars(texts)
        state["char"] = compact_counts(char)
        del char
        clock = _lap(seconds, "char 4-grams", clock)
    del texts
    authors: dict[str, int] = {}
    state["authors"] = author_incidence(papers, authors, grow=True)
    out["authors"] = list(authors)
    state["keys"] = [tuple(paper.identity_keys()) for paper in papers]
    _lap(seconds, "authors and identity keys", clock)
    out["seconds"], out["started"] = seconds, started
    state["out"] = out
    return state


def _without_terms(state: dict, _) -> dict:
    """The state of :func:`count_partition` without what went to the driver (no copy of the rest)."""
    return {key: value for key, value in state.items() if key != "out"}


def _lap(seconds: dict, name: str, since: float) -> float:
    now = time.perf_counter()
    seconds[name] = now - since
    return now


def _remapped(counts: sparse.csr_matrix, columns: np.ndarray, width: int) -> sparse.csr_matrix:
    """``counts`` with local column j moved to ``columns[j]`` (-1: dropped). The map keeps the
    order of the columns it keeps (both vocabularies are sorted), so rows stay sorted."""
    new = columns[counts.indices] if len(columns) else np.zeros(0, dtype=np.int32)
    if len(columns) and columns.min() >= 0:  # every local term kept (most partitions' character n-grams)
        return sparse.csr_matrix((counts.data, new.astype(np.int32, copy=False), counts.indptr),
                                 shape=(counts.shape[0], width))
    keep = new >= 0
    row_of_value = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    lengths = np.bincount(row_of_value[keep], minlength=counts.shape[0])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sparse.csr_matrix((counts.data[keep], new[keep].astype(np.int32), indptr.astype(np.int32)),
                             shape=(counts.shape[0], width))


@dataclass
class RowWeights:
    """What makes a partition's rows from its counts: the vocabulary's IDF and BM25 statistics,
    without its terms (the part of :class:`IndexVocabulary` the workers need)."""

    word_idf: np.ndarray
    char_idf: np.ndarray | None
    unigram_columns: np.ndarray
    bm25_idf: np.ndarray
    bm25_average_length: float

    @classmethod
    def of(cls, vocabulary: IndexVocabulary) -> "RowWeights":
        return cls(vocabulary.word_idf, vocabulary.char_idf, vocabulary.unigram_columns, vocabulary.bm25_idf,
                   vocabulary.bm25_average_length)


class CompactPart:
    """Rows ``offset .. offset + len(self)`` of a partitioned index, kept as counts: the word
    and character TF-IDF and the BM25 rows are made from them each time a scoring step reads
    them, by the functions that make the one-process index's (the same numbers). A paper's
    character TF-IDF row takes ~5 KB as float32; its counts ~3 KB, which is what lets a worker
    hold 500,000 papers in a few GB (see the README's affinity at scale). The papers are not
    kept, only their identity keys (what leaves a profile's own papers out)."""

    def __init__(self, offset: int, keys: list[tuple[str, ...]], word_counts, char_counts, embeddings, authors,
                 weights: RowWeights):
        self.offset, self.keys, self.embeddings, self.authors = offset, keys, embeddings, authors
        self.word_counts, self.char_counts, self.weights = word_counts, char_counts, weights
        # Each row's norm before normalising (16 bytes a paper), found once: every scoring
        # step that reads the rows then only divides by it.
        self.word_norms = tfidf_norms(word_counts, weights.word_idf)
        self.char_norms = None if char_counts is None else tfidf_norms(char_counts, weights.char_idf)

    def __len__(self) -> int:
        return len(self.keys)

    def identity_keys(self) -> list[tuple[str, ...]]:
        return self.keys

    def scoring_rows(self) -> tuple[CountedTfidf, CountedTfidf | None]:
        """The word and character TF-IDF rows as scoring reads them: a product with a few library
        vectors makes only the columns those use."""
        char = None if self.char_counts is None else CountedTfidf(self.char_counts, self.weights.char_idf,
                                                                  self.char_norms)
        return CountedTfidf(self.word_counts, self.weights.word_idf, self.word_norms), char

    @property
    def word(self) -> sparse.csr_matrix:
        return self.scoring_rows()[0].rows()

    @property
    def char(self) -> sparse.csr_matrix | None:
        char = self.scoring_rows()[1]
        return None if char is None else char.rows()

    def lexical_rows(self, rows: np.ndarray) -> tuple[sparse.csr_matrix, sparse.csr_matrix | None]:
        """The word and character TF-IDF rows ``rows`` (of this part), made from those rows' counts
        only (a row's TF-IDF depends on its own counts: the numbers of :attr:`word` and :attr:`char`)."""
        word, char = self.scoring_rows()
        return word.take(rows), None if char is None else char.take(rows)

    @property
    def bm25(self) -> sparse.csr_matrix:
        weights = self.weights
        return bm25_weights(self.word_counts[:, weights.unigram_columns], weights.bm25_idf,
                            weights.bm25_average_length)


def place_partition(mapping: dict, state: dict, weights: RowWeights, widths: tuple[int, int, int]) -> CompactPart:
    """Map 2: the partition's counts on the collection's vocabulary (``mapping``: offset and the
    local → global column maps of this partition; ``widths``: words, char n-grams, authors)."""
    word_counts = _remapped(state["word"], mapping["word"], widths[0])
    char_counts = None if weights.char_idf is None else _remapped(state["char"], mapping["char"], widths[1])
    local_authors = state["authors"]
    authors = sparse.csr_matrix((local_authors.data, mapping["authors"][local_authors.indices], local_authors.indptr),
                                shape=(local_authors.shape[0], widths[2]))
    authors.sort_indices()
    return CompactPart(mapping["offset"], state["keys"], word_counts, char_counts, state["embeddings"], authors,
                       weights)


# --------------------------------------------------------------------------------- reduce


def build_partitioned(engine, sources: Sequence, use_char: bool = True, embedder=None,
                      progress: Callable[[str], None] | None = None,
                      read: Callable[[object], list] | None = None) -> PartitionedIndex:
    """Fit a collection index with its rows built and kept on ``engine``'s workers.

    ``sources``: one per partition, in collection order: a list of papers, or a path each
    worker reads itself with ``read`` (e.g. ``connectors.load``, a module-level function, so
    that it travels to Dask workers by name; the papers then never pass through here).
    ``embedder`` embeds paper lists here, partition by partition (paths: not supported).
    ``progress`` is told, as it happens, each partition's seconds per stage (a long build
    stopped half-way still says how far it got and what took the time).
    """
    report = progress or (lambda message: None)
    began = time.time()
    items = []
    for source in sources:
        if embedder is not None:
            if not isinstance(source, list):
                raise ValueError("embeddings of partitions read by the workers are not supported; "
                                 "give the papers, or no embedder")
            texts = [paper.text for paper in source]
            source = (source, np.asarray(embedder.embed(texts), dtype=np.float32).reshape(len(texts), -1))
        items.append(source)
    counted = engine.step(count_partition, engine.put(items), [None] * len(items), use_char, read)
    # Each partition's terms, picked out as soon as it is counted (urgent: before the worker's
    # next partition, so nothing waits for a busy worker); the worker keeps its counts, not
    # the term lists (as much again as the counts).
    outs = engine.pick(counted, "out")
    states = engine.step(_without_terms, counted, [None] * len(counted), urgent=True)
    del counted
    word, char = WordTermCounts(), TermCounts()
    found: list[tuple[int, list[str], list[str]]] = [None] * len(states)  # per partition: size, ids, authors
    for done, (number, out) in enumerate(engine.completed(outs), start=1):  # one partition at a time, as each is done
        outs[number] = None
        out = engine.value(out)
        clock = time.perf_counter()
        word.add(number, *out["word"])
        if use_char:
            char.add(number, *out["char"])
        found[number] = (out["n"], out["ids"], out["authors"])
        report(f"partition {number + 1} tokenised, {done}/{len(states)} done ({out['n']:,} papers; started "
               f"{out['started'] - began:.1f} s after the build; "
               + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in out["seconds"].items())
               + f"); its {len(out['word'][1]):,} word and {len(out['char'][0]) if use_char else 0:,} character terms"
               f" folded here in {time.perf_counter() - clock:.1f} s")
        del out
    authors: dict[str, int] = {}  # numbered in collection order, as the one-process index numbers them
    author_maps = [np.array([authors.setdefault(name, len(authors)) for name in names], dtype=np.int64)
                   for _, _, names in found]
    sizes = [size for size, _, _ in found]
    ids = [paper_id for _, partition_ids, _ in found for paper_id in partition_ids]
    del found
    n_papers = sum(sizes)
    if not n_papers:
        raise ValueError("the collection has no papers to index")
    clock = time.perf_counter()
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
    report(f"vocabulary of {n_papers:,} papers: {len(word_terms):,} words, {len(char_terms or ()):,} character "
           f"4-grams (of {len(word):,} and {len(char):,} seen), IDF and BM25 in {time.perf_counter() - clock:.1f} s")
    widths = (len(word_terms), len(char_terms or ()), len(authors))
    parts = engine.step(place_partition, engine.put(mappings), states, RowWeights.of(vocabulary), widths)
    del states
    bounds = [(int(start), int(stop)) for start, stop in zip(offsets[:-1], offsets[1:])]
    return PartitionedIndex(vocabulary, parts, bounds, ids)


def index_on(engine, builder, papers: Sequence[Paper], n_partitions: int | None = None):
    """The index ``builder`` (a :class:`CollectionIndexBuilder`) fits on ``papers``: built in
    this process by a local engine, partition by partition on the workers of a cluster."""
    if isinstance(engine, LocalEngine):
        return builder.set_params(lsa_components=0).build(papers)
    papers = list(papers)
    if not papers:
        raise ValueError("the collection has no papers to index")
    bounds = partition_bounds(len(papers), max(n_partitions or 1, engine.n_workers))
    return build_partitioned(engine, [papers[start:stop] for start, stop in bounds], use_char=builder.use_char,
                             embedder=builder.embedder)
