"""The learned ranker: LightGBM lambdarank over library-derived features, trained without labels.

Training data come from the library itself: in each of ``n_folds`` rounds a share of the
library is held out and hidden among the candidates; the held-out papers are the positives,
the candidates the (unlabelled, mostly irrelevant) negatives, and every feature is computed
against the rest of the library. Explicit feedback outranks these pseudo-labels: liked
papers are graded positives (2) and disliked ones hard negatives in every round.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import lightgbm
import numpy as np

from recommender.estimator import Estimator
from recommender.features.representations import Representations
from recommender.models.signals import candidate_features
from recommender.paper import Paper

LIKED_LABEL = 2


class LightGBMRanker(Estimator):
    """A deterministic ``lightgbm.LGBMRanker`` (lambdarank) with litrank's defaults.

    Parameters
    ----------
    n_estimators, learning_rate, num_leaves, min_child_samples : LightGBM parameters
    random_state : int, default=0
    """

    def __init__(self, n_estimators: int = 120, learning_rate: float = 0.05, num_leaves: int = 15,
                 min_child_samples: int = 10, random_state: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.random_state = random_state

    def fit(self, X, y, group, feature_names: Sequence[str] | None = None) -> "LightGBMRanker":
        """Fit on ``X`` (n_samples, n_features), graded labels ``y`` and group sizes ``group``."""
        self.model_ = lightgbm.LGBMRanker(
            objective="lambdarank", n_estimators=self.n_estimators, learning_rate=self.learning_rate,
            num_leaves=self.num_leaves, min_child_samples=self.min_child_samples,
            subsample=1.0, colsample_bytree=1.0, reg_lambda=1.0, random_state=self.random_state,
            deterministic=True, force_row_wise=True, n_jobs=1, verbose=-1,
            label_gain=[0.0, 1.0, 3.0],
        )
        names = list(feature_names) if feature_names is not None else None
        self.model_.fit(np.asarray(X, dtype=np.float64), np.asarray(y), group=list(group),
                        feature_name=names if names else "auto")
        self.booster_ = self.model_.booster_
        return self

    def predict(self, X) -> np.ndarray:
        """Scores, shape (n_samples,)."""
        return self.booster_.predict(np.asarray(X, dtype=np.float64))

    def contributions(self, X) -> np.ndarray:
        """Per-feature contributions (SHAP values), shape (n_samples, n_features + 1)."""
        return self.booster_.predict(np.asarray(X, dtype=np.float64), pred_contrib=True)

    def save(self, path: Path) -> None:
        self.booster_.save_model(str(path))

    @classmethod
    def load(cls, path: Path) -> "LightGBMRanker":
        ranker = cls()
        ranker.booster_ = lightgbm.Booster(model_file=str(path))
        return ranker

    @property
    def feature_names_(self) -> list[str]:
        return self.booster_.feature_name()


def self_supervised_training_set(rep: Representations, library: Sequence[Paper], library_rows: np.ndarray,
                                 candidate_rows: np.ndarray,
                                 judgements: Mapping[int, int] | None = None,
                                 library_grades: Mapping[int, int] | None = None, n_folds: int = 5,
                                 holdout: float = 0.2, max_negatives: int = 600, seed: int = 0,
                                 with_embeddings: bool = False):
    """Training matrix from held-out library papers hidden among the candidates.

    Parameters
    ----------
    rep : Representations of library ∪ candidates (library rows first)
    library : the library papers, in the order of ``library_rows``
    library_rows : their rows (library columns of ``rep``)
    candidate_rows : rows of the candidates
    judgements : mapping of candidate row -> +1 (liked) / -1 (disliked)
    library_grades : mapping of library row -> label when held out (default 1; liked papers 2)

    Returns
    -------
    X : ndarray (n_samples, n_features), y : ndarray (n_samples,), group : list of int
    """
    rng = np.random.default_rng(seed)
    library_rows = np.asarray(library_rows)
    n_library = len(library_rows)
    judgements = dict(judgements or {})
    liked = np.array(sorted(row for row, value in judgements.items() if value > 0), dtype=int)
    disliked = np.array(sorted(row for row, value in judgements.items() if value < 0), dtype=int)
    judged = set(judgements)
    unlabeled = np.array([row for row in candidate_rows if row not in judged], dtype=int)
    n_held = max(1, int(round(holdout * n_library)))
    order = rng.permutation(n_library)
    Xs, ys, groups = [], [], []
    for fold in range(n_folds):
        # Folds walk through one permutation, so every library paper is held out about equally often.
        held = np.take(order, range(fold * n_held, (fold + 1) * n_held), mode="wrap")
        held_positions = np.unique(held)
        kept_positions = np.setdiff1d(np.arange(n_library), held_positions)
        if len(kept_positions) == 0:
            continue
        held, kept = library_rows[held_positions], library_rows[kept_positions]
        negatives = unlabeled
        if len(negatives) > max_negatives:
            negatives = np.sort(rng.choice(negatives, size=max_negatives, replace=False))
        rows = np.concatenate([held, liked, disliked, negatives])
        held_labels = [(library_grades or {}).get(int(i), 1) for i in held]
        labels = np.concatenate([held_labels, np.full(len(liked), LIKED_LABEL),
                                 np.zeros(len(disliked)), np.zeros(len(negatives))]).astype(int)
        Xs.append(candidate_features(rep, rows, kept, [library[i] for i in kept_positions], with_embeddings))
        ys.append(labels)
        groups.append(len(rows))
    if not Xs:
        raise ValueError("the library is too small to hold papers out for training")
    return np.vstack(Xs), np.concatenate(ys), groups
