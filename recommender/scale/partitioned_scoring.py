"""The hybrid model's scores, computed over a collection split into row partitions.

:meth:`recommender.models.hybrid.HybridModel.fit_representations` reads the collection three ways
that are not row-by-row: it standardises each library paper's similarities over all
candidates, picks each library paper's pseudo-relevance-feedback neighbours (its
``feedback_docs`` best first-pass scores) across the whole collection, and scales and
standardises the whole-library BM25 profile over all candidates. Here each of those is a map
over the partitions (count, mean and sum of squared deviations per column; local top-k;
partial centroid sums) and a reduce on the caller's side (Chan's merge of the moments; the
global top-k; the centroid), so that any partitioning gives the model's scores, equal to
within floating-point rounding of the summation order.

Many profiles are scored at once: their libraries are the columns of one block ("library
columns"), each column knowing its profile. Partitions (:class:`CollectionPart`) hold rows of
a :class:`~recommender.features.collection_index.CollectionIndex`; each map step takes the state the
previous one left (its blocks, on the worker with Dask) and returns the next, with what the
reduce needs under ``"out"``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from recommender.features.index_features import CountedTfidf
from recommender.models.aggregation import depth_for, library_spread, profile_share, shrink_to_library, top_mean
from recommender.paper import IdentityIndex, Paper


@dataclass
class CollectionPart:
    """Rows ``offset .. offset + len(papers)`` of a collection index."""

    offset: int
    papers: list[Paper]
    word: sparse.csr_matrix
    char: sparse.csr_matrix | None
    embeddings: np.ndarray | None
    bm25: sparse.csr_matrix
    authors: sparse.csr_matrix

    def __len__(self) -> int:
        return len(self.papers)

    def identity_keys(self) -> list[list[str]]:
        return [paper.identity_keys() for paper in self.papers]

    def scoring_rows(self) -> tuple[sparse.csr_matrix, sparse.csr_matrix | None]:
        """The word and character rows, as the scoring steps read them."""
        return self.word, self.char

    def lexical_rows(self, rows: np.ndarray) -> tuple[sparse.csr_matrix, sparse.csr_matrix | None]:
        """The word and character rows ``rows`` (of this part)."""
        return self.word[rows], None if self.char is None else self.char[rows]

    @classmethod
    def of_index(cls, index, start: int, stop: int) -> "CollectionPart":
        return cls(start, index.papers[start:stop], index.word_rows[start:stop],
                   None if index.char_tfidf is None else index.char_tfidf[start:stop],
                   None if index.embeddings is None else index.embeddings[start:stop],
                   index.bm25_rows[start:stop], index.author_rows[start:stop])


@dataclass
class LibraryColumns:
    """The library papers of a group of profiles, one column each, and the model's settings.

    ``profile_of[j]`` is the profile (0..n_profiles-1) of column ``j``; ``queries`` holds one
    whole-library BM25 query per profile (log(1 + term counts)).
    """

    papers: list[Paper]
    profile_of: np.ndarray
    word: sparse.csr_matrix
    char: sparse.csr_matrix | None
    embeddings: np.ndarray | None
    queries: np.ndarray
    authors: sparse.csr_matrix
    char_weight: float
    dense_weight: np.ndarray  # per column: HybridModel.dense_weights of the papers
    feedback_docs: int
    feedback_weight: float
    profile_weight: float
    author_weight: float
    aggregation: str | int = "topics"
    column_scale: str = "library"
    column_prior: float = 0.0
    dense_depth: int | None = None  # HybridModel.dense_depth
    # Per column, with dense_depth: HybridModel.short_text_trust of the papers (None: all 1).
    short_text_trust: np.ndarray | None = None
    # Collection rows (global) that are candidates but never feedback: `rank`'s disliked papers.
    not_feedback: np.ndarray | None = None
    # Also return the parts of each score (text: lexical, dense; profile; authors), as `rank` explains them.
    explain: bool = False

    @property
    def n_profiles(self) -> int:
        return len(self.queries)

    def columns_of(self, profile: int) -> np.ndarray:
        return np.flatnonzero(self.profile_of == profile)

    def sizes(self) -> np.ndarray:
        return np.bincount(self.profile_of, minlength=self.n_profiles)


# ------------------------------------------------------------------------------------ moments


def column_moments(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, mean and sum of squared deviations of each column, NaN entries left out."""
    block = np.asarray(block, dtype=np.float64)
    count = (~np.isnan(block)).sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, np.nansum(block, axis=0) / np.maximum(count, 1), 0.0)
        squares = np.nansum((block - mean) ** 2, axis=0)
    return count, mean, squares


def merge_moments(parts) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (population) of each column, from the parts' moments."""
    count = mean = squares = None
    for n_b, mean_b, squares_b in parts:
        if count is None:
            count, mean, squares = n_b.copy(), mean_b.copy(), squares_b.copy()
            continue
        total = count + n_b
        safe = np.maximum(total, 1)
        delta = mean_b - mean
        mean = mean + delta * n_b / safe
        squares = squares + squares_b + delta ** 2 * count * n_b / safe
        count = total
    return mean, np.sqrt(squares / np.maximum(count, 1))


def nonzero(spread: np.ndarray) -> np.ndarray:
    """``spread`` with zeros replaced by 1 (a constant column stays 0 once centred)."""
    spread = np.array(spread, dtype=np.float64)
    spread[spread == 0] = 1.0
    return spread


# --------------------------------------------------------------------------------- map steps


def _dense(product) -> np.ndarray:
    return product.toarray() if sparse.issparse(product) else np.asarray(product)


# Largest dense copy of the library side that _product makes (256 library columns over 130,000
# terms); beyond it, scipy's sparse product.
DENSE_SIDE_BYTES = 256 << 20


def _product(rows, other) -> np.ndarray:
    """``rows @ other.T`` as a dense block. ``other`` holds a few dozen library vectors: made
    dense over the columns they use, the product is one pass over ``rows``' entries, where
    scipy's sparse product builds its (dense anyway) result entry by entry: 3-4x the time on
    a partition's rows. The same sums, in another order (equal to rounding). ``rows`` may be a
    :class:`~recommender.features.index_features.CountedTfidf`: only the columns used are made (the
    same rows, so the same numbers)."""
    counted = isinstance(rows, CountedTfidf)
    if not (sparse.issparse(other) and (counted or sparse.issparse(rows))):
        return _dense((rows.rows() if counted else rows) @ other.T)
    other = sparse.csr_matrix(other)
    used = np.unique(other.indices)
    if other.shape[0] * len(used) * other.dtype.itemsize > DENSE_SIDE_BYTES:
        return _dense((rows.rows() if counted else rows) @ other.T)
    restricted = rows.columns(used) if counted else sparse.csr_matrix(rows)[:, used]
    return np.asarray(restricted @ other[:, used].toarray().T)


def lexical_block(word, char, library_word, library_char, char_weight: float) -> np.ndarray:
    """Cosine of the joined word | character vectors, in the rows' precision (float32 for TF-IDF
    rows), as the hybrid model's first pass computes it (equal to rounding: word and character
    parts are summed separately)."""
    block = _product(word, library_word)
    if char is None or library_char is None or char_weight <= 0:
        return block
    weight = float(char_weight) ** 2
    return (block + weight * _product(char, library_char)) / (1.0 + weight)


def _local(part: CollectionPart, rows: np.ndarray) -> np.ndarray:
    """Which of the (global) ``rows`` fall in ``part``, as rows of the part."""
    rows = np.asarray(rows, dtype=np.int64)
    return rows[(rows >= part.offset) & (rows < part.offset + len(part))] - part.offset


def excluded_rows(part: CollectionPart, profiles: list) -> list[np.ndarray]:
    """For each profile, the part's rows that are papers of the profile (not its candidates); a
    profile given as an array names its excluded rows itself (global rows). ``part``: a
    :class:`CollectionPart` or any part with ``identity_keys()`` (one list per row) and a length."""
    if all(isinstance(profile, np.ndarray) for profile in profiles):
        return [_local(part, profile) for profile in profiles]
    row_keys = part.identity_keys()
    keys: dict[str, list[int]] = {}
    for row, paper_keys in enumerate(row_keys):
        for key in paper_keys:
            keys.setdefault(key.partition("|")[0], []).append(row)
    result = []
    for profile in profiles:
        known = IdentityIndex(profile)
        rows = {row for paper in profile for key in paper.identity_keys() for row in keys.get(key.partition("|")[0], ())}
        result.append(np.array(sorted(row for row in rows if known.find(None, list(row_keys[row])) is not None),
                               dtype=np.int64))
    return result


def first_moments(part: CollectionPart, state, library: LibraryColumns, profiles: list[list[Paper]]) -> dict:
    """Map 1: the first-pass similarity blocks, their column moments and the BM25 profile's."""
    mask = np.zeros((len(part), library.n_profiles), dtype=bool)
    for index, rows in enumerate(excluded_rows(part, profiles)):
        mask[rows, index] = True
    column_mask = mask[:, library.profile_of]
    lexical = lexical_block(*part.scoring_rows(), library.word, library.char, library.char_weight)
    lexical = lexical.astype(np.float64)
    lexical[column_mask] = np.nan
    state = {"mask": mask, "lexical": lexical}
    moments = {"lexical": column_moments(lexical)}
    if part.embeddings is not None and library.embeddings is not None and np.any(library.dense_weight > 0):
        dense = np.asarray(part.embeddings @ library.embeddings.T).astype(np.float64)
        dense[column_mask] = np.nan
        state["dense"] = dense
        moments["dense"] = column_moments(dense)
    # float32 as the model computes it (its BM25 profile is a float32 product, scaled in float32).
    bm25 = np.asarray(part.bm25 @ library.queries.T).reshape(len(part), -1)
    state["bm25"] = bm25
    moments["bm25_max"] = np.max(np.where(mask, -np.inf, bm25), axis=0, initial=-np.inf)
    state["out"] = moments
    return state


def first_pass(block_lexical, block_dense, statistics, dense_weight: np.ndarray) -> np.ndarray:
    """The fused, standardised first-pass scores that choose the feedback papers."""
    mean, spread = statistics["lexical"]
    scores = (np.asarray(block_lexical, dtype=np.float64) - mean) / nonzero(spread)
    if block_dense is not None and "dense" in statistics:
        mean, spread = statistics["dense"]
        scores = scores + dense_weight * (np.asarray(block_dense, dtype=np.float64) - mean) / nonzero(spread)
    return scores


def pooled_spreads(statistics: dict, library: LibraryColumns, names, counts: np.ndarray | None = None) -> dict:
    """The (mean, spread) ``statistics`` of ``names`` made what the hybrid model standardises
    by, profile by profile: each column's spread made
    :func:`~recommender.models.aggregation.library_spread` over the profile's columns, then
    mean and spread moved towards the profile's by
    :func:`~recommender.models.aggregation.shrink_to_library` (``counts``: candidates per
    column)."""
    shrink = library.column_prior > 0 and counts is not None
    if library.column_scale != "library" and not shrink:
        return {}
    out = {}
    for name in names:
        if name not in statistics:
            continue
        mean, spread = statistics[name]
        mean, spread = np.array(mean, dtype=np.float64), np.array(spread, dtype=np.float64)
        for profile in range(library.n_profiles):
            columns = library.columns_of(profile)
            if library.column_scale == "library":
                spread[columns] = library_spread(spread[columns])
            if shrink:
                mean[columns], spread[columns] = shrink_to_library(mean[columns], spread[columns], counts[columns],
                                                                   library.column_prior)
        out[name] = (mean, spread)
    return out


def profile_depths(own_lexical: np.ndarray | None, library: LibraryColumns, lexical_statistics) -> np.ndarray:
    """Each profile's aggregation depth, as the hybrid model sets it (:func:`depth_for`); for
    "topics", from its papers' lexical cosines to each other (``own_lexical``, (n_columns,
    n_columns), needed then) in standard deviations of the collection's first-pass cosines
    (``lexical_statistics``)."""
    if library.aggregation != "topics":
        return np.array([depth_for(library.aggregation, int(n)) for n in library.sizes()], dtype=np.int64)
    mean, spread = lexical_statistics
    z = (np.asarray(own_lexical, dtype=np.float64) - mean) / nonzero(spread)
    return np.array([depth_for(library.aggregation, len(columns), z[np.ix_(columns, columns)])
                     for columns in map(library.columns_of, range(library.n_profiles))], dtype=np.int64)


def local_feedback(part: CollectionPart, state: dict, library: LibraryColumns, statistics, k: int) -> dict:
    """Map 2: each column's ``k`` best first-pass rows of this part: (global rows, scores), (k, n_columns)."""
    scores = first_pass(state["lexical"], state.get("dense"), statistics, library.dense_weight)
    scores[np.isnan(scores)] = -np.inf
    if library.not_feedback is not None:
        scores[_local(part, library.not_feedback)] = -np.inf
    k = min(k, scores.shape[0])
    top = np.argpartition(-scores, k - 1, axis=0)[:k] if k else np.empty((0, scores.shape[1]), dtype=np.int64)
    return {**state, "out": (top + part.offset, np.take_along_axis(scores, top, axis=0))}


def centroid_sums(part: CollectionPart, state: dict, selected_rows: np.ndarray, char_weight: float) -> dict:
    """Map 3: per column, the sum of the lexical vectors this part holds among the column's
    feedback papers (``selected_rows``: (k, n_columns) global rows, -1 for none)."""
    n_rows, n_columns = len(part), selected_rows.shape[1]
    local = selected_rows - part.offset
    inside = (local >= 0) & (local < n_rows) & (selected_rows >= 0)
    columns = np.broadcast_to(np.arange(n_columns), selected_rows.shape)[inside]
    selection = sparse.csr_matrix((np.ones(columns.size), (columns, local[inside])), shape=(n_columns, n_rows))
    # selection @ joined(word, char), on the selected rows only and block by block: the same
    # sums in the same order, without joining every row of the part for a few hundred.
    rows = np.unique(local[inside])
    selection = selection[:, rows]
    word, char = part.lexical_rows(rows)  # (only these rows: a compact part makes them from its counts)
    if char is None or char_weight <= 0:
        return {**state, "out": selection @ word}
    weight = float(char_weight)
    scale = 1.0 / np.sqrt(1.0 + weight ** 2)
    return {**state, "out": sparse.hstack([selection @ (word * scale), selection @ (char * (weight * scale))],
                                          format="csr")}


def joined(word, char, char_weight: float):
    """The hybrid model's lexical vectors: word | character rows, weighted, unit length."""
    if char is None or char_weight <= 0:
        return word
    weight = float(char_weight)
    scale = 1.0 / np.sqrt(1.0 + weight ** 2)
    return sparse.hstack([word * scale, char * (weight * scale)], format="csr")


def _joined_product(word, char, other, char_weight: float) -> np.ndarray:
    """``joined(word, char) @ other.T`` (float64) block by block: joining a partition's rows
    copies them all, which took longer than the product."""
    if char is None or char_weight <= 0:
        return _product(word, other).astype(np.float64)
    other = sparse.csr_matrix(other)
    weight = float(char_weight)
    scale = 1.0 / np.sqrt(1.0 + weight ** 2)
    n_word = word.shape[1]
    block = _product(word, other[:, :n_word]).astype(np.float64)
    block *= scale
    block += (weight * scale) * _product(char, other[:, n_word:])
    return block


def expanded_moments(part: CollectionPart, state: dict, expanded, char_weight: float, bm25_best: np.ndarray) -> dict:
    """Map 4: cosine of each row with the feedback-expanded library vectors (joined space) and
    the BM25 profile scaled to its best candidate, with the moments of both."""
    block = _joined_product(*part.scoring_rows(), expanded, char_weight)
    block[np.isnan(state["lexical"])] = np.nan
    bm25 = state["bm25"]
    best = bm25_best.astype(bm25.dtype)
    scaled = np.where(best > 0, bm25 / np.where(best > 0, best, 1), bm25).astype(np.float64)
    scaled[state["mask"]] = np.nan
    return {**state, "expanded": block, "bm25": scaled,
            "out": {"expanded": column_moments(block), "bm25": column_moments(scaled)}}


def _best_mean(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~recommender.models.aggregation.top_mean` with NaN (a row that is one of the
    profile's papers) counted as -inf."""
    with np.errstate(invalid="ignore"):
        return top_mean(np.nan_to_num(block, nan=-np.inf), k)


def final_scores(part: CollectionPart, state: dict, library: LibraryColumns, statistics) -> dict:
    """Map 5: each row's score for each profile, (n_rows, n_profiles), NaN where the row is a
    paper of the profile; the state keeps nothing else."""
    mean, spread = statistics["expanded"]
    fused = lexical_z = (state["expanded"] - mean) / nonzero(spread)
    dense_z = None
    if "dense" in state and "dense" in statistics:
        mean, spread = statistics["dense"]
        dense_z = library.dense_weight * (state["dense"] - mean) / nonzero(spread)
        if not library.dense_depth:
            fused = fused + dense_z
    sizes = library.sizes()
    authors = _dense(part.authors @ library.authors.T)  # float32, as the model's author block
    bm25_mean, bm25_spread = statistics["bm25"]
    scores = np.empty((len(part), library.n_profiles))
    components: dict[str, np.ndarray] = {}
    for profile in range(library.n_profiles):
        columns, n = library.columns_of(profile), int(sizes[profile])
        k = int(statistics["depths"][profile])
        parts = {}
        if dense_z is not None and library.dense_depth:  # each channel by its own best papers
            trust = 1.0 if library.short_text_trust is None else library.short_text_trust[columns]
            lexical_part, _ = _best_mean(lexical_z[:, columns] * trust, k)
            dense_part, _ = _best_mean(dense_z[:, columns] * trust, min(int(library.dense_depth), n))
            total = lexical_part + dense_part
            if library.explain:
                parts = {"lexical": lexical_part, "dense": dense_part}
        else:
            total, best = _best_mean(fused[:, columns], k)
            if library.explain:  # the hybrid model's components_, at the same best columns
                parts["lexical"] = np.take_along_axis(lexical_z[:, columns], best, axis=1).mean(axis=1)
                if dense_z is not None:
                    parts["dense"] = np.take_along_axis(dense_z[:, columns], best, axis=1).mean(axis=1)
        if n > 1 and library.profile_weight > 0:
            z = (state["bm25"][:, profile] - bm25_mean[profile]) / nonzero(bm25_spread[profile:profile + 1])[0]
            parts["profile"] = profile_share(n, library.profile_weight) * z
            total = total + parts["profile"]
        parts["authors"] = library.author_weight * np.log1p(authors[:, columns].sum(axis=1)) / np.sqrt(n)
        total = total + parts["authors"]
        total[state["mask"][:, profile]] = np.nan
        scores[:, profile] = total
        for name, values in parts.items():
            components.setdefault(name, np.full((len(part), library.n_profiles), np.nan))[:, profile] = values
    return {"out": scores, "components": components}
