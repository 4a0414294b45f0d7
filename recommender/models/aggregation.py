"""How a candidate's scores against each library paper become one score: each library paper's
column standardised over the collection (:func:`library_spread`), then the mean of the
candidate's best columns (two by default; as many as the library holds papers on one topic with
:func:`topic_depth`).

The hybrid model (:mod:`recommender.models.hybrid`) and the partitioned scoring of many
profiles (:mod:`recommender.scale.partitioned_scoring`) share these, so that both give the same
scores.
"""
from __future__ import annotations

import numpy as np

# Rows of a (rows x library papers) block handled at a time: 512 x 500 float64 is 2 MB, in cache.
ROW_CHUNK = 512


def standardize_columns(block: np.ndarray, reference: np.ndarray | None = None, in_place: bool = False,
                        pooled: bool = False, prior: float = 0.0) -> np.ndarray:
    """Each column minus its mean, divided by its standard deviation (if any), or with
    ``pooled`` by :func:`library_spread` of the deviations; mean and deviation are those of
    ``reference`` (rows of the same columns) when given, moved towards the library's by
    :func:`shrink_to_library` with ``prior`` > 0. ``in_place``: ``block`` (float64) becomes
    the result."""
    block = np.asarray(block, dtype=np.float64)
    reference = block if reference is None else np.asarray(reference, dtype=np.float64)
    mean, spread = column_scale(reference, pooled=pooled, prior=prior)
    if in_place:
        for start in range(0, len(block), ROW_CHUNK):
            chunk = block[start:start + ROW_CHUNK]
            chunk -= mean
            chunk /= spread
        return block
    centred = block - mean
    centred /= spread  # in place: at 50,000 candidates a temporary block is 200 MB
    return centred


def column_scale(block: np.ndarray, rows: np.ndarray | None = None, columns: np.ndarray | None = None,
                 pooled: bool = False, prior: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The mean each column of ``block`` (its ``rows`` and ``columns`` when given) loses and the
    spread it is divided by in :func:`standardize_columns`, shape (n_columns,) each: read a chunk
    of rows at a time, so that a float32 block is standardised without a float64 copy of it.

    Parameters
    ----------
    block : ndarray of shape (N, n)
    rows : ndarray of int, optional
        The rows the statistics are over (all of them when None).
    columns : ndarray of int, optional
    pooled : bool
        The spread is :func:`library_spread` of the columns' deviations.
    prior : float
        :func:`shrink_to_library`'s prior, with ``len(rows)`` candidates.

    Returns
    -------
    mean, spread : ndarray of shape (n_columns,), float64; a spread of 0 is 1
    """
    mean, spread = column_mean_and_spread(block, rows, columns)
    if pooled:
        spread = library_spread(spread)
    mean, spread = shrink_to_library(mean, spread, len(block) if rows is None else len(rows), prior)
    spread[spread == 0] = 1.0
    return mean, spread


def standardized_chunks(block: np.ndarray, mean: np.ndarray, spread: np.ndarray, rows: np.ndarray | None = None,
                        columns: np.ndarray | None = None, scales=(), chunk_rows: int = ROW_CHUNK):
    """``(block[rows, columns] - mean) / spread`` times each of ``scales`` in turn, as (start,
    float64 chunk) pairs of ``chunk_rows`` rows: the values :func:`standardize_columns` in place
    and the same products on the whole block give, element for element, without the whole
    block in float64 (30,000 candidates x 500 papers: 122 MB)."""
    n_rows = len(block) if rows is None else len(rows)
    for start in range(0, n_rows, chunk_rows):
        chunk = _rows_part(block, rows, columns, start, start + chunk_rows)
        chunk -= mean
        chunk /= spread
        for scale in scales:
            chunk *= scale
        yield start, chunk


def _rows_part(block: np.ndarray, rows: np.ndarray | None, columns: np.ndarray | None, start: int,
               stop: int) -> np.ndarray:
    """Rows ``start:stop`` of ``block[rows][:, columns]`` in a new float64 array."""
    # C order: einsum sums a column as it did over the whole block's float64 copy.
    return np.array(_rows_of(block, rows, columns, start, stop), dtype=np.float64, order="C")


def _rows_of(block: np.ndarray, rows: np.ndarray | None, columns: np.ndarray | None, start: int,
             stop: int) -> np.ndarray:
    """Rows ``start:stop`` of ``block[rows][:, columns]``, in the block's own type (a view where
    no rows or columns are picked)."""
    part = block[start:stop] if rows is None else block[rows[start:stop]]
    if columns is not None and not (len(columns) == block.shape[1]
                                    and np.array_equal(columns, np.arange(block.shape[1]))):
        part = part[:, columns]
    return part


def library_spread(spread: np.ndarray) -> np.ndarray:
    """The scale each library paper's column is divided by: the geometric mean of its own
    standard deviation and the library's pooled one (the root mean square over its columns).

    Dividing each column by its own deviation alone puts every library paper on one scale, and
    so lets a paper in a sparse corner of the collection, whose cosines hardly vary, lift its
    few neighbours far above the candidates of a topic the library holds many papers on (on
    CSFCube's publication lists with a main line and side interests the default fell below
    plain TF-IDF). Dividing by the pooled deviation alone lets broad papers drown narrow ones.
    Half-way between (in log scale) was better than its own deviation on composite libraries
    and main-line lists on both dev folds, with and without embeddings
    (docs/models-and-quality.md). A constant column's spread (0) stays 0.

    Parameters
    ----------
    spread : ndarray of shape (n_library,)

    Returns
    -------
    ndarray of shape (n_library,)
    """
    spread = np.asarray(spread, dtype=np.float64)
    pooled = float(np.sqrt(np.mean(spread ** 2))) if spread.size else 0.0
    return np.sqrt(spread * pooled)


def shrink_to_library(mean: np.ndarray, spread: np.ndarray, count, prior: float) -> tuple[np.ndarray, np.ndarray]:
    """Each library paper's column mean and spread moved towards the library's (the mean of
    the column means, the root mean square of the spreads), as if ``prior`` candidates had
    shown the library's: weight count / (count + prior) on the column's own.

    A column's mean and spread over the candidates stand for how close the paper's field comes
    to it in general. Over a conference's 3,000 papers they do; over a short list of 15 papers
    that were all chosen near the library (a reviewer's bids, a reading group's shortlist) they
    mostly measure the list, and standardising by them takes away what it should rank by. On
    CSFCube's libraries with 16 graded candidates each, the standardised fusion fell to the
    plain dense cosine and, without embeddings, below TF-IDF; with ``prior`` 300 it stays ahead
    of both, and the full pools (100 to 1,200 candidates) gain a little too
    (docs/models-and-quality.md). ``prior`` 0 leaves the statistics as they are.

    Parameters
    ----------
    mean, spread : ndarray of shape (n_library,)
    count : int or ndarray of shape (n_library,)
        Candidates each column's statistics are over.
    prior : float

    Returns
    -------
    mean, spread : ndarray of shape (n_library,)
    """
    mean, spread = np.asarray(mean, dtype=np.float64), np.asarray(spread, dtype=np.float64)
    if prior <= 0 or mean.size == 0:
        return mean, spread
    weight = np.asarray(count, dtype=np.float64) / (np.asarray(count, dtype=np.float64) + prior)
    library_mean, library_square = float(mean.mean()), float(np.mean(spread ** 2))
    return (weight * mean + (1 - weight) * library_mean,
            np.sqrt(weight * spread ** 2 + (1 - weight) * library_square))


def column_mean_and_spread(block: np.ndarray, rows: np.ndarray | None = None,
                           columns: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation of each column, a chunk of rows at a time
    (numpy's ``std`` makes a temporary as large as the block); over ``rows`` and ``columns`` of
    the block only when given (in float64, without copying them out together).

    The rows are summed in their order, each onto the running sum, as numpy sums the rows of a
    block of several columns: a chunked pass over a float32 block gives the very mean of its
    float64 copy, and so the same standardised scores to the last bit."""
    rows = None if rows is None else np.asarray(rows)
    count = len(block) if rows is None else len(rows)
    n_columns = block.shape[1] if columns is None else len(columns)
    total = np.zeros((1, n_columns))
    for start in range(0, count, ROW_CHUNK):
        # The running sum as the first row: one reduction adds the chunk's rows onto it in order.
        # (vstack widens a float32 chunk in its one copy)
        total = np.add.reduce(np.vstack([total, _rows_of(block, rows, columns, start, start + ROW_CHUNK)]),
                              axis=0, keepdims=True)
    mean = total[0] / max(count, 1)
    squares = np.zeros(n_columns)
    for start in range(0, count, ROW_CHUNK):
        deviation = _rows_part(block, rows, columns, start, start + ROW_CHUNK)
        deviation -= mean
        squares += np.einsum("ij,ij->j", deviation, deviation)
    return mean, np.sqrt(squares / max(count, 1))


# The "topics" depth: a library paper's topic-mates are the other library papers whose lexical
# cosine to it stands more than this many standard deviations above the collection's; the depth
# is this percentile of the papers' topic sizes (CSFCube fold1_dev, see topic_depth).
TOPIC_MATE_Z = 2.0
TOPIC_PERCENTILE = 25


def topic_depth(library_z: np.ndarray) -> int:
    """The "topics" aggregation depth: how many papers the library holds on one topic.

    A pick should match one of the library's topics; averaging over its best-matching papers
    steadies the score as long as they are on that topic. Each paper's topic is itself and its
    topic-mates (:data:`TOPIC_MATE_Z`); the depth is the lower quartile of the papers' topic
    sizes (:data:`TOPIC_PERCENTILE`), rounded, at least 2 and at most n (1 for one paper): the
    quartile, not the mean, so that a main line of many papers does not set a depth that side
    interests of a few papers each cannot reach. On CSFCube it beats a fixed depth of two
    on balanced publication lists and on lists of 8-12 topics, and loses to it on lists with a
    main line and side interests (docs/models-and-quality.md); it is the default.

    Parameters
    ----------
    library_z : ndarray of shape (n_library, n_library)
        Lexical cosine of library paper ``i`` (row) to library paper ``j`` (column) in standard
        deviations of column ``j``'s cosines over the collection; the diagonal is not read.

    Returns
    -------
    int
    """
    n = library_z.shape[0]
    if n <= 1:
        return 1
    mates = np.asarray(library_z) > TOPIC_MATE_Z
    mates[np.diag_indices(n)] = False
    topic_size = 1.0 + mates.sum(axis=0)
    return int(min(n, max(2, np.floor(np.percentile(topic_size, TOPIC_PERCENTILE) + 0.5))))


def depth_for(aggregation: str | int, n_library: int, library_z: np.ndarray | None = None) -> int:
    """The aggregation depth an ``aggregation`` setting gives a library of ``n_library`` papers:
    "auto" (two, one for a one-paper library), "topics" (:func:`topic_depth` of ``library_z``,
    needed then), "log2" or a number."""
    if aggregation == "auto":
        return max(1, min(n_library, 2))
    if aggregation == "topics":
        if n_library <= 1:
            return 1
        if library_z is None:
            raise ValueError("the topics aggregation depth needs the library's lexical z-scores")
        return topic_depth(library_z)
    if aggregation == "log2":
        return max(1, min(n_library, int(np.ceil(np.log2(n_library + 1)))))
    try:
        depth = int(aggregation)
    except (TypeError, ValueError):
        raise ValueError(f"aggregation must be 'topics', 'auto', 'log2' or a number of papers, "
                         f"not {aggregation!r}") from None
    return max(1, min(depth, n_library))


def profile_share(n_library: int, weight: float) -> float:
    """Weight of the whole-library profile: 0 for one paper, ``weight`` × (1 − 1/n) up to 10
    papers, then falling as √(10/n) (54 papers: 0.42 × weight; 500: 0.14 × weight)."""
    return weight * (1 - 1 / n_library) * min(1.0, float(np.sqrt(10 / n_library))) if n_library else 0.0


def block_part(block: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``block[np.ix_(rows, columns)]``; when ``columns`` are all of them in order, only the
    rows are taken (a copy fewer)."""
    if len(columns) == block.shape[1] and np.array_equal(columns, np.arange(block.shape[1])):
        return block[rows]
    return block[np.ix_(rows, columns)]


def top_mean(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of each row's ``k`` largest values, and the column indices of those values."""
    return chunked_top_mean(((start, block[start:start + ROW_CHUNK]) for start in range(0, len(block), ROW_CHUNK)),
                            block.shape, k)


def chunked_top_mean(chunks, shape: tuple[int, int], k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_mean` of a block of ``shape`` given as (start, chunk of rows) pairs (each row's
    values are its own business: any chunking gives the same result)."""
    n_rows, n = shape
    k = min(k, n)
    means, columns = np.empty(n_rows), np.empty((n_rows, k), dtype=np.int64)
    for start, chunk in chunks:  # the negated chunk and its argpartition, a chunk at a time
        if k == n:
            best = np.tile(np.arange(n), (len(chunk), 1))
            means[start:start + len(chunk)] = chunk.mean(axis=1)
        else:
            best = np.argpartition(-chunk, k - 1, axis=1)[:, :k]
            means[start:start + len(chunk)] = np.take_along_axis(chunk, best, axis=1).mean(axis=1)
        columns[start:start + len(chunk)] = best
    return means, columns


def column_top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row positions of each column's ``k`` largest values (in no order), shape (k, n_columns).

    A chunk of rows at a time (:data:`TOP_K_CHUNK`), transposed so that each column's values
    are contiguous, then the chunks' candidates merged (:func:`chunked_column_top_k`).
    """
    return chunked_column_top_k(((start, scores[start:start + TOP_K_CHUNK])
                                 for start in range(0, len(scores), TOP_K_CHUNK)), k)


TOP_K_CHUNK = ROW_CHUNK * 8


def chunked_column_top_k(chunks, k: int) -> np.ndarray:
    """:func:`column_top_k` of a block given as (start, chunk of rows) pairs in order, each of
    :data:`TOP_K_CHUNK` rows but the last: the block itself need never exist, and a chunk may
    be a buffer the next one overwrites."""
    rows, values = [], []
    for start, chunk in chunks:
        negated = np.negative(chunk.T)  # a column's values contiguous; negated: the largest first
        kth = min(k, negated.shape[1]) - 1
        best = np.empty((len(negated), min(k, negated.shape[1])), dtype=np.int64)
        value = np.empty(best.shape, dtype=negated.dtype)
        for first in range(0, len(negated), _TOP_K_COLUMNS):  # argpartition's positions, a few columns at a time
            part = negated[first:first + _TOP_K_COLUMNS]
            chosen = np.argpartition(part, kth, axis=1)[:, :k]
            best[first:first + len(part)] = chosen
            value[first:first + len(part)] = np.negative(np.take_along_axis(part, chosen, axis=1))
        rows.append(best + start)
        values.append(value)
    rows, values = np.hstack(rows), np.hstack(values)
    best = np.argpartition(-values, k - 1, axis=1)[:, :k]
    return np.take_along_axis(rows, best, axis=1).T


# Library papers whose chunk of first-pass scores is partitioned at once: 64 x 4,096 positions
# are 2 MB, where all 500 papers' were 16 MB more at the first pass's peak.
_TOP_K_COLUMNS = 64
