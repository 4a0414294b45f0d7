"""Per-candidate features: aggregations of the representation blocks over a library subset."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from recommender.features.representations import Representations
from recommender.paper import Paper

TOP_K = 3
KEYTERM_COUNT = 300
# Representations aggregated four ways; missing ones (no char model, no embeddings) are zeros,
# so every feature matrix has the same columns whatever is installed.
COSINE_REPRESENTATIONS = ("word", "char", "lsa", "title")
COSINE_AGGREGATIONS = ("max", "top3", "centroid", "recency")


_REPRESENTATION_LABELS = {"word": "words", "char": "character n-grams", "lsa": "topics", "title": "titles",
                          "embedding": "embeddings"}
_AGGREGATION_LABELS = {"max": "closest paper", "top3": "3 closest papers", "centroid": "library as a whole",
                       "recency": "recent additions"}
_OTHER_LABELS = {"bm25_max": "BM25, closest paper", "bm25_top3": "BM25, 3 closest papers",
                 "bm25_library": "BM25, whole library", "keyterms": "your distinctive terms",
                 "authors_max": "co-authors", "authors_share": "authors shared with many papers"}


def describe_feature(name: str) -> str:
    """A reader's label for a feature name: "word_top3" -> "words: 3 closest papers"."""
    if name in _OTHER_LABELS:
        return _OTHER_LABELS[name]
    representation, _, aggregation = name.rpartition("_")
    if representation in _REPRESENTATION_LABELS and aggregation in _AGGREGATION_LABELS:
        return f"{_REPRESENTATION_LABELS[representation]}: {_AGGREGATION_LABELS[aggregation]}"
    return name


def feature_names(with_embeddings: bool = False) -> list[str]:
    """Column names of :func:`candidate_features`; the embedding columns come last, so the
    features without embeddings are a prefix of those with them."""
    names = [f"{rep}_{agg}" for rep in COSINE_REPRESENTATIONS for agg in COSINE_AGGREGATIONS]
    names += ["bm25_max", "bm25_top3", "bm25_library", "keyterms", "authors_max", "authors_share"]
    if with_embeddings:
        names += [f"embedding_{agg}" for agg in COSINE_AGGREGATIONS]
    return names


def recency_weights(papers: Sequence[Paper]) -> np.ndarray:
    """zotero-arxiv-daily's rule: the i-th most recently added paper weighs 1/(1+log10(i+1)).

    Papers without ``date_added`` count as older than dated ones and, among themselves, later
    in the list as more recent (a .bib file grows at its end). Weights sum to 1.
    """
    order = sorted(range(len(papers)), key=lambda i: (papers[i].date_added or "", i), reverse=True)
    weights = np.empty(len(papers))
    weights[order] = 1.0 / (1.0 + np.log10(np.arange(len(papers)) + 1.0))
    return weights / weights.sum() if len(papers) else weights


def _top_mean(block: np.ndarray, k: int) -> np.ndarray:
    n = block.shape[1]
    k = min(k, n)
    if k == 0:
        return np.zeros(block.shape[0])
    return np.partition(block, n - k, axis=1)[:, n - k:].mean(axis=1)


def _centroid_cosine(rows, library_rows) -> np.ndarray:
    centroid = np.asarray(library_rows.mean(axis=0)).ravel()
    norm = np.linalg.norm(centroid)
    if not norm:
        return np.zeros(rows.shape[0])
    return np.asarray(rows @ (centroid / norm)).ravel()


def _keyterm_overlap(word, candidate_rows: np.ndarray, library_cols: np.ndarray, background_rows: np.ndarray) -> np.ndarray:
    """Cosine to the library's distinctive terms (library mean minus background mean, top terms)."""
    profile = np.asarray(word[library_cols].mean(axis=0)).ravel() - np.asarray(word[background_rows].mean(axis=0)).ravel()
    if (profile > 0).sum() > KEYTERM_COUNT:
        profile[profile < np.partition(profile, -KEYTERM_COUNT)[-KEYTERM_COUNT]] = 0
    profile = np.clip(profile, 0, None)
    norm = np.linalg.norm(profile)
    return np.asarray(word[candidate_rows] @ (profile / norm)).ravel() if norm else np.zeros(len(candidate_rows))


def _cosine_aggregations(rep: Representations, name: str, candidate_rows: np.ndarray, library_cols: np.ndarray,
                         weights: np.ndarray) -> list[np.ndarray]:
    """max, top-3 mean, centroid cosine and recency-weighted mean of one representation."""
    if name not in rep.vectors:  # e.g. no real titles anywhere
        return [np.zeros(len(candidate_rows))] * len(COSINE_AGGREGATIONS)
    block = rep.blocks[name][np.ix_(candidate_rows, library_cols)]
    return [block.max(axis=1), _top_mean(block, TOP_K),
            _centroid_cosine(rep.vectors[name][candidate_rows], rep.vectors[name][library_cols]), block @ weights]


def library_query_bm25(rep: Representations, candidate_rows: np.ndarray, library_cols: np.ndarray) -> np.ndarray:
    """BM25 with the whole library as one query (term weight log(1 + count)), scaled to max 1."""
    term_counts, weights = rep.bm25()
    query = np.log1p(np.asarray(term_counts[library_cols].sum(axis=0)).ravel())
    scores = np.asarray(weights[candidate_rows] @ query).ravel()
    best = scores.max() if len(scores) else 0.0
    return scores / best if best > 0 else scores


def candidate_features(rep: Representations, candidate_rows: np.ndarray, library_cols: np.ndarray,
                       library_papers: Sequence[Paper], with_embeddings: bool = False) -> np.ndarray:
    """Feature matrix, shape ``(len(candidate_rows), len(feature_names(with_embeddings)))``.

    Parameters
    ----------
    rep : Representations
    candidate_rows : ndarray of int
        Rows of the papers to score.
    library_cols : ndarray of int
        The library papers (columns, equal to their rows) that count as "the library" here.
    library_papers : sequence of Paper
        The papers of ``library_cols``, in the same order (for their add dates).
    """
    candidate_rows = np.asarray(candidate_rows)
    library_cols = np.asarray(library_cols)
    weights = recency_weights(library_papers)
    columns = []
    for name in COSINE_REPRESENTATIONS:
        columns += _cosine_aggregations(rep, name, candidate_rows, library_cols, weights)
    bm25 = rep.blocks["bm25"][np.ix_(candidate_rows, library_cols)]
    columns += [bm25.max(axis=1), _top_mean(bm25, TOP_K), library_query_bm25(rep, candidate_rows, library_cols)]
    columns.append(_keyterm_overlap(rep.vectors["word"], candidate_rows, library_cols, candidate_rows))
    authors = rep.blocks["authors"][np.ix_(candidate_rows, library_cols)]
    columns += [np.minimum(authors.max(axis=1), 3.0), (authors > 0).mean(axis=1)]
    if with_embeddings:
        if "embedding" not in rep.vectors:
            raise ValueError("embedding features requested but the representations hold no embeddings")
        columns += _cosine_aggregations(rep, "embedding", candidate_rows, library_cols, weights)
    return np.column_stack(columns).astype(np.float64)
