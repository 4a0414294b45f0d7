"""Products of sparse text vectors whose result is (nearly) dense.

Every candidate shares some character 4-grams and common words with every library paper, so
``candidates @ library.T`` is a dense block. scipy's sparse product pays per entry of its
result (a counting pass, a CSR result, then densifying it) and per (row, term, row) triple;
that work sits in a few frequent columns. :func:`dense_product` sends those columns through
BLAS as two small dense blocks and keeps the rest a sparse product: the same sums, in another
order (equal up to floating-point rounding). :func:`head_product` (rows against their own
first rows: the library's block) splits the rows only once, with the same result bit for bit.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

# A column goes through BLAS when the share of rows holding it, multiplied across both
# sides, is above this: measured on 3,000 x 500 character 4-gram and feedback-expanded
# products, from 0.002 to 0.02 all within 15% of the best (0.005).
DENSE_COLUMN_SHARE = 0.005
ROW_BATCH = 4096


def _column_share(matrix: sparse.csr_matrix) -> np.ndarray:
    return np.bincount(matrix.indices, minlength=matrix.shape[1]) / max(matrix.shape[0], 1)


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


def dense_product(rows, other, dense_column_share: float = DENSE_COLUMN_SHARE) -> np.ndarray:
    """``rows @ other.T`` as a dense ndarray (dtype of the two inputs together).

    Parameters
    ----------
    rows : sparse matrix or ndarray of shape (n, d)
    other : sparse matrix or ndarray of shape (m, d)
        Sparse ones without duplicate entries (as scipy's own operations leave them).
    dense_column_share : float
        Columns held by more than this share of ``rows`` times that of ``other`` are
        multiplied as dense blocks.
    """
    if not (sparse.issparse(rows) and sparse.issparse(other)):
        product = rows @ other.T
        return product.toarray() if sparse.issparse(product) else np.asarray(product)
    return _split_product(sparse.csr_matrix(rows), sparse.csr_matrix(other), None, dense_column_share)


def head_product(rows, n_head: int, dense_column_share: float = DENSE_COLUMN_SHARE) -> np.ndarray:
    """``dense_product(rows, rows[:n_head])``, equal to it bit for bit: the first rows are
    split into dense and sparse parts once, with the others."""
    if not sparse.issparse(rows):
        return dense_product(rows, rows[:n_head], dense_column_share)
    rows = sparse.csr_matrix(rows)
    return _split_product(rows, rows[:n_head], n_head, dense_column_share)


def _split_product(rows: sparse.csr_matrix, other: sparse.csr_matrix, n_head: int | None,
                   dense_column_share: float) -> np.ndarray:
    """:func:`dense_product` of two CSR matrices; ``n_head``: ``other`` is ``rows[:n_head]``."""
    dtype = np.result_type(rows.dtype, other.dtype)
    frequent = np.flatnonzero(_column_share(rows) * _column_share(other) > dense_column_share)
    if len(frequent) == 0:
        return (rows @ other.T).toarray().astype(dtype, copy=False)
    position = np.full(rows.shape[1], -1, dtype=np.int64)
    position[frequent] = np.arange(len(frequent))
    first = None
    if n_head is not None and rows.shape[0] <= ROW_BATCH:  # one batch: the head's parts are its first rows
        first = _split(rows, position, len(frequent), dtype)
        other_dense, other_rest = first[0][:n_head], first[1][:n_head]
    else:
        other_dense, other_rest = _split(other, position, len(frequent), dtype)
    other_rest = other_rest.T.tocsr()
    product = np.empty((rows.shape[0], other.shape[0]), dtype=dtype)
    # A batch of rows at a time: the dense block of 50,000 rows would take gigabytes.
    for start in range(0, rows.shape[0], ROW_BATCH):
        stop = min(start + ROW_BATCH, rows.shape[0])
        batch_dense, batch_rest = first if first is not None else _split(rows[start:stop], position, len(frequent),
                                                                         dtype)
        np.matmul(batch_dense, other_dense.T, out=product[start:stop])
        product[start:stop] += (batch_rest @ other_rest).toarray()
    return product
