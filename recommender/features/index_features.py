"""What an index's numbers are made of: the vectorisers and their rules, IDF, TF-IDF and BM25
rows, author incidence, the LSA topic space, and the feature layout an index file is checked
against. One definition for the one-process :class:`~recommender.features.collection_index.CollectionIndex`
and the partitioned one (:mod:`recommender.scale.partitioned_index`).

Length: each scikit-learn vectoriser rule sits beside the numpy counting that replaces it on
the ranking path, so that the pair is read, and tested, together.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Sequence

import numpy as np
from scipy import sparse

from recommender.features.representations import author_key, run_aside
from recommender.features.sparse_products import divide_rows, normalize_rows, row_norms
from recommender.paper import Paper
from recommender.text import STOP_WORDS, strip_accents

# Everything that decides what an index's numbers mean. An index built under another layout
# (other n-gram ranges, another tokeniser, other stop words) cannot be scored against.
_LAYOUT_SETTINGS = {
    "word": {"ngram_range": [1, 2], "strip_accents": "unicode", "tf": "sublinear", "idf": "smooth",
             "min_df": "2 from 5000 papers", "max_df": "0.9 from 10 papers"},
    "char": {"analyzer": "char_wb", "ngram_range": [4, 4], "strip_accents": "unicode", "tf": "sublinear",
             "min_df": "2 from 5000 papers"},
    "title": {"strip_accents": "unicode", "tf": "sublinear"},
    "bm25": {"k1": 1.2, "b": 0.75},
    "lsa": "word tf-idf @ components.T, L2",
    "text": "title + abstract (Paper.text)",
}


def feature_layout() -> str:
    """Fingerprint of the representation settings and stop words (stored in every index)."""
    payload = json.dumps({"settings": _LAYOUT_SETTINGS, "stop_words": sorted(STOP_WORDS)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


# Terms seen in one paper only are kept below this collection size: matched by one library
# paper, such a term is the strongest evidence there is (on CSFCube, dropping them costs NDCG).
MIN_DF_FROM = 5000
MAX_DF_FROM = 10


def document_frequency_limits(kind: str, n_papers: int) -> tuple[int, float]:
    """``(min_df, max_df)`` of the ``word`` or ``char`` vocabulary of a collection of ``n_papers``
    (scikit-learn's meaning: a term is kept when min_df <= df <= max_df * n_papers). One rule
    for the one-process builder and the partitioned one."""
    min_df = 2 if n_papers >= MIN_DF_FROM else 1
    return min_df, (0.9 if kind == "word" and n_papers >= MAX_DF_FROM else 1.0)


def word_counter(vocabulary=None, n_papers: int = 0):
    from sklearn.feature_extraction.text import CountVectorizer

    if vocabulary is not None:
        return CountVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, ngram_range=(1, 2),
                               vocabulary=vocabulary, dtype=np.float32)
    min_df, max_df = document_frequency_limits("word", n_papers)
    return CountVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, ngram_range=(1, 2),
                           min_df=min_df, max_df=max_df, dtype=np.float32)


def char_counter(vocabulary=None, n_papers: int = 0):
    from sklearn.feature_extraction.text import CountVectorizer

    min_df = document_frequency_limits("char", n_papers)[0] if vocabulary is None else 1
    return CountVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode", dtype=np.float32,
                           vocabulary=vocabulary, min_df=min_df)


def fold_accents(text: str) -> str:
    """The character counter's preprocessing (``strip_accents="unicode"``, lower case)."""
    return strip_accents(text.lower())


def title_counter(vocabulary=None):
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, vocabulary=vocabulary, dtype=np.float32)


# title_counter's token pattern (scikit-learn's default).
_TITLE_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")


@functools.lru_cache(maxsize=None)
def title_analyzer():
    """:func:`title_counter`'s analyzer with the character counter's folding (the same terms as
    ``strip_accents="unicode"``, faster): tokens of two or more word characters, stop words
    dropped. Written out rather than built by the vectoriser, so that ranking against an index
    imports no scikit-learn; a test checks it gives the vectoriser's terms."""
    stop_words = frozenset(STOP_WORDS)
    findall = _TITLE_TOKEN_RE.findall

    def analyze(text: str) -> list[str]:
        return [token for token in findall(fold_accents(text)) if token not in stop_words]

    return analyze


def count_words(texts: list[str], n_papers: int, term_list: bool = False) -> tuple[sparse.csr_matrix, Sequence[str]]:
    """``fit_counts(word_counter(n_papers=n_papers), texts)``: the same counts and terms, counted
    with numpy (:func:`~recommender.features.word_grams.count_word_grams`, several times faster), the
    vocabulary limits applied as the vectoriser applies them. ValueError when no term is left.

    ``term_list``: the terms as a :class:`~recommender.features.term_list.TermList` (their words
    and positions) instead of strings: a collection's 250,000 terms are then never joined
    (3,000 abstracts: 50 ms and 15 MB less), and an index file stores them so."""
    from recommender.features.term_list import TermList
    from recommender.features.word_grams import CodePoints, join_terms, word_grams

    grams = word_grams(CodePoints(texts, fold_accents), STOP_WORDS)
    counts = grams.counts
    min_df, max_df = document_frequency_limits("word", n_papers)
    document_frequency = np.bincount(counts.indices, minlength=counts.shape[1])
    kept = (document_frequency >= min_df) & (document_frequency <= max_df * len(texts))
    if not kept.any():
        raise ValueError("after pruning, no terms remain")
    if not kept.all():
        counts = sparse.csr_matrix(counts[:, kept])
        counts.sort_indices()
    first, second = (grams.first, grams.second) if kept.all() else (grams.first[kept], grams.second[kept])
    if term_list:
        return counts, TermList(grams.words, first, np.where(second < 0, 0, second + 1)).compacted()
    # Only the kept terms are made strings: at 30,000 abstracts 322,000 of 1.4 million (0.3 s less).
    return counts, join_terms(grams.words, first, second)


def count_titles(titles: list[str]) -> tuple[sparse.csr_matrix, list[str]]:
    """``fit_counts(title_counter(), titles)``: the same counts and terms, counted with numpy
    (the unigram columns of :func:`~recommender.features.word_grams.count_word_grams`), so that
    indexing imports no scikit-learn. ValueError when no title holds a term."""
    from recommender.features.word_grams import CodePoints, word_grams

    grams = word_grams(CodePoints(titles, fold_accents), STOP_WORDS)
    unigrams = np.flatnonzero(grams.second < 0)
    counts = sparse.csr_matrix(grams.counts[:, unigrams])
    counts.sort_indices()
    return counts, [grams.words[first] for first in grams.first[unigrams].tolist()]


def fit_counts(counter, texts: list[str]) -> tuple[sparse.csr_matrix, list[str]]:
    counts = sparse.csr_matrix(counter.fit_transform(texts), dtype=np.float32)
    counts.sort_indices()  # canonical rows: a partitioned build gives the same arrays, hence the same sums
    return counts, counter.get_feature_names_out().tolist()


def count_chars(texts: list[str], n_papers: int, compact: bool = False) -> tuple[sparse.csr_matrix, list[str]]:
    """``fit_counts(char_counter(n_papers=n_papers), texts)``: the same counts and n-grams,
    counted with numpy (:func:`~recommender.features.char_grams.count_char_grams`), the vectoriser's
    ``min_df`` applied as it applies it. ValueError when no n-gram is left. ``compact``: the
    counts in 8 or 16 bits (:func:`~recommender.features.compact_counts.compact_counts`)."""
    from recommender.features.char_grams import count_char_grams
    from recommender.features.compact_counts import compact_counts, keep_columns

    counts, grams = count_char_grams(texts, fold_accents, compact=compact)
    if compact:
        counts = compact_counts(counts)  # (already so unless counted the slow way)
    kept = np.bincount(counts.indices, minlength=len(grams)) >= document_frequency_limits("char", n_papers)[0]
    if not kept.any():
        raise ValueError("no character n-grams in the texts")
    if not kept.all():
        counts, grams = keep_columns(counts, kept), grams[kept]
    return counts, grams.tolist()


def start_char_job(texts: list[str]):
    """The collection's character n-gram counts (:func:`count_chars`), in a second process for
    large collections (see :func:`~recommender.features.representations.run_aside`); returns a function
    giving them; the counts compact (:func:`~recommender.features.compact_counts.compact_counts`),
    made so where they are counted: a quarter of the bytes to hand over."""
    return run_aside(_compact_char_counts, texts, len(texts), n_papers=len(texts))


def _compact_char_counts(texts: list[str], n_papers: int) -> tuple[sparse.csr_matrix, list[str]]:
    return count_chars(texts, n_papers, compact=True)


def smooth_idf(counts: sparse.csr_matrix) -> np.ndarray:
    """scikit-learn's smooth IDF, ln((1 + n) / (1 + df)) + 1, of each column of ``counts``."""
    return idf_of(np.bincount(counts.indices, minlength=counts.shape[1]), counts.shape[0])


def idf_of(document_frequency: np.ndarray, n_papers: int) -> np.ndarray:
    """Smooth IDF from each term's document frequency among ``n_papers``."""
    return (np.log((1.0 + n_papers) / (1.0 + np.asarray(document_frequency))) + 1.0).astype(np.float32)


def tfidf_rows(counts: sparse.csr_matrix, idf: np.ndarray, norms: np.ndarray | None = None,
               share_structure: bool = False) -> sparse.csr_matrix:
    """Sublinear-tf TF-IDF rows, L2-normalised (scikit-learn's ``TfidfTransformer(sublinear_tf=True)``,
    bit for bit). ``norms``: the rows' norms before normalising, when already known
    (:func:`tfidf_norms`); ``share_structure``: see :func:`unnormalised_tfidf`."""
    rows = unnormalised_tfidf(counts, idf, share_structure)
    return divide_rows(rows, row_norms(rows) if norms is None else norms)


class CountedTfidf:
    """TF-IDF rows held as their counts, IDF and row norms (how a partition of a large collection
    keeps them: ~3x smaller), made on demand, whole (:meth:`rows`) or only some columns
    (:meth:`columns`), with :func:`tfidf_rows`' numbers bit for bit.

    Parameters
    ----------
    counts : CSR matrix of shape (n, d)
    idf : ndarray of shape (d,)
    norms : ndarray of shape (n,), :func:`tfidf_norms` of ``counts`` and ``idf``
    """

    def __init__(self, counts: sparse.csr_matrix, idf: np.ndarray, norms: np.ndarray):
        self.counts, self.idf, self.norms = counts, idf, norms

    @property
    def shape(self) -> tuple[int, int]:
        return self.counts.shape

    dtype = np.dtype(np.float32)

    def rows(self) -> sparse.csr_matrix:
        return tfidf_rows(self.counts, self.idf, self.norms)

    def take(self, rows) -> sparse.csr_matrix:
        """``rows()[rows]`` (row numbers, a slice or one row), made from those rows' counts only."""
        if isinstance(rows, (int, np.integer)):
            rows = [int(rows)]
        return tfidf_rows(self.counts[rows], self.idf, self.norms[rows])

    __getitem__ = take

    def column_counts(self) -> np.ndarray:
        """How many rows hold each column."""
        return np.bincount(self.counts.indices, minlength=self.shape[1])

    def widened(self, n_columns: int) -> "CountedTfidf":
        """The same rows with empty columns appended up to ``n_columns`` (no copy)."""
        return CountedTfidf(widen_columns(self.counts, n_columns), self.idf, self.norms)

    def columns(self, columns: np.ndarray) -> sparse.csr_matrix:
        """``rows()[:, columns]`` (``columns`` sorted and distinct), made from those columns' counts only."""
        kept = unnormalised_tfidf(self.counts[:, columns], self.idf[columns], share_structure=True)
        return divide_rows(kept, self.norms)


_NORM_ROWS = 4096


def tfidf_norms(counts: sparse.csr_matrix, idf: np.ndarray) -> np.ndarray:
    """The norms :func:`tfidf_rows` divides the rows by, float64 of shape (n,): a block of rows
    at a time (each row's sum is its own, so the same numbers), not the weights and their
    float64 squares of every entry at once (30,000 abstracts' character rows: +230 MB)."""
    counts = sparse.csr_matrix(counts)
    norms = np.empty(counts.shape[0], dtype=np.float64)
    for start in range(0, counts.shape[0], _NORM_ROWS):
        block = counts[start:start + _NORM_ROWS]
        norms[start:start + block.shape[0]] = row_norms(unnormalised_tfidf(block, idf, share_structure=True))
    return norms


# log(count) + 1 in float32 for every count an unsigned 8- or 16-bit count matrix can hold:
# the sublinear tf of a compact count matrix is then one look-up per entry.
_SUBLINEAR_TF = {}


def _sublinear_tf_table(dtype) -> np.ndarray:
    if dtype not in _SUBLINEAR_TF:
        with np.errstate(divide="ignore"):  # log(0): no entry holds a zero count
            _SUBLINEAR_TF[dtype] = np.log(np.arange(np.iinfo(dtype).max + 1, dtype=np.float32)) + np.float32(1.0)
    return _SUBLINEAR_TF[dtype]


def unnormalised_tfidf(counts: sparse.csr_matrix, idf: np.ndarray, share_structure: bool = False) -> sparse.csr_matrix:
    """(log(count) + 1) * idf of each entry, float32, before the rows are normalised; with
    ``share_structure``, its column indices and row pointers are ``counts``' own (read only)."""
    counts = sparse.csr_matrix(counts)
    if counts.dtype in (np.uint8, np.uint16):
        data = _sublinear_tf_table(counts.dtype.type)[counts.data]
    else:
        data = np.log(counts.data.astype(np.float32)) + 1.0
    data *= idf[counts.indices]
    if share_structure:
        return sparse.csr_matrix((data, counts.indices, counts.indptr), shape=counts.shape, copy=False)
    return sparse.csr_matrix((data, counts.indices.copy(), counts.indptr.copy()), shape=counts.shape)


def bm25_parameters(unigram_counts: sparse.csr_matrix) -> tuple[np.ndarray, float]:
    """Okapi BM25 IDF of each term and the average document length."""
    document_frequency = np.bincount(unigram_counts.indices, minlength=unigram_counts.shape[1])
    return bm25_parameters_of(document_frequency, float(unigram_counts.sum(dtype=np.float64)), unigram_counts.shape[0])


def bm25_parameters_of(document_frequency: np.ndarray, total_length: float, n_docs: int) -> tuple[np.ndarray, float]:
    """:func:`bm25_parameters` from the terms' document frequencies and the summed lengths."""
    document_frequency = np.asarray(document_frequency)
    idf = np.log1p((n_docs - document_frequency + 0.5) / (document_frequency + 0.5)).astype(np.float32)
    return idf, max(total_length / n_docs if n_docs else 1.0, 1e-9)


def bm25_weights(unigram_counts: sparse.csr_matrix, idf: np.ndarray, average_length: float,
                 k1: float = 1.2, b: float = 0.75) -> sparse.csr_matrix:
    """BM25 document weights of each (row, term), with a collection's IDF and average length."""
    weights = sparse.csr_matrix(unigram_counts, dtype=np.float32, copy=True)
    lengths = np.asarray(weights.sum(axis=1)).ravel()
    row_of_value = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    tf = weights.data
    weights.data = (idf[weights.indices] * tf * (k1 + 1)
                    / (tf + k1 * (1 - b + b * lengths[row_of_value] / average_length))).astype(np.float32)
    return weights


def _author_keys(paper: Paper) -> list[str]:
    return sorted({author_key(author) for author in paper.authors} - {""})


def author_incidence(papers: Sequence[Paper], vocabulary: dict[str, int], grow: bool) -> sparse.csr_matrix:
    """Paper × author 0/1 matrix; with ``grow``, names not yet in ``vocabulary`` are added to it."""
    rows, cols = [], []
    for row, paper in enumerate(papers):
        for name in _author_keys(paper):
            column = vocabulary.setdefault(name, len(vocabulary)) if grow else vocabulary.get(name)
            if column is not None:
                rows.append(row)
                cols.append(column)
    return sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                             shape=(len(papers), len(vocabulary)))


def embedder_id(embedder) -> str | None:
    return None if embedder is None else str(getattr(embedder, "model_id", type(embedder).__name__))


def widen_columns(rows, n_columns: int):
    """``rows`` (a CSR matrix or a :class:`CountedTfidf`) with empty columns appended up to
    ``n_columns`` (no copy)."""
    if isinstance(rows, CountedTfidf):
        return rows.widened(n_columns)
    return sparse.csr_matrix((rows.data, rows.indices, rows.indptr), shape=(rows.shape[0], n_columns))


class ColumnNames:
    """The names of a run's word (or char) columns: the index's vocabulary, then the library's
    own terms (the ``get_feature_names_out`` of a vectoriser)."""

    def __init__(self, index_terms: Sequence[str], library_terms: list[str]):
        self._terms = (index_terms, library_terms)

    def get_feature_names_out(self) -> np.ndarray:
        return np.asarray(list(self._terms[0]) + list(self._terms[1]), dtype=object)


def lsa_fits(n_rows: int, n_terms: int, n_components: int) -> bool:
    """Whether :func:`fit_lsa` makes a topic space of ``n_components`` from so many rows and terms."""
    return bool(n_components) and min(n_rows, n_terms) > n_components + 1


def fit_lsa(word_rows: sparse.csr_matrix, n_components: int, random_state: int = 0) -> np.ndarray | None:
    """The LSA topic space (TruncatedSVD) of a collection's word TF-IDF rows, as the rows' basis:
    ``U / s`` of the truncated SVD ``X ≈ U diag(s) Vt``, float32, shape ``(n_rows, n_components)``.

    The components follow from it and the rows it was fitted on (:func:`components_from_basis`), so
    an index stores ``n_rows x k`` numbers instead of ``k x n_terms`` (0.8 MB instead of 49 MB
    for 3,000 papers). None when there are too few rows or terms for ``n_components`` (or it is 0).
    """
    if not lsa_fits(*word_rows.shape, n_components):
        return None
    from sklearn.utils.extmath import randomized_svd
    from threadpoolctl import threadpool_limits

    # TruncatedSVD(algorithm="randomized", n_iter=3)'s own call, for U (it keeps only s and Vt).
    # Measured: the randomized SVD's small dense QR/LU steps run ~15x slower on two
    # OpenBLAS threads than on one (thread hand-off dominates at this size).
    with threadpool_limits(1, user_api="blas"):
        u, singular, _ = randomized_svd(word_rows, n_components, n_iter=3, random_state=random_state,
                                        flip_sign=False)
    return _divided_by_squares(u * singular, singular)


def components_from_basis(word_rows: sparse.spmatrix, basis: np.ndarray) -> np.ndarray:
    """The LSA components ``diag(1/s) U.T X`` (float32, shape ``(k, n_terms)``) of the rows ``X``
    that ``basis`` (:func:`fit_lsa`) was fitted on.

    The randomized SVD gives ``X``'s top right singular vectors approximately, with ``U diag(s)
    = X Vt.T`` exactly; these are its vectors taken one product with ``X.T X`` further, so they
    span the topic space a little better (3,000 conference papers, 64 topics: 6.74% of the TF-IDF
    rows' energy against the SVD's own 6.51%, each component within 12° of the SVD's).
    """
    rows = sparse.csr_matrix(word_rows)
    # A transposed view, not a copy: lsa_rows multiplies by its transpose, C-ordered again, and
    # copying 64 x 190,904 floats (3,000 papers) took 4x longer than the product.
    return (rows.T @ np.asarray(basis, dtype=rows.dtype)).T.astype(np.float32, copy=False)


def basis_from_components(word_rows: sparse.spmatrix, components: np.ndarray) -> np.ndarray:
    """The basis (:func:`fit_lsa`) of the rows ``X`` that the randomized SVD's ``components``
    were fitted on: ``X Vt.T`` is ``U diag(s)`` and ``s`` its column norms, ``U`` being
    orthonormal. For index files written before the basis was stored (format 1)."""
    transformed = np.asarray(sparse.csr_matrix(word_rows) @ np.asarray(components, dtype=np.float64).T)
    return _divided_by_squares(transformed, np.sqrt(np.einsum("ij,ij->j", transformed, transformed)))


def _divided_by_squares(transformed: np.ndarray, singular: np.ndarray) -> np.ndarray:
    """``U diag(s)`` → ``U diag(1/s)``; a direction with no weight (a rank-deficient
    collection: duplicate papers) is left at zero, as it adds nothing to a topic row."""
    singular = np.asarray(singular, dtype=np.float64)
    scale = np.zeros_like(singular)
    kept = singular > singular.max(initial=0.0) * 1e-7
    scale[kept] = 1.0 / singular[kept] ** 2
    return (np.asarray(transformed, dtype=np.float64) * scale).astype(np.float32)


def lsa_rows(word_rows, components: np.ndarray) -> np.ndarray:
    """Rows in the LSA topic space, unit length."""
    return normalize_rows(np.asarray(word_rows @ components.T, dtype=np.float32)).astype(np.float32)


class TopicRows:
    """The LSA topic rows (:func:`lsa_rows`) of a library's rows then a collection's, each made
    when asked for, shape ``(n_library + n_collection, n_topics)``.

    Only the diversity re-ordering (a few hundred candidates) and the report's map read them;
    making every collection paper's when an index is read cost more than ranking against it
    needs. Row for row, the numbers of :func:`lsa_rows` over all rows.
    """

    def __init__(self, library_word, collection_word, components):
        """``components``: the array, or a function that makes it (the topic space is fitted
        only when some row is first read)."""
        self.parts, self._components = (library_word, collection_word), components
        self.n_library = library_word.shape[0]
        self.n_rows = self.n_library + collection_word.shape[0]

    @property
    def components(self) -> np.ndarray:
        if callable(self._components):
            self._components = self._components()
        return self._components

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.components.shape[0])

    def __getitem__(self, key) -> np.ndarray:
        rows = np.arange(self.n_rows)[key]
        wanted = np.atleast_1d(rows)
        out = np.empty((len(wanted), self.shape[1]), dtype=np.float32)
        in_library = wanted < self.n_library
        if in_library.any():
            out[in_library] = lsa_rows(self.parts[0][wanted[in_library]], self.components)
        if not in_library.all():
            out[~in_library] = lsa_rows(self.parts[1][wanted[~in_library] - self.n_library], self.components)
        return out if np.ndim(rows) else out[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return self[:] if dtype is None else self[:].astype(dtype)
