"""Scorers: turn a candidate feature matrix into one relevance score per candidate.

A scorer follows scikit-learn's estimator conventions (``fit(X, y)``, ``predict(X)``), so the
learned LightGBM ranker can take the place of the fixed-weight scorer without changing the
pipeline around it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_array


class WeightedSimilarityScorer(RegressorMixin, BaseEstimator):
    """A fixed weighted sum of similarity features (litrank's v1 score).

    Parameters
    ----------
    weights : sequence of float, default=(0.5, 0.3, 0.2)
        One weight per feature column, in the order the feature builder emits them
        (max, top-k mean, centroid for :class:`~recommender.features.TfidfLibrarySimilarity`).
        The defaults favour the single closest library paper, which tracks a specific
        interest, while the top-k mean and centroid reward a paper near the library's core.

    Notes
    -----
    ``fit`` learns nothing: the weights are the model. It only checks the feature count.
    """

    name = "tfidf-similarity-v1"

    def __init__(self, weights: Sequence[float] = (0.5, 0.3, 0.2)):
        self.weights = weights

    def fit(self, X, y=None) -> "WeightedSimilarityScorer":
        """Check ``X`` of shape (n_samples, n_features) against the weights."""
        X = check_array(X)
        self.coef_ = np.asarray(self.weights, dtype=float)
        if X.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"{X.shape[1]} features but {self.coef_.shape[0]} weights")
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        """Scores, shape (n_samples,): ``X @ weights``."""
        X = check_array(X)
        coef = getattr(self, "coef_", None)
        if coef is None:
            coef = np.asarray(self.weights, dtype=float)
        return X @ coef
