"""Scoring models: the learned ranker (default) and the v1 similarity score.

A model is fitted on one run's library and candidates (``fit(library, candidates,
judgements)``) and then exposes ``scores_`` (one per candidate), ``description_`` (which
model ranked, for the output), word-level explanations and, for the learned model, the
features that drove each score.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from recommender.features.representations import RepresentationBuilder, Representations
from recommender.features.sparse_products import dense_product, normalize_rows
from recommender.models.signals import candidate_features, feature_names
from recommender.paper import Paper

if TYPE_CHECKING:
    from recommender.models.lightgbm_ranker import LightGBMRanker

MIN_LIBRARY_FOR_TRAINING = 8
PRIOR_MODEL_FILE = "prior-ranker.txt"
PRIOR_EMBEDDINGS_MODEL_FILE = "prior-ranker-embeddings.txt"


@lru_cache(maxsize=4)
def load_prior(path: str | None = None, with_embeddings: bool = False) -> LightGBMRanker | None:
    """The pre-trained default ranker shipped in ``recommender/data`` (or the one at ``path``).

    With ``with_embeddings``, the prior trained with embedding features, if it is shipped.
    """
    if path is None:
        name = PRIOR_EMBEDDINGS_MODEL_FILE if with_embeddings else PRIOR_MODEL_FILE
        resource = resources.files("recommender.data").joinpath(name)
        if not resource.is_file():
            return None
        path = str(resource)
    from recommender.models.lightgbm_ranker import LightGBMRanker  # LightGBM: only for the learned model

    return LightGBMRanker.load(Path(path))


def _zscore(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else values - values.mean()


@dataclass
class Driver:
    """A feature that moved a pick's score, with its contribution (SHAP value)."""

    feature: str
    contribution: float


class TermExplainer:
    """Shared machinery: word similarities and shared terms from the run's representations."""

    rep_: Representations

    def similarities(self, candidate_rows: np.ndarray) -> np.ndarray:
        """Word TF-IDF cosine of candidates to library papers, shape (len(rows), n_library)."""
        rows = np.asarray(candidate_rows)
        if "word" in self.rep_.blocks:  # computed (a lazy block is not computed for a few rows)
            return self.rep_.blocks["word"][np.ix_(rows, self.library_rows_)]
        word = self.rep_.vectors["word"]
        return dense_product(word[rows], word[self.library_rows_])

    def candidate_similarity(self, candidate_rows: np.ndarray) -> np.ndarray:
        """Cosine between candidates (for diversity), shape (len(rows), len(rows))."""
        rows = normalize_rows(self.rep_.vectors["lsa" if "lsa" in self.rep_.vectors else "word"][np.asarray(candidate_rows)])
        product = rows @ rows.T
        return product.toarray() if hasattr(product, "toarray") else np.asarray(product)

    def _word_names(self) -> np.ndarray:
        """The word columns' names, made once for the fitted representations: an array of a
        collection's 250,000 terms took 14 ms, three times for every explained pick (200 picks
        of 3,000 papers: 6.3 s a run before, 2.0 s now)."""
        vectorizer = self.rep_.word_vectorizer
        made = self.__dict__.get("_word_names_of")
        if made is None or made[0] is not vectorizer:
            made = self.__dict__["_word_names_of"] = (vectorizer, vectorizer.get_feature_names_out())
        return made[1]

    def shared_terms(self, candidate_row: int, library_row: int, n_terms: int = 5) -> list[str]:
        word = self.rep_.vectors["word"]
        contribution = word[candidate_row].multiply(word[library_row]).tocsr()
        if contribution.nnz == 0:
            return []
        vocabulary = self._word_names()
        is_phrase = np.array([" " in vocabulary[i] for i in contribution.indices])
        terms: list[str] = []
        for index in contribution.indices[np.lexsort((-contribution.data, ~is_phrase))]:
            term = vocabulary[index]
            if any(term in chosen.split() or chosen in term.split() for chosen in terms):
                continue
            terms.append(term)
            if len(terms) == n_terms:
                break
        return terms


class LearnedModel(TermExplainer):
    """litrank's ranker: LightGBM lambdarank over 22 library-derived features (26 with embeddings).

    With a library of at least ``min_library`` papers, a ranker is trained on the library
    itself (self-supervised, see :mod:`recommender.models.lightgbm_ranker`) and blended with the pre-trained
    prior; smaller libraries are ranked by the prior alone.

    Parameters
    ----------
    embedder : object with ``embed(texts)``, optional
        Adds dense-embedding similarity features.
    prior : str, path or None, default="default"
        The pre-trained ranker: "default" for the bundled one, a path, or None for none.
    min_library : int, default=8
    n_folds, holdout, max_negatives : self-supervised training (see ``self_supervised_training_set``)
    prior_weight : float, default=0.5
        Weight of the prior in the blend of standardised scores (the rest is the library's own model).
    random_state : int, default=0
    """

    def __init__(self, embedder=None, prior: str | Path | None = "default", min_library: int = MIN_LIBRARY_FOR_TRAINING,
                 n_folds: int = 5, holdout: float = 0.2, max_negatives: int = 600, prior_weight: float = 0.5,
                 use_char: bool = True, random_state: int = 0):
        self.embedder = embedder
        self.prior = prior
        self.min_library = min_library
        self.n_folds = n_folds
        self.holdout = holdout
        self.max_negatives = max_negatives
        self.prior_weight = prior_weight
        self.use_char = use_char
        self.random_state = random_state

    def fit(self, library: Sequence[Paper], candidates: Sequence[Paper],
            judgements: Mapping[int, int] | None = None, library_grades: Mapping[int, int] | None = None) -> "LearnedModel":
        """Score ``candidates`` against ``library``.

        ``judgements`` maps candidate index -> -1 for disliked candidates (hard negatives in
        training); ``library_grades`` maps library index -> 2 for liked library papers.
        """
        papers = list(library) + list(candidates)
        rep = RepresentationBuilder(use_char=self.use_char, embedder=self.embedder,
                                    random_state=self.random_state).build(papers, len(library))
        return self.fit_representations(rep, np.arange(len(library)), np.arange(len(library), len(papers)),
                                        list(library), judgements, library_grades)

    def fit_representations(self, rep: Representations, library_rows: np.ndarray, candidate_rows: np.ndarray,
                            library: Sequence[Paper], judgements: Mapping[int, int] | None = None,
                            library_grades: Mapping[int, int] | None = None) -> "LearnedModel":
        """:meth:`fit` on precomputed representations (benchmarks share them across tasks).

        ``library_rows`` must be library columns of ``rep`` (rows below ``rep.n_library``);
        ``judgements`` and ``library_grades`` are keyed by position in ``candidate_rows`` and
        ``library_rows``.
        """
        with_embeddings = "embedding" in rep.vectors
        self.rep_, self.library_rows_, self.candidate_rows_ = rep, np.asarray(library_rows), np.asarray(candidate_rows)
        self.feature_names_ = feature_names(with_embeddings)
        self.X_ = candidate_features(rep, self.candidate_rows_, self.library_rows_, library, with_embeddings)
        prior = None
        if self.prior == "default":
            # The shipped prior with embedding features learned all-MiniLM-L6-v2's cosines; the
            # static table's run higher (median pair 0.36 against 0.29), so it gets the prior without them.
            from recommender.models.static_embeddings import is_static_model_id

            static = is_static_model_id(rep.embedder_id or getattr(self.embedder, "model_id", None))
            prior = (with_embeddings and not static and load_prior(None, True)) or load_prior(None, False)
        elif self.prior:
            prior = load_prior(str(self.prior))
        # The base features are a prefix of those with embeddings: a prior trained without
        # embeddings reads its columns from the front.
        prior_scores = prior.predict(self.X_[:, : len(prior.feature_names_)]) if prior is not None else None
        self.own_model_ = None
        if len(library) >= self.min_library:
            rows_judged = {int(self.candidate_rows_[index]): value for index, value in (judgements or {}).items()}
            grades = {int(self.library_rows_[index]): value for index, value in (library_grades or {}).items()}
            from recommender.models.lightgbm_ranker import LightGBMRanker, self_supervised_training_set

            X, y, group = self_supervised_training_set(
                self.rep_, library, self.library_rows_, self.candidate_rows_, rows_judged, library_grades=grades,
                n_folds=self.n_folds, holdout=self.holdout, max_negatives=self.max_negatives,
                seed=self.random_state, with_embeddings=with_embeddings)
            self.own_model_ = LightGBMRanker(random_state=self.random_state).fit(X, y, group, self.feature_names_)
        extra = f" with {getattr(self.embedder, 'model_id', 'dense')} embeddings" if with_embeddings else ""
        if self.own_model_ is not None and prior_scores is not None:
            own_scores = self.own_model_.predict(self.X_)
            self.scores_ = (1 - self.prior_weight) * _zscore(own_scores) + self.prior_weight * _zscore(prior_scores)
            self.description_ = f"learned: LightGBM{extra} trained on your {len(library)} papers + pre-trained prior"
        elif self.own_model_ is not None:
            self.scores_ = self.own_model_.predict(self.X_)
            self.description_ = f"learned: LightGBM{extra} trained on your {len(library)} papers"
        elif prior_scores is not None:
            self.scores_ = prior_scores
            reason = f"library under {self.min_library} papers" if len(library) < self.min_library else "prior only"
            self.description_ = f"learned: pre-trained LightGBM prior{extra} ({reason})"
        else:
            raise ValueError(f"the library has {len(library)} papers, fewer than the {self.min_library} needed "
                             "to train a ranker, and no pre-trained ranker is installed")
        self.prior_model_ = prior
        return self

    def drivers(self, candidate_index: int, n: int = 3) -> list[Driver]:
        """The features that raised this candidate's score most (positive SHAP values)."""
        model = self.own_model_ or self.prior_model_
        X = self.X_[candidate_index: candidate_index + 1, : len(model.feature_names_)]
        contributions = model.contributions(X)[0, :-1]
        names = model.feature_names_
        order = np.argsort(-contributions, kind="stable")
        return [Driver(names[i], float(contributions[i])) for i in order[:n] if contributions[i] > 0]


class SimilarityModel(TermExplainer):
    """litrank v1: 0.5 × max + 0.3 × top-3 mean + 0.2 × centroid word TF-IDF cosine."""

    def __init__(self, weights: Sequence[float] = (0.5, 0.3, 0.2)):
        self.weights = weights

    def fit(self, library: Sequence[Paper], candidates: Sequence[Paper], judgements=None, library_grades=None):
        papers = list(library) + list(candidates)
        # LSA only serves the diversity re-ranking (candidate_similarity), not the v1 score.
        rep = RepresentationBuilder(use_char=False).build(papers, len(library))
        return self.fit_representations(rep, np.arange(len(library)), np.arange(len(library), len(papers)), library)

    def fit_representations(self, rep: Representations, library_rows, candidate_rows, library: Sequence[Paper],
                            judgements=None, library_grades=None) -> "SimilarityModel":
        """:meth:`fit` on precomputed representations (see :meth:`LearnedModel.fit_representations`)."""
        self.rep_, self.library_rows_, self.candidate_rows_ = rep, np.asarray(library_rows), np.asarray(candidate_rows)
        X = candidate_features(rep, self.candidate_rows_, self.library_rows_, library)
        self.scores_ = X[:, :3] @ np.asarray(self.weights, dtype=float)
        self.description_ = "tfidf-similarity-v1"
        return self

    def drivers(self, candidate_index: int, n: int = 3) -> list[Driver]:
        return []
