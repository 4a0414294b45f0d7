"""Offline evaluation: ranking metrics, the scoring rules of today's tools, and hold-out runs.

Baselines, each a faithful re-implementation of a rule researchers use now:

``random``            a seeded shuffle;
``bm25``              Okapi BM25 with the whole library as one query (term weights log(1+count));
``tfidf_max``         the largest TF-IDF cosine to any library paper;
``recency_cosine``    zotero-arxiv-daily: cosine to each library paper weighted 1/(1+log10(i+1))
                      by add order, newest first (over TF-IDF; ``recency_cosine_embedding`` over
                      sentence embeddings when the extra is installed);
``tfidf_svm``         arxiv-sanity-lite: a linear SVM (C=0.01, balanced classes) on uni+bigram
                      TF-IDF with the library as positives and the collection as negatives.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.svm import LinearSVC

from recommender.models.hybrid import HybridModel
from recommender.models.scoring import LearnedModel, SimilarityModel
from recommender.models.signals import recency_weights
from recommender.paper import Paper
from recommender.ranking import MODEL_NAMES, make_model

METRICS = ("ndcg@10", "recall@10", "recall@20", "mrr")
BASELINES = ("random", "bm25", "tfidf_max", "recency_cosine", "tfidf_svm")


def ranking_metrics(ranked_ids: Sequence[str], relevant: set[str] | frozenset[str]) -> dict[str, float]:
    """nDCG@10, recall@10, recall@20 and MRR of one ranking with binary relevance."""
    if not relevant:
        raise ValueError("no relevant papers to evaluate against")
    hits = [paper_id in relevant for paper_id in ranked_ids]
    dcg = sum(1.0 / math.log2(rank + 2) for rank, hit in enumerate(hits[:10]) if hit)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), 10)))
    first = next((rank for rank, hit in enumerate(hits) if hit), None)
    return {
        "ndcg@10": dcg / ideal,
        "recall@10": sum(hits[:10]) / len(relevant),
        "recall@20": sum(hits[:20]) / len(relevant),
        "mrr": 0.0 if first is None else 1.0 / (first + 1),
    }


def _texts(papers: Sequence[Paper]) -> list[str]:
    return [paper.text for paper in papers]


def _tfidf_cosines(library: Sequence[Paper], candidates: Sequence[Paper]) -> np.ndarray:
    vectorizer = TfidfVectorizer(strip_accents="unicode", stop_words="english", sublinear_tf=True)
    rows = vectorizer.fit_transform(_texts(library) + _texts(candidates))
    return (rows[len(library):] @ rows[: len(library)].T).toarray()


def score_random(library, candidates, seed: int = 0, **_) -> np.ndarray:
    return np.random.default_rng(seed).random(len(candidates))


def score_bm25(library, candidates, k1: float = 1.2, b: float = 0.75, **_) -> np.ndarray:
    counter = CountVectorizer(strip_accents="unicode", stop_words="english")
    counts = sparse.csr_matrix(counter.fit_transform(_texts(candidates)), dtype=np.float64)
    query = np.asarray(counter.transform([" ".join(_texts(library))]).todense()).ravel()
    n_docs = counts.shape[0]
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    rows = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
    tf = counts.data
    counts.data = idf[counts.indices] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[rows] / max(lengths.mean(), 1e-9)))
    return np.asarray(counts @ np.log1p(query)).ravel()


def score_tfidf_max(library, candidates, **_) -> np.ndarray:
    return _tfidf_cosines(library, candidates).max(axis=1)


def score_recency_cosine(library, candidates, embedder=None, **_) -> np.ndarray:
    if embedder is not None:
        vectors = np.asarray(embedder.embed(_texts(library) + _texts(candidates)))
        cosines = vectors[len(library):] @ vectors[: len(library)].T
    else:
        cosines = _tfidf_cosines(library, candidates)
    return cosines @ recency_weights(library)


def score_tfidf_svm(library, candidates, **_) -> np.ndarray:
    texts = _texts(library) + _texts(candidates)
    # arxiv-sanity-lite's settings; its min_df=5 and max_df=0.1 assume a corpus of many
    # thousands of papers, so they are relaxed for small ones to keep a vocabulary.
    small = len(texts) < 2000
    vectorizer = TfidfVectorizer(strip_accents="unicode", stop_words="english",
                                 token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b", ngram_range=(1, 2),
                                 max_features=20000, sublinear_tf=True, max_df=0.5 if small else 0.1,
                                 min_df=1 if small else 5)
    rows = vectorizer.fit_transform(texts)
    labels = np.r_[np.ones(len(library)), np.zeros(len(candidates))]
    svm = LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=0.01)
    svm.fit(rows, labels)
    return svm.decision_function(rows[len(library):])


BASELINE_SCORERS: dict[str, Callable[..., np.ndarray]] = {
    "random": score_random, "bm25": score_bm25, "tfidf_max": score_tfidf_max,
    "recency_cosine": score_recency_cosine, "tfidf_svm": score_tfidf_svm,
}


def method_scores(method: str, library: Sequence[Paper], candidates: Sequence[Paper], seed: int = 0,
                  embedder=None) -> np.ndarray:
    """Scores of ``candidates`` by one method: a litrank model (its ``--model`` name) or a baseline."""
    if method in MODEL_NAMES:
        return make_model(method, embedder).fit(library, candidates).scores_
    if method == "recency_cosine_embedding":
        return score_recency_cosine(library, candidates, embedder=embedder)
    return BASELINE_SCORERS[method](library, candidates, seed=seed)


def rank_ids(candidates: Sequence[Paper], scores: np.ndarray) -> list[str]:
    """Candidate ids best first; ties by id so every method is deterministic."""
    order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), candidates[i].id))
    return [candidates[i].id for i in order]


@dataclass
class MethodSummary:
    """Mean and standard deviation of each metric over repeats or tasks."""

    values: dict[str, list[float]] = field(default_factory=lambda: {metric: [] for metric in METRICS})

    def add(self, metrics: dict[str, float]) -> None:
        for metric in METRICS:
            self.values[metric].append(metrics[metric])

    def mean(self, metric: str) -> float:
        return float(np.mean(self.values[metric])) if self.values[metric] else float("nan")

    def std(self, metric: str) -> float:
        return float(np.std(self.values[metric])) if self.values[metric] else float("nan")


def evaluate_methods(tasks, methods: Sequence[str], embedder=None, seed: int = 0) -> dict[str, MethodSummary]:
    """Run every method on every task ``(library, candidates, relevant_ids)``; summaries per method."""
    summaries = {method: MethodSummary() for method in methods}
    for task_index, (library, candidates, relevant) in enumerate(tasks):
        for method in methods:
            scores = method_scores(method, library, candidates, seed=seed + task_index, embedder=embedder)
            summaries[method].add(ranking_metrics(rank_ids(candidates, scores), relevant))
    return summaries


def holdout_tasks(library: Sequence[Paper], collection: Sequence[Paper], holdout: float = 0.2, repeats: int = 5,
                  seed: int = 0):
    """Tasks that hide a share of the library among the collection, once per repeat.

    Yields ``(kept_library, candidates, hidden_ids)``; ``candidates`` is the collection plus
    the hidden papers, which are the relevant ones.
    """
    if not 0 < holdout < 1:
        raise ValueError(f"--holdout must be between 0 and 1, got {holdout}")
    n_hidden = max(1, int(round(holdout * len(library))))
    if len(library) - n_hidden < 1:
        raise ValueError(f"the library has {len(library)} papers: too few to hide {n_hidden} and keep one")
    rng = np.random.default_rng(seed)
    for _ in range(repeats):
        hidden = set(rng.choice(len(library), size=n_hidden, replace=False).tolist())
        kept = [paper for i, paper in enumerate(library) if i not in hidden]
        hidden_papers = [library[i] for i in sorted(hidden)]
        yield kept, list(collection) + hidden_papers, frozenset(paper.id for paper in hidden_papers)


# --- scorers by method name, for the benchmarks on expert judgements ------------------------------

Scorer = Callable[[Sequence[Paper], Sequence[Paper]], np.ndarray]


def top_mean_cosine(library_vectors: np.ndarray, candidate_vectors: np.ndarray, k: int) -> np.ndarray:
    """Each candidate's mean cosine to its ``k`` closest library papers (``k=1``: the best)."""
    cosines = _unit(candidate_vectors) @ _unit(library_vectors).T
    k = max(1, min(k, cosines.shape[1]))
    return np.sort(cosines, axis=1)[:, -k:].mean(axis=1)


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def model_scorer(factory: Callable[[], object]) -> Scorer:
    """A scorer fitting ``factory()`` (a litrank model) on each library and collection."""
    return lambda library, collection: np.asarray(factory().fit(list(library), list(collection)).scores_)


def default_install_embedder(embedder=None):
    """The static table the default install ranks with ("auto" without the embeddings extra),
    for benchmarks to show beside ``embedder``: None when ``embedder`` is that table already or
    the table cannot be loaded here."""
    from recommender.models.static_embeddings import StaticEmbedder, is_static_model_id, static_embedder_available

    if is_static_model_id(getattr(embedder, "model_id", None)) or not static_embedder_available():
        return None
    return StaticEmbedder()


def default_install_methods(embedder=None) -> list[str]:
    """``["static", "hybrid+static"]`` (the static table's best cosine, and the default install's
    ranking) when :func:`default_install_embedder` has a table to add, else none."""
    return ["static", "hybrid+static"] if default_install_embedder(embedder) is not None else []


def _dense_scorer(embedder, k: int, vectors: dict[str, np.ndarray]) -> Scorer:
    """``k``-best mean cosine of ``embedder``'s vectors, kept in ``vectors`` for the run (libraries
    share most of their collections)."""

    def embedded(papers: Sequence[Paper]) -> np.ndarray:
        missing = list(dict.fromkeys(paper.id for paper in papers if paper.id not in vectors))
        if missing:
            texts = {paper.id: paper.text for paper in papers}
            for paper_id, vector in zip(missing, np.asarray(embedder.embed([texts[i] for i in missing]))):
                vectors[paper_id] = vector
        return np.stack([vectors[paper.id] for paper in papers])

    return lambda library, collection: top_mean_cosine(embedded(library), embedded(collection), k)


def library_scorers(embedder=None, seed: int = 0) -> dict[str, Scorer]:
    """Scoring functions ``(library papers, collection papers) -> scores`` by method name, for the
    benchmarks on expert judgements (single query papers and composite libraries).
    Embedding methods are included only with an ``embedder``; ``static`` and ``hybrid+static``
    (the default install's dense channel, :func:`default_install_embedder`) whenever the table
    is there and ``embedder`` is not it."""
    scorers: dict[str, Scorer] = {
        "random": lambda library, collection: score_random(library, collection, seed=seed),
        "bm25": lambda library, collection: score_bm25(library, collection),
        "tfidf": lambda library, collection: score_tfidf_max(library, collection),
        "similarity": model_scorer(SimilarityModel),
        "learned": model_scorer(LearnedModel),
        "hybrid": model_scorer(HybridModel),
    }
    if embedder is not None:
        vectors: dict[str, np.ndarray] = {}
        scorers["embedding"] = _dense_scorer(embedder, 1, vectors)
        scorers["embedding-top3"] = _dense_scorer(embedder, 3, vectors)
        scorers["hybrid+embeddings"] = model_scorer(lambda: HybridModel(embedder=embedder))
        scorers["learned+embeddings"] = model_scorer(lambda: LearnedModel(embedder=embedder))
    static = default_install_embedder(embedder)
    if static is not None:
        scorers["static"] = _dense_scorer(static, 1, {})
        scorers["hybrid+static"] = model_scorer(lambda: HybridModel(embedder=static))
    return scorers
