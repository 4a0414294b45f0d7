"""Pseudo-relevance feedback (Rocchio) for the hybrid model (:mod:`recommender.models.hybrid`):
which papers serve as each library paper's feedback, and the cosines to the library vectors
moved towards them.

A one-paragraph abstract names a method one way; its nearest neighbours in the collection name
it the other ways too. The first pass scores every feedback paper against every library paper,
:func:`feedback_top` keeps each library paper's best, and :func:`feedback_expanded_similarity`
scores the candidates again against the expanded library vectors.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from recommender.features.sparse_products import dense_product, normalize_rows, take_rows
from recommender.models.aggregation import column_top_k
from recommender.runtime import release_free_memory

# A product of at least this many bytes (float64) first hands freed memory back to the system.
TRIM_BEFORE_BYTES = 32 << 20


def feedback_top(feedback_scores: np.ndarray, feedback_docs: int) -> np.ndarray | None:
    """Positions (in the feedback rows) of each library paper's ``feedback_docs`` best-scoring
    feedback papers, shape (k, n_library); k is lowered to the fewest any paper may use, and
    None when that is none."""
    if feedback_scores.shape[1] == 0:
        return None
    k = int(min(feedback_docs, np.isfinite(feedback_scores).sum(axis=0).min()))
    return column_top_k(feedback_scores, k) if k > 0 else None


def feedback_expanded_similarity(vectors, library_rows: np.ndarray, candidate_rows: np.ndarray,
                                 feedback_rows: np.ndarray, feedback_scores: np.ndarray | None, feedback_docs: int,
                                 feedback_weight: float, top: np.ndarray | None = None) -> np.ndarray:
    """Rocchio feedback, every library paper at once: each library vector moves towards the
    mean of its ``feedback_docs`` best-scoring feedback papers, then candidates are scored again.

    Parameters
    ----------
    vectors : matrix of shape (N, d), L2-normalised rows (sparse, dense or
        :class:`~recommender.features.sparse_products.SideBySide`)
    library_rows, candidate_rows : ndarray of int
    feedback_rows : ndarray of int, shape (n_feedback,)
        The papers that may serve as feedback (candidates, other library papers).
    feedback_scores : ndarray of shape (n_feedback, n_library)
        The first-pass scores that choose them; ``-inf`` where one may not serve.
    feedback_docs : int
    feedback_weight : float
    top : ndarray of int, shape (k, n_library), optional
        :func:`feedback_top` of the scores when already made (``feedback_scores`` may then be
        None: a caller that keeps no scores lets go of them before the product).

    Returns
    -------
    ndarray of shape (n_candidates, n_library)
        Cosine of each candidate to each expanded library vector.
    """
    library = take_rows(vectors, library_rows)
    n_library = len(library_rows)
    if top is None and feedback_weight > 0 and feedback_scores is not None:
        top = feedback_top(feedback_scores, feedback_docs)
    if top is None or feedback_weight <= 0:
        return dense_product(vectors, library, row_indices=candidate_rows)
    k = top.shape[0]
    # Only the chosen rows are taken out (all the feedback rows would be a copy of the collection).
    chosen, position = np.unique(np.asarray(feedback_rows)[top.T.ravel()], return_inverse=True)
    selection = sparse.csr_matrix((np.full(top.size, 1.0 / k), (np.repeat(np.arange(n_library), k), position)),
                                  shape=(n_library, len(chosen)))
    centroids = selection @ take_rows(vectors, chosen)
    if sparse.issparse(centroids):
        expanded = normalize_rows(sparse.csr_matrix(library) + feedback_weight * normalize_rows(sparse.csr_matrix(centroids)))
    else:
        expanded = normalize_rows(np.asarray(library) + feedback_weight * normalize_rows(np.asarray(centroids)))
    del library, centroids, selection  # let go before the product (30,000 candidates: 30 MB at its peak)
    # And handed back to the system, with what the first pass freed before it (its blocks, its
    # chunks' sums), before a large product: at 30,000 candidates the allocator kept 60-80 MB
    # of it here, which the product's batches, made on other threads, do not reuse (the run's
    # peak, medians of whole runs: 756 MB without, 738 with). Small products skip it: pages
    # handed back are faulted in again, system time a run of 3,000 candidates need not pay.
    if len(candidate_rows) * n_library * 8 >= TRIM_BEFORE_BYTES:
        release_free_memory()
    return dense_product(vectors, expanded, row_indices=candidate_rows)
