"""Products of sparse text vectors whose result is (nearly) dense.

Every candidate shares some character 4-grams and common words with every library paper, so
``candidates @ library.T`` is a dense block. scipy's sparse product pays per entry of its
result (a counting pass, a CSR result, then densifying it) and per (row, term, row) triple;
that work sits in a few frequent columns. :func:`dense_product` sends those columns through
BLAS as two small dense blocks and keeps the rest a sparse product: the same sums, in another
order (equal up to floating-point rounding). :func:`head_product` (rows against their own
first rows: the library's block) splits the rows only once, with the same result bit for bit.
Rows go a batch at a time, two batches at once on threads; a :class:`SideBySide` (the word |
character rows of the hybrid model) is joined only a batch of rows at a time, and
:class:`StackedRows` (a library's rows above a collection index's) is stacked only so.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from recommender.runtime import release_free_memory

# A column goes through BLAS when the share of rows holding it, multiplied across both
# sides, is above this: measured on 3,000 x 500 character 4-gram and feedback-expanded
# products, from 0.002 to 0.02 all within 15% of the best (0.005).
DENSE_COLUMN_SHARE = 0.005
# Batches of rows run on WORKERS threads at once, BLAS on one thread in each: the split and the
# sparse product (most of the time) release the GIL but run on one core, where BLAS would use all.
# 1,024 rows: measured on the 50,000 x 500 feedback product, 2 threads, 3.2 s against 5-7 s
# for 4,096-row batches one after the other.
ROW_BATCH = 1024
WORKERS = min(2, os.cpu_count() or 1)
# A batch's dense block (rows x frequent columns) is kept near this size: the feedback-expanded
# product of 3,000 x 500 has ~4,000 frequent float64 columns, 24 MB a 750-row block, one on each
# thread. Measured against a 3,000-paper index: peak 390 -> 309 MB, the same time, the same numbers.
BLOCK_BYTES = 8 << 20
MIN_BATCH_ROWS = 64


def batch_size(n_rows: int, row_bytes: int = 0) -> int:
    """Rows a batch: at most ``ROW_BATCH`` and, given the bytes of a row's dense block
    (``row_bytes``), about ``BLOCK_BYTES`` of them, in a number of batches the workers share
    evenly (3,000 rows: four of 750, not 1,024, 1,024 and 952, of which the last ran alone:
    the 3,000 x 500 feedback product 0.50 -> 0.44 s)."""
    limit = ROW_BATCH if row_bytes <= 0 else max(MIN_BATCH_ROWS, min(ROW_BATCH, BLOCK_BYTES // row_bytes))
    n_batches = -(-n_rows // limit)
    if n_batches > 1 and n_batches % WORKERS:
        n_batches += WORKERS - n_batches % WORKERS
    return max(-(-n_rows // max(n_batches, 1)), 1)


def _column_share(matrix, counts: np.ndarray | None = None) -> np.ndarray:
    if counts is None:
        counts = matrix.column_counts() if isinstance(matrix, StackedRows) else np.bincount(
            matrix.indices, minlength=matrix.shape[1])
    return counts / max(matrix.shape[0], 1)


def _split(matrix: sparse.csr_matrix, position: np.ndarray, n_dense: int, dtype) -> tuple[np.ndarray, sparse.csr_matrix]:
    """``matrix``'s entries in the dense columns (``position`` >= 0) as a dense block, the rest sparse."""
    where = position[matrix.indices]
    dense_entry = where >= 0
    # Dense entries before each row start: the rest's row pointers, and each dense entry's row.
    dense_before = np.zeros(len(where) + 1, dtype=np.int64)
    np.cumsum(dense_entry, out=dense_before[1:])
    dense_before = dense_before[matrix.indptr]
    n_rows = matrix.shape[0]
    row_starts = np.repeat(np.arange(0, n_rows * n_dense, n_dense, dtype=np.int64), np.diff(dense_before))
    block = np.zeros((n_rows, n_dense), dtype=dtype)
    block.ravel()[row_starts + where[dense_entry]] = matrix.data[dense_entry]
    rest = ~dense_entry
    indptr = (matrix.indptr - dense_before).astype(matrix.indptr.dtype, copy=False)
    return block, sparse.csr_matrix((matrix.data[rest], matrix.indices[rest], indptr), shape=matrix.shape)


def _row_numbers(rows, n_rows: int) -> np.ndarray:
    """Row numbers (int64, from 0) of an array of them (negative ones counted from the end) or
    of a row mask, as numpy and scipy take them; IndexError for one out of range."""
    rows = np.asarray(rows)
    if rows.dtype == bool:  # a mask of the rows, as scipy takes one
        if rows.shape != (n_rows,):
            raise IndexError(f"a row mask of shape {rows.shape} for {n_rows} rows")
        rows = np.flatnonzero(rows)
    rows = rows.astype(np.int64, copy=False).ravel()
    if len(rows) and (rows.min() < -n_rows or rows.max() >= n_rows):
        raise IndexError(f"row index out of range for {n_rows} rows")
    return np.where(rows < 0, rows + n_rows, rows)


class StackedRows:
    """The rows of ``head`` then those of ``tail`` (CSR matrices of one width; ``tail`` may also
    make its rows as they are taken, as a
    :class:`~recommender.features.index_features.CountedTfidf` does), stacked only as
    they are taken: a library's rows above a collection index's, without the copy of the
    collection's that ``sparse.vstack`` makes (30,000 abstracts' character rows: 120 MB).

    ``StackedRows(head, tail)[rows]`` equals ``sparse.vstack([head, tail], format="csr")[rows]``
    bit for bit, for an integer, a slice, an array of row numbers or a row mask (and
    ``[rows, columns]``);
    ``[:]`` is the whole stacked matrix.
    """

    def __init__(self, head: sparse.csr_matrix, tail):
        if head.shape[1] != tail.shape[1]:
            raise ValueError(f"rows of {head.shape[1]} and {tail.shape[1]} columns cannot be stacked")
        self.head = sparse.csr_matrix(head)
        # Rows made as they are taken (``tail[rows]``, ``column_counts()``: a collection index's
        # character rows made from their compact counts) stay so.
        self.tail = tail if hasattr(tail, "column_counts") else sparse.csr_matrix(tail)
        self.shape = (head.shape[0] + tail.shape[0], head.shape[1])
        self.dtype = np.result_type(head.dtype, tail.dtype)

    def column_counts(self) -> np.ndarray:
        """How many rows hold each column."""
        tail = self.tail.column_counts() if hasattr(self.tail, "column_counts") else np.bincount(
            self.tail.indices, minlength=self.shape[1])
        return np.bincount(self.head.indices, minlength=self.shape[1]) + tail

    def __getitem__(self, rows) -> sparse.csr_matrix:
        if isinstance(rows, tuple):  # [rows, columns]
            rows, columns = rows
            return self[rows][:, columns]
        n_head = self.head.shape[0]
        if isinstance(rows, (int, np.integer)):
            rows = [int(rows)]  # (a negative one is counted from the end below, as any)
        elif isinstance(rows, slice):
            rows = range(*rows.indices(self.shape[0]))
        rows = _row_numbers(rows, self.shape[0])
        in_head = rows < n_head
        if in_head.all():
            return self._typed(self.head[rows])
        if not in_head.any():
            return self._typed(self.tail[rows - n_head])
        taken = sparse.vstack([self.head[rows[in_head]], self.tail[rows[~in_head] - n_head]], format="csr")
        # Back in the order asked for: the head's rows came first.
        order = np.empty(len(rows), dtype=np.int64)
        order[np.flatnonzero(in_head)] = np.arange(in_head.sum())
        order[np.flatnonzero(~in_head)] = in_head.sum() + np.arange((~in_head).sum())
        return self._typed(taken[order])

    def __matmul__(self, other) -> sparse.csr_matrix:
        """``vstack([head, tail]) @ other`` (sparse ``other``), bit for bit: a product's rows are
        each made on their own, so the two parts' products stacked are the same rows."""
        return sparse.vstack([self._typed(self.head) @ other, self._typed(self.tail[:]) @ other], format="csr")

    def _typed(self, rows: sparse.csr_matrix) -> sparse.csr_matrix:
        return rows if rows.dtype == self.dtype else rows.astype(self.dtype)

    def take(self, rows=slice(None)) -> sparse.csr_matrix:
        return self[rows]


class StackedDense:
    """Dense rows of ``head`` then those of ``tail`` (arrays of one width), stacked only as they
    are taken: a library's embeddings above a collection index's, without the copy of the
    collection's that ``np.vstack`` makes (30,000 papers' static-table vectors: 30 MB held
    through the whole ranking, at its peak too).

    ``StackedDense(head, tail)[rows]`` equals ``np.vstack([head, tail])[rows]`` bit for bit,
    for an integer, a slice, an array of row numbers or a row mask (and ``[rows, columns]``),
    always as a new array: a caller never writes into the index's rows.
    """

    ndim = 2

    def __init__(self, head: np.ndarray, tail: np.ndarray):
        if head.ndim != 2 or tail.ndim != 2 or head.shape[1] != tail.shape[1]:
            raise ValueError(f"rows of shapes {head.shape} and {tail.shape} cannot be stacked")
        self.head, self.tail = head, tail
        self.shape = (head.shape[0] + tail.shape[0], head.shape[1])
        self.dtype = np.result_type(head.dtype, tail.dtype)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        if isinstance(rows, tuple):  # [rows, columns]
            rows, columns = rows
            return np.ascontiguousarray(self[rows][:, columns])
        if isinstance(rows, (int, np.integer)):
            return self[np.array([rows])][0]
        n_head = self.head.shape[0]
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.shape[0])
            if step == 1 and start < stop:  # (whole: the hybrid's first-pass product) one copy, no row numbers
                parts = [self.head[start:stop], self.tail[max(start - n_head, 0):max(stop - n_head, 0)]]
                return np.concatenate([part for part in parts if len(part)]).astype(self.dtype, copy=False)
            rows = np.arange(start, stop, step)
        rows = _row_numbers(rows, self.shape[0])
        in_head = rows < n_head
        if not in_head.any():  # (the candidates: one gather)
            return self.tail[rows - n_head].astype(self.dtype, copy=False)
        if in_head.all():
            return self.head[rows].astype(self.dtype, copy=False)
        taken = np.empty((len(rows), self.shape[1]), dtype=self.dtype)
        taken[in_head] = self.head[rows[in_head]]
        taken[~in_head] = self.tail[rows[~in_head] - n_head]
        return taken

    def take(self, rows=slice(None)) -> np.ndarray:
        return self[rows]


class SideBySide:
    """Sparse matrices of the same rows side by side, each scaled: ``hstack([w * m, ...])``, its
    rows joined only when taken (the joined rows of 50,000 papers would take 400 MB).

    ``SideBySide([word, char], [a, b]).take(rows)`` equals ``sparse.hstack([word * a, char * b],
    format="csr")[rows]`` bit for bit.
    """

    def __init__(self, parts, weights, column_counts=None):
        self.parts = [part if isinstance(part, StackedRows) else sparse.csr_matrix(part) for part in parts]
        self.weights = list(weights)
        self.column_counts = list(column_counts or [None] * len(self.parts))
        self.shape = (self.parts[0].shape[0], sum(part.shape[1] for part in self.parts))
        self.dtype = np.result_type(*(part.dtype for part in self.parts), *(np.asarray(w).dtype for w in self.weights))

    def take(self, rows=slice(None)) -> sparse.csr_matrix:
        return sparse.hstack([part[rows] * weight for part, weight in zip(self.parts, self.weights)], format="csr")


def normalize_rows(matrix):
    """Each row divided by its L2 norm, as ``sklearn.preprocessing.normalize(matrix)`` gives it
    (bit for bit), without importing scikit-learn (see :mod:`recommender.estimator`).

    Parameters
    ----------
    matrix : sparse matrix or array-like of shape (n, d)

    Returns
    -------
    CSR matrix or ndarray of shape (n, d)
        A new matrix, of ``matrix``'s float dtype (float64 for other dtypes); rows whose norm
        is zero (dense: below 10 machine epsilons) are left as they are.
    """
    if sparse.issparse(matrix):
        result = sparse.csr_matrix(matrix, dtype=_float_dtype(matrix.dtype), copy=True)
        divide_rows(result, row_norms(result))
        return result
    result = np.array(matrix, dtype=_float_dtype(np.asarray(matrix).dtype))
    norms = np.sqrt(np.einsum("ij,ij->i", result, result))
    norms[norms < 10 * np.finfo(norms.dtype).eps] = 1.0
    result /= norms[:, np.newaxis]
    return result


def row_norms(matrix: sparse.csr_matrix) -> np.ndarray:
    """L2 norm of each row of a float CSR matrix, float64 of shape (n,), 1.0 for an empty row:
    as scikit-learn's loop computes it, squares in the data's dtype added in order in float64.
    The sums are a one-column CSR product with ones: scipy adds each row's entries in order from
    0, the same sums as ``bincount`` without a row number per entry (3x faster)."""
    squares = (matrix.data * matrix.data).astype(np.float64, copy=False)
    one_column = sparse.csr_matrix((squares, np.zeros(len(squares), dtype=np.int32), matrix.indptr),
                                   shape=(matrix.shape[0], 1))
    norms = np.sqrt(one_column @ np.ones(1))
    norms[norms == 0] = 1.0
    return norms


_DIVIDE_ROWS = 4096


def divide_rows(matrix: sparse.csr_matrix, norms: np.ndarray) -> sparse.csr_matrix:
    """Each row of ``matrix`` divided by its entry of ``norms``, in place: each entry divided in
    float64 and stored in the data's dtype (scikit-learn's numbers, without a float64 copy)."""
    # A block of rows at a time: one float64 per entry of 30,000 abstracts' rows would be 120 MB.
    for start in range(0, matrix.shape[0], _DIVIDE_ROWS):
        stop = min(start + _DIVIDE_ROWS, matrix.shape[0])
        first, last = matrix.indptr[start], matrix.indptr[stop]
        np.divide(matrix.data[first:last], np.repeat(norms[start:stop], np.diff(matrix.indptr[start:stop + 1])),
                  out=matrix.data[first:last], casting="unsafe")
    return matrix


def _float_dtype(dtype) -> np.dtype:
    return np.dtype(dtype) if np.dtype(dtype) in (np.float64, np.float32, np.float16) else np.dtype(np.float64)


def take_rows(rows, which):
    """``rows[which]`` of a matrix, an ndarray, a :class:`SideBySide`, :class:`StackedRows` or
    :class:`StackedDense`."""
    return rows.take(which) if isinstance(rows, (SideBySide, StackedRows, StackedDense)) else rows[which]


def dense_product(rows, other, dense_column_share: float = DENSE_COLUMN_SHARE, row_indices=None,
                  row_counts=None) -> np.ndarray:
    """``rows[row_indices] @ other.T`` as a dense ndarray (dtype of the two inputs together).

    Parameters
    ----------
    rows : sparse matrix, :class:`SideBySide`, :class:`StackedRows` or ndarray of shape (n, d)
    other : sparse matrix or ndarray of shape (m, d)
        Sparse ones without duplicate entries (as scipy's own operations leave them).
    dense_column_share : float
        Columns held by more than this share of ``rows`` times that of ``other`` are
        multiplied as dense blocks.
    row_indices : ndarray of int, optional
        The rows to multiply (default: all), taken a batch at a time rather than copied out.
    row_counts : ndarray of int, optional
        How many of ``rows`` hold each column, when known (a collection index knows its
        papers'): counting them takes a pass over every entry.
    """
    sparse_rows = sparse.issparse(rows) or isinstance(rows, (SideBySide, StackedRows))
    if not (sparse_rows and sparse.issparse(other)):
        product = take_rows(rows, slice(None) if row_indices is None else row_indices) @ other.T
        return product.toarray() if sparse.issparse(product) else np.asarray(product)
    if sparse.issparse(rows):
        rows = sparse.csr_matrix(rows)
    return _split_product(rows, sparse.csr_matrix(other), None, dense_column_share, row_indices, row_counts)


def head_product(rows, n_head: int, dense_column_share: float = DENSE_COLUMN_SHARE, row_counts=None) -> np.ndarray:
    """``dense_product(rows, rows[:n_head])``, equal to it bit for bit: the first rows are
    split into dense and sparse parts once, with the others."""
    if isinstance(rows, StackedRows):
        return _split_product(rows, rows[:n_head], None, dense_column_share, None, row_counts)
    if not sparse.issparse(rows):
        return dense_product(rows, rows[:n_head], dense_column_share)
    rows = sparse.csr_matrix(rows)
    return _split_product(rows, rows[:n_head], n_head, dense_column_share, None, row_counts)


def _split_product(rows, other: sparse.csr_matrix, n_head: int | None, dense_column_share: float,
                   row_indices=None, row_counts=None) -> np.ndarray:
    """:func:`dense_product` of CSR matrices (``rows`` also a :class:`SideBySide`); ``n_head``:
    ``other`` is ``rows[:n_head]``. Column shares are those of all of ``rows``."""
    dtype = np.result_type(rows.dtype, other.dtype)
    if isinstance(rows, SideBySide):
        row_share = np.concatenate([_column_share(part, counts) for part, counts in zip(rows.parts, rows.column_counts)])
    else:
        row_share = _column_share(rows, row_counts)
    frequent = np.flatnonzero(row_share * _column_share(other) > dense_column_share)
    n_rows = rows.shape[0] if row_indices is None else len(row_indices)

    def batch_rows(start: int, stop: int):
        return take_rows(rows, slice(start, stop) if row_indices is None else row_indices[start:stop])

    if len(frequent) == 0:
        return (batch_rows(0, n_rows) @ other.T).toarray().astype(dtype, copy=False)
    position = np.full(rows.shape[1], -1, dtype=np.int64)
    position[frequent] = np.arange(len(frequent))
    first = None
    if n_head is not None and n_rows <= ROW_BATCH:  # one batch: the head's parts are its first rows
        first = _split(rows, position, len(frequent), dtype)
        other_dense, other_rest = first[0][:n_head], first[1][:n_head]
    else:
        other_dense, other_rest = _split(other, position, len(frequent), dtype)
    other_rest = other_rest.T.tocsr()
    product = np.empty((n_rows, other.shape[0]), dtype=dtype)

    batch = n_rows if first is not None else batch_size(n_rows, len(frequent) * np.dtype(dtype).itemsize)

    def multiply(start: int) -> None:
        stop = min(start + batch, n_rows)
        batch_dense, batch_rest = first if first is not None else _split(batch_rows(start, stop), position,
                                                                         len(frequent), dtype)
        np.matmul(batch_dense, other_dense.T, out=product[start:stop])
        product[start:stop] += (batch_rest @ other_rest).toarray()

    # A batch of rows at a time: the dense block of 50,000 rows would take gigabytes.
    starts = range(0, n_rows, batch)
    if len(starts) == 1 or WORKERS == 1:
        for start in starts:
            multiply(start)
    else:
        with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(multiply, starts))
        # The workers' allocator arenas keep what their batches freed (at 30,000 papers about
        # 90 MB after the library's first product), where the next steps could not reuse it.
        release_free_memory()
    return product
