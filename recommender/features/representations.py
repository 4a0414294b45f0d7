"""Text and author representations of library ∪ collection, computed once per run.

Every representation maps the N papers of a run (library first, then candidates) to rows,
and yields an ``(N, n_library)`` block of pairwise scores against the library papers. The
learned model's features are aggregations of these blocks over any subset of library
columns, which is what lets self-supervised training hold library papers out without
recomputing a single vector.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from recommender import runtime as background
from recommender.features.sparse_products import normalize_rows
from recommender.paper import Paper
from recommender.text import STOP_WORDS, strip_accents, words

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import CountVectorizer


@lru_cache(maxsize=1 << 16)  # (a collection names the same authors again and again)
def author_key(name: str) -> str:
    """Normalised author name: accents folded, lower case, punctuation as spaces."""
    return " ".join(words(strip_accents(name)))


def _title_text(paper: Paper) -> str:
    # A derived title repeats the abstract: it is no independent evidence.
    return "" if paper.title_derived else paper.title


@dataclass
class Representations:
    """Rows and library blocks of one run.

    Attributes
    ----------
    n_library : int
        The first ``n_library`` rows are the library papers.
    vectors : dict of str to matrix of shape (N, d)
        L2-normalised rows of each cosine representation (sparse or dense).
    blocks : dict of str to ndarray of shape (N, n_library)
        Cosine similarities for the vector representations; ``bm25`` (each library paper as
        a query, scaled by its best match) and ``authors`` (shared author count).
    word_vectorizer : CountVectorizer
        The fitted word tokeniser (its vocabulary names the word columns), for explanations.
    """

    n_library: int
    vectors: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)
    word_vectorizer: CountVectorizer | None = None
    has_authors: bool = False
    # Sparse (N, n_terms) rows: BM25 document weights and raw term counts, for the score
    # of each candidate against the whole library (any subset of it) as one query (a CSR
    # matrix, or against an index a StackedRows: read by rows or multiplied, never copied).
    # Read them with bm25(): against an index they are made on first use, by ``bm25_source``.
    bm25_weights: sparse.csr_matrix | None = None
    term_counts: sparse.csr_matrix | None = None
    bm25_source: Callable[[], tuple] | None = field(default=None, repr=False)
    # How many rows hold each column of ``vectors[name]``, where known without counting (an
    # index knows its collection's); and the (N, n_authors) author incidence, where kept.
    column_counts: dict = field(default_factory=dict)
    author_rows: sparse.csr_matrix | None = None
    # The ``model_id`` of the embedder behind ``vectors["embedding"]`` (None without one).
    embedder_id: str | None = None

    def bm25(self) -> tuple:
        """``(term_counts, bm25_weights)``, made by ``bm25_source`` on first use where not given."""
        if self.term_counts is None and self.bm25_source is not None:
            self.term_counts, self.bm25_weights = self.bm25_source()
            self.bm25_source = None
        return self.term_counts, self.bm25_weights


class RepresentationBuilder:
    """Builds :class:`Representations` for a list of papers.

    Parameters
    ----------
    use_char : bool, default=True
        Character 4-gram TF-IDF (robust to morphology, acronyms and LaTeX leftovers).
    lsa_components : int, default=64
        Dimensions of the LSA (TruncatedSVD) topic space; 0 disables it.
    embedder : object with ``embed(texts) -> ndarray``, optional
        Dense sentence embeddings (see :mod:`recommender.models.embeddings`).
    random_state : int, default=0
    """

    def __init__(self, use_char: bool = True, lsa_components: int = 64, embedder=None, random_state: int = 0):
        self.use_char = use_char
        self.lsa_components = lsa_components
        self.embedder = embedder
        self.random_state = random_state

    def build(self, papers: Sequence[Paper], n_library: int) -> Representations:
        """Representations of ``papers``, whose first ``n_library`` entries are the library."""
        # Imported here: ranking against a collection index needs no vectoriser (see
        # recommender.estimator on the cost of importing scikit-learn).
        from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer, TfidfVectorizer

        texts = [paper.text for paper in papers]
        result = Representations(n_library=n_library)
        char_job = run_aside(char_ngrams, texts, n_papers=len(texts)) if self.use_char else None
        max_df = 0.9 if len(texts) >= 10 else 1.0
        # One tokenisation serves the word TF-IDF (uni+bigrams) and BM25 (its unigram columns).
        counter = CountVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, ngram_range=(1, 2),
                                  min_df=2 if len(texts) >= 200 else 1, max_df=max_df, dtype=np.float32)
        try:
            counts = sparse.csr_matrix(counter.fit_transform(texts))
        except ValueError as exc:
            raise ValueError(f"cannot build a vocabulary from the papers' texts ({exc})") from None
        word_rows = TfidfTransformer(sublinear_tf=True).fit_transform(counts).astype(np.float32)
        result.word_vectorizer = counter
        result.vectors["word"] = word_rows
        if char_job is not None:
            result.vectors["char"] = char_job()
        if self.lsa_components and min(word_rows.shape) > self.lsa_components + 1:
            from sklearn.decomposition import TruncatedSVD  # imports linear models: only when fitting

            svd = TruncatedSVD(self.lsa_components, algorithm="randomized", n_iter=3, random_state=self.random_state)
            # Measured: the randomized SVD's small dense QR/LU steps run ~15x slower on two
            # OpenBLAS threads than on one (thread hand-off dominates at this size).
            with threadpool_limits(1, user_api="blas"):
                result.vectors["lsa"] = normalize_rows(svd.fit_transform(word_rows)).astype(np.float32)
        titles = [_title_text(paper) for paper in papers]
        if any(titles):
            title = TfidfVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, sublinear_tf=True, dtype=np.float32)
            try:
                result.vectors["title"] = title.fit_transform(titles)
            except ValueError:  # titles made only of stop words
                pass
        if self.embedder is not None:
            result.vectors["embedding"] = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            result.embedder_id = str(getattr(self.embedder, "model_id", type(self.embedder).__name__))
        for name, rows in result.vectors.items():
            block = rows @ rows[:n_library].T
            result.blocks[name] = block.toarray() if sparse.issparse(block) else np.asarray(block)
        unigrams = np.array([" " not in term for term in counter.get_feature_names_out()])
        result.term_counts, result.bm25_weights = _bm25_rows(counts[:, unigrams])
        result.blocks["bm25"] = _bm25_block(result.term_counts, result.bm25_weights, n_library)
        result.blocks["authors"], result.has_authors = author_block(papers, n_library)
        return result


def char_ngrams(texts: list[str]) -> sparse.csr_matrix:
    """Character 4-gram TF-IDF rows (within word boundaries), L2-normalised."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    char = TfidfVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode",
                           min_df=2 if len(texts) >= 200 else 1, sublinear_tf=True, dtype=np.float32)
    return char.fit_transform(texts)


# Below this many papers a second process costs more than it saves.
PARALLEL_CHAR_MIN_PAPERS = 1000


def run_aside(function, *args, n_papers: int):
    """``function(*args)`` started in a second process when there are ``PARALLEL_CHAR_MIN_PAPERS``
    papers or more (character n-grams are the slowest representation; the word model is built
    meanwhile); returns a function that gives the result, the same either way."""
    return background.run_aside(function, *args, aside=n_papers >= PARALLEL_CHAR_MIN_PAPERS)


def _bm25_rows(counts: sparse.csr_matrix, k1: float = 1.2, b: float = 0.75) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """Term counts and Okapi BM25 document weights, both of shape (N, n_terms), from term counts."""
    counts = sparse.csr_matrix(counts)
    n_docs = counts.shape[0]
    document_frequency = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_docs - document_frequency + 0.5) / (document_frequency + 0.5)).astype(np.float32)
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    average = max(float(lengths.mean()) if n_docs else 1.0, 1e-9)
    weights = counts.copy()
    row_of_value = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
    tf = weights.data
    weights.data = idf[weights.indices] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[row_of_value] / average))
    return counts, weights


def _bm25_block(counts: sparse.csr_matrix, weights: sparse.csr_matrix, n_library: int) -> np.ndarray:
    """BM25 of every paper with each library paper's terms as the query, shape (N, n_library).

    Each column is divided by its largest value so that long library abstracts (long
    queries) do not dominate the aggregations.
    """
    queries = counts[:n_library].copy()
    queries.data[:] = 1.0
    block = (weights @ queries.T).toarray()
    best = block.max(axis=0)
    best[best == 0] = 1.0
    return block / best


def author_block(papers: Sequence[Paper], n_library: int) -> tuple[np.ndarray, bool]:
    """Shared-author counts, shape (N, n_library), and whether any paper lists authors."""
    vocabulary: dict[str, int] = {}
    rows, cols = [], []
    for row, paper in enumerate(papers):
        for name in {author_key(author) for author in paper.authors} - {""}:
            rows.append(row)
            cols.append(vocabulary.setdefault(name, len(vocabulary)))
    if not vocabulary:
        return np.zeros((len(papers), n_library), dtype=np.float32), False
    incidence = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                                  shape=(len(papers), len(vocabulary)))
    return (incidence @ incidence[:n_library].T).toarray(), True
