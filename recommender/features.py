"""Feature builders: how similar is each candidate paper to the user's library?

Each builder is a scikit-learn style transformer. ``fit(library, corpus=...)`` learns the
text representation from the library (and the collection, so that a term's rarity is judged
over everything the user is looking at); ``transform(candidates)`` returns one row of
aggregated similarity features per candidate, shape ``(n_candidates, n_features)``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer
from sklearn.preprocessing import normalize
from sklearn.utils.validation import check_is_fitted

from .paper import Paper

AGGREGATIONS = ("max", "topk_mean", "centroid")

# Words every abstract uses whatever its topic; as features they only add noise, and as
# explanations ("new state", "propose") they explain nothing.
ACADEMIC_STOP_WORDS = frozenset("""
    abstract achieve achieves achieved approach approaches art based benchmark benchmarks demonstrate
    demonstrates existing experiments extensive furthermore however introduce introduces
    method methods new novel outperform outperforms paper performance present presents propose
    proposed proposes prior recent recently result results set show shows significantly state study
    superior task tasks use used uses using various wide widely work works
""".split())
STOP_WORDS = sorted(ENGLISH_STOP_WORDS | ACADEMIC_STOP_WORDS)


def _texts(papers: Sequence[Paper]) -> list[str]:
    return [paper.text for paper in papers]


def aggregate_similarities(similarity: np.ndarray, centroid: np.ndarray, top_k: int) -> np.ndarray:
    """Aggregate a candidate × library similarity matrix into features.

    Parameters
    ----------
    similarity : ndarray of shape (n_candidates, n_library)
    centroid : ndarray of shape (n_candidates,)
        Cosine of each candidate to the library's centroid.
    top_k : int

    Returns
    -------
    ndarray of shape (n_candidates, 3)
        Columns in :data:`AGGREGATIONS` order: max, mean of the ``top_k`` largest, centroid.
    """
    n_candidates, n_library = similarity.shape
    if n_library == 0:
        return np.zeros((n_candidates, len(AGGREGATIONS)))
    k = min(top_k, n_library)
    # np.partition puts the k largest values in the last k columns, unordered: O(n) per row.
    top = np.partition(similarity, n_library - k, axis=1)[:, n_library - k:]
    return np.column_stack([similarity.max(axis=1), top.mean(axis=1), centroid])


class TfidfLibrarySimilarity(TransformerMixin, BaseEstimator):
    """Word TF-IDF cosine similarity of candidates to the library papers, aggregated.

    Parameters
    ----------
    top_k : int, default=3
        How many of the most similar library papers the ``topk_mean`` feature averages.
    ngram_range : tuple (min_n, max_n), default=(1, 2)
        Word n-grams; bigrams catch phrases such as "flow matching".
    min_df : int, default=1
    max_df : float, default=0.9
        Terms in more than this share of documents carry no preference and are dropped.
    sublinear_tf : bool, default=True

    Attributes
    ----------
    vectorizer_ : TfidfVectorizer
        Fitted on the texts of library ∪ corpus.
    library_matrix_ : sparse matrix of shape (n_library, n_terms)
        L2-normalised TF-IDF rows of the library papers.
    centroid_ : ndarray of shape (n_terms,)
        L2-normalised mean of the library rows.
    """

    def __init__(self, top_k: int = 3, ngram_range: tuple[int, int] = (1, 2), min_df: int = 1,
                 max_df: float = 0.9, sublinear_tf: bool = True):
        self.top_k = top_k
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.max_df = max_df
        self.sublinear_tf = sublinear_tf

    def fit(self, library: Sequence[Paper], y=None, corpus: Sequence[Paper] = ()) -> "TfidfLibrarySimilarity":
        """Learn the vocabulary and IDF over ``library`` ∪ ``corpus`` and index the library.

        Parameters
        ----------
        library : sequence of Paper, length n_library
        y : ignored
        corpus : sequence of Paper, optional
            Further texts (the collection) that shape term rarity but are not library papers.
        """
        if not library:
            raise ValueError("the library is empty: nothing to compare the collection with")
        documents = _texts(library) + _texts(corpus)
        # With very few documents a max_df share would drop every term; keep them all then.
        max_df = self.max_df if len(documents) >= 10 else 1.0
        self.vectorizer_ = TfidfVectorizer(
            strip_accents="unicode", lowercase=True, stop_words=STOP_WORDS,
            ngram_range=self.ngram_range, min_df=self.min_df, max_df=max_df,
            sublinear_tf=self.sublinear_tf, dtype=np.float64,
        )
        try:
            self.vectorizer_.fit(documents)
        except ValueError as exc:  # "empty vocabulary": no paper has any real word
            raise ValueError(f"cannot build a vocabulary from the papers' texts ({exc})") from None
        self.library_matrix_ = self.vectorizer_.transform(_texts(library))
        mean = np.asarray(self.library_matrix_.mean(axis=0)).ravel()
        norm = np.linalg.norm(mean)
        self.centroid_ = mean / norm if norm else mean
        return self

    def vectorize(self, papers: Sequence[Paper]) -> sparse.csr_matrix:
        """TF-IDF rows, shape ``(len(papers), n_terms)``, L2-normalised."""
        check_is_fitted(self, "vectorizer_")
        return self.vectorizer_.transform(_texts(papers))

    def similarities(self, candidates: Sequence[Paper]) -> np.ndarray:
        """Cosine similarities, shape ``(n_candidates, n_library)``."""
        return (self.vectorize(candidates) @ self.library_matrix_.T).toarray()

    def transform(self, candidates: Sequence[Paper]) -> np.ndarray:
        """Aggregated features, shape ``(n_candidates, 3)``: see :data:`AGGREGATIONS`."""
        vectors = self.vectorize(candidates)
        similarity = (vectors @ self.library_matrix_.T).toarray()
        centroid = vectors @ self.centroid_
        return aggregate_similarities(similarity, np.asarray(centroid).ravel(), self.top_k)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        return np.array([f"tfidf_{name}" for name in AGGREGATIONS], dtype=object)

    def shared_terms(self, candidate: Paper, library_paper: Paper, n_terms: int = 5) -> list[str]:
        """The terms that contribute most to the cosine between two papers, strongest first."""
        rows = normalize(self.vectorize([candidate, library_paper]))
        contribution = rows[0].multiply(rows[1]).tocsr()
        if contribution.nnz == 0:
            return []
        vocabulary = self.vectorizer_.get_feature_names_out()
        # A shared phrase is stronger evidence than its words apart: rank bigrams first.
        is_phrase = np.array([" " in vocabulary[index] for index in contribution.indices])
        order = np.lexsort((-contribution.data, ~is_phrase))
        terms: list[str] = []
        for index in contribution.indices[order]:
            term = vocabulary[index]
            # A bigram already implies its words: skip words covered by a chosen bigram and vice versa.
            if any(term in chosen.split() or chosen in term.split() for chosen in terms):
                continue
            terms.append(term)
            if len(terms) == n_terms:
                break
        return terms
