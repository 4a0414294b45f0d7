"""A 2-D map of a ranking: library and collection papers placed by the ranking's own representation.

The HTML report (``litrank rank --format html``) draws it: t-SNE of the run's topic space (the
LSA rows the models share, joined with the dense embeddings when the run had them), regions
found by k-means on the map, and each region labelled by the terms that set it apart.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.manifold import TSNE

from recommender.estimator import Estimator
from recommender.features.sparse_products import normalize_rows

# Below this many papers t-SNE has too few neighbours to mean anything; a PCA layout is honest.
MIN_PAPERS_FOR_TSNE = 12
# Terms a label should not waste its three words on.
_WEAK_TERMS = frozenset({"paper", "propose", "proposed", "method", "methods", "approach", "results", "show",
                         "model", "models", "based", "new", "using", "work", "problem", "performance"})


def topic_space(rep, rows: np.ndarray, dense_weight: float = 0.5) -> np.ndarray:
    """The rows of the run's representation a map is drawn from, shape (len(rows), d).

    ``rep`` is a :class:`recommender.features.representations.Representations`. The LSA topic vectors
    are used when present (else word TF-IDF reduced to 50 dimensions); the dense embeddings are
    appended with the weight the hybrid model gives them.
    """
    rows = np.asarray(rows)
    if "lsa" in rep.vectors:
        topics = np.asarray(rep.vectors["lsa"][rows], dtype=np.float64)
    else:
        words = rep.vectors["word"][rows]
        n_components = max(1, min(50, min(words.shape) - 1))
        topics = TruncatedSVD(n_components, random_state=0).fit_transform(words) if min(words.shape) > 1 \
            else (words.toarray() if sparse.issparse(words) else np.asarray(words))
    topics = normalize_rows(topics)
    if "embedding" in rep.vectors:
        dense = normalize_rows(np.asarray(rep.vectors["embedding"][rows], dtype=np.float64))
        topics = np.hstack([topics, math.sqrt(dense_weight) * dense])
    return topics


class PaperMap(Estimator):
    """Place papers on a plane and name its regions.

    Parameters
    ----------
    perplexity : float, default=30
        t-SNE's neighbourhood size (lowered automatically for small inputs).
    max_iter : int, default=400
        t-SNE iterations; 250 of them are the early-exaggeration phase.
    angle : float, default=0.7
        Barnes-Hut trade-off: higher is faster and coarser.
    n_topics : int or None, default=None
        Number of labelled regions; None picks ``clip(round(sqrt(n / 30)), 3, 12)``.
    n_terms : int, default=3
        Terms per region label.
    random_state : int, default=0

    Attributes
    ----------
    embedding_ : ndarray of shape (n_papers, 2)
        Map coordinates, scaled to [-1, 1] on the longer axis.
    topic_ : ndarray of shape (n_papers,)
        The region of each paper.
    topic_labels_ : list of str, length n_topics_
    topic_centers_ : ndarray of shape (n_topics_, 2)
        Where each label goes: the median position of the region's papers.
    """

    def __init__(self, perplexity: float = 30.0, max_iter: int = 400, angle: float = 0.7,
                 n_topics: int | None = None, n_terms: int = 3, random_state: int = 0):
        self.perplexity = perplexity
        self.max_iter = max_iter
        self.angle = angle
        self.n_topics = n_topics
        self.n_terms = n_terms
        self.random_state = random_state

    def fit(self, X: np.ndarray, term_weights=None, vocabulary=None) -> "PaperMap":
        """Lay out ``X`` (n_papers, d) and label regions by ``term_weights`` (n_papers, n_terms).

        ``vocabulary`` names the columns of ``term_weights``; without them regions are numbered.
        """
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        if n == 0:
            raise ValueError("a map needs at least one paper")
        self.embedding_ = self._layout(X)
        k = self.n_topics or int(np.clip(round(math.sqrt(n / 30)), 3, 12))
        k = max(1, min(k, n))
        self.topic_ = KMeans(k, n_init=4, random_state=self.random_state).fit_predict(self.embedding_) if k > 1 \
            else np.zeros(n, dtype=int)
        self.topic_centers_ = np.array([np.median(self.embedding_[self.topic_ == t], axis=0) for t in range(k)])
        self.topic_labels_ = self._labels(term_weights, vocabulary, k)
        return self

    def fit_transform(self, X: np.ndarray, term_weights=None, vocabulary=None) -> np.ndarray:
        return self.fit(X, term_weights, vocabulary).embedding_

    def _layout(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        if n == 1:
            return np.zeros((1, 2))
        if n < MIN_PAPERS_FOR_TSNE or np.allclose(X, X[0]):
            coords = _pca_2d(X)
        else:
            perplexity = min(self.perplexity, (n - 1) / 3)
            coords = TSNE(2, perplexity=perplexity, max_iter=self.max_iter, angle=self.angle, init="pca",
                          metric="cosine", random_state=self.random_state).fit_transform(X)
        coords = coords - coords.mean(axis=0)
        extent = np.abs(coords).max()
        return coords / extent if extent > 0 else coords

    def _labels(self, term_weights, vocabulary, k: int) -> list[str]:
        if term_weights is None or vocabulary is None:
            return [f"topic {t + 1}" for t in range(k)]
        weights = sparse.csr_matrix(term_weights)
        overall = np.asarray(weights.mean(axis=0)).ravel()
        labels = []
        for t in range(k):
            members = np.flatnonzero(self.topic_ == t)
            inside = np.asarray(weights[members].mean(axis=0)).ravel()
            # Distinctive: common inside the region, relatively rarer outside it.
            lift = inside * (inside - overall)
            terms: list[str] = []
            for index in np.argsort(-lift, kind="stable"):
                if lift[index] <= 0 or len(terms) == self.n_terms:
                    break
                term = str(vocabulary[index])
                if term in _WEAK_TERMS or term.isdigit():
                    continue
                stems = {_stem(word) for word in term.split()}
                if any(stems & {_stem(word) for word in chosen.split()} for chosen in terms):
                    continue  # "graph" after "graphs", "neural networks" after "network"
                terms.append(term)
            labels.append(", ".join(terms) or f"topic {t + 1}")
        return labels


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _pca_2d(X: np.ndarray) -> np.ndarray:
    centred = X - X.mean(axis=0)
    if not np.any(centred):
        return np.zeros((X.shape[0], 2))
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    coords = centred @ vt[:2].T
    if coords.shape[1] == 1:
        coords = np.hstack([coords, np.zeros_like(coords)])
    return coords
