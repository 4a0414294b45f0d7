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
    mean, spread = column_mean_and_spread(reference)
    if pooled:
        spread = library_spread(spread)
    mean, spread = shrink_to_library(mean, spread, len(reference), prior)
    spread[spread == 0] = 1.0
    if in_place:
        for start in range(0, len(block), ROW_CHUNK):
            chunk = block[start:start + ROW_CHUNK]
            chunk -= mean
            chunk /= spread
        return block
    centred = block - mean
    centred /= spread  # in place: at 50,000 candidates a temporary block is 200 MB
    return centred


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


def column_mean_and_spread(block: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation of each column, a chunk of rows at a time
    (numpy's ``std`` makes a temporary as large as the block); over ``rows`` of the block only
    when given (in float64, without copying them out together)."""
    if rows is None:
        mean = block.mean(axis=0)
        chunks = (block[start:start + ROW_CHUNK] for start in range(0, len(block), ROW_CHUNK))
        count = len(block)
    else:
        rows = np.asarray(rows)
        count = len(rows)
        mean = np.zeros(block.shape[1])
        for start in range(0, count, ROW_CHUNK):
            mean += block[rows[start:start + ROW_CHUNK]].sum(axis=0, dtype=np.float64)
        mean /= max(count, 1)
        chunks = (block[rows[start:start + ROW_CHUNK]].astype(np.float64) for start in range(0, count, ROW_CHUNK))
    squares = np.zeros(block.shape[1])
    for chunk in chunks:
        deviation = chunk - mean
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
    interests of a few papers each cannot reach. On CSFCube it beats the default depth of two
    on balanced publication lists and loses to it on lists with a main line and side interests
    (docs/models-and-quality.md); it is not the default.

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
    return max(1, min(int(aggregation), n_library))


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


def block_part_float64(block: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """:func:`block_part` in a new float64 array, taken a chunk of rows at a time: a float32
    block's part is not copied whole before it is widened (30,000 rows x 500 papers: 61 MB)."""
    rows = np.asarray(rows)
    out = np.empty((len(rows), len(columns)))
    for start in range(0, len(rows), ROW_CHUNK * 8):
        out[start:start + ROW_CHUNK * 8] = block_part(block, rows[start:start + ROW_CHUNK * 8], columns)
    return out


def top_mean(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of each row's ``k`` largest values, and the column indices of those values."""
    n_rows, n = block.shape
    if k >= n:
        return block.mean(axis=1), np.tile(np.arange(n), (n_rows, 1))
    means, columns = np.empty(n_rows), np.empty((n_rows, k), dtype=np.int64)
    for start in range(0, n_rows, ROW_CHUNK):  # the negated block and its argpartition, a chunk at a time
        chunk = block[start:start + ROW_CHUNK]
        best = np.argpartition(-chunk, k - 1, axis=1)[:, :k]
        columns[start:start + len(chunk)] = best
        means[start:start + len(chunk)] = np.take_along_axis(chunk, best, axis=1).mean(axis=1)
    return means, columns


def column_top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row positions of each column's ``k`` largest values (in no order), shape (k, n_columns).

    A chunk of rows at a time, transposed so that each column's values are contiguous, then
    the chunks' candidates merged.
    """
    rows, values = [], []
    for start in range(0, len(scores), ROW_CHUNK * 8):
        chunk = np.ascontiguousarray(scores[start:start + ROW_CHUNK * 8].T)
        best = np.argpartition(-chunk, min(k, chunk.shape[1]) - 1, axis=1)[:, :k]
        rows.append(best + start)
        values.append(np.take_along_axis(chunk, best, axis=1))
    rows, values = np.hstack(rows), np.hstack(values)
    best = np.argpartition(-values, k - 1, axis=1)[:, :k]
    return np.take_along_axis(rows, best, axis=1).T
