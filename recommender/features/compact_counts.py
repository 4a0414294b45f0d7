"""Count matrices as an index file keeps them: small integers and column gaps, not floats and
column numbers.

A collection index's largest parts are its word and character n-gram counts: float32 values
(4 bytes) and int32 column numbers (4 bytes) for every entry, 8 KB a paper in all. The values
are small whole numbers and each row's columns ascend, so a count fits one byte and the gap
to the row's previous column two (the character vocabulary of 3,000 papers is 50,000 columns,
but gaps above 65,535 occur only in a word vocabulary of several hundred thousand, where they
take four). Deflated, that is about a third of the bytes, and decoding is two numpy passes.

:func:`encode_counts` gives the arrays an index file stores for a matrix, :func:`decode_counts`
the matrix back, equal in every value (counts in the 8- or 16-bit type they were stored in,
int32 columns, sorted rows), after checking that the arrays describe one: a damaged file is
refused, not mis-read.

In memory too a collection index holds its counts compact (:func:`compact_counts`): its
TF-IDF rows are made from them bit for bit as from float32 counts
(:func:`~recommender.features.index_features.unnormalised_tfidf` looks the sublinear tf of an
8- or 16-bit count up in a table), and at 30,000 abstracts the character counts take 18 MB
instead of 72.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy import sparse

_PARTS = ("counts", "gaps", "row_lengths", "shape")
_ROW_BLOCK = 4096
_ENTRY_BLOCK = 1 << 20


def _smallest_unsigned(values: np.ndarray, dtypes=(np.uint8, np.uint16, np.uint32)) -> np.dtype | None:
    largest = int(values.max(initial=0))
    return next((np.dtype(dtype) for dtype in dtypes if largest <= np.iinfo(dtype).max), None)


def count_type(largest: int) -> np.dtype:
    """The smallest of uint8 and uint16 that holds whole counts up to ``largest``, else float32."""
    return next((np.dtype(dtype) for dtype in (np.uint8, np.uint16) if largest <= np.iinfo(dtype).max),
                np.dtype(np.float32))


def compact_counts(counts: sparse.csr_matrix) -> sparse.csr_matrix:
    """``counts`` in the smallest unsigned integer type that holds them (a word is rarely seen
    256 times in one abstract: 1 byte a count instead of 4), int32 column numbers; a matrix
    of other values than whole non-negative numbers below 65,536 keeps them as float32."""
    counts = sparse.csr_matrix(counts)
    data = counts.data
    if data.dtype in (np.uint8, np.uint16):
        dtype = data.dtype
    else:
        whole = len(data) == 0 or (bool((data >= 0).all()) and bool((data == np.round(data)).all()))
        dtype = count_type(int(data.max(initial=0))) if whole else np.dtype(np.float32)
    index_dtype = np.int32 if max(counts.nnz, counts.shape[1]) < np.iinfo(np.int32).max else np.int64
    compact = sparse.csr_matrix((data.astype(dtype, copy=False), counts.indices.astype(index_dtype, copy=False),
                                 counts.indptr.astype(index_dtype, copy=False)), shape=counts.shape)
    compact.has_sorted_indices = counts.has_sorted_indices
    return compact


def keep_columns(matrix: sparse.csr_matrix, kept: np.ndarray) -> sparse.csr_matrix:
    """``matrix[:, kept]`` (``kept``: a mask of its columns) with sorted indices, as scipy gives
    it bit for bit, from one mask of the entries: scipy's column indexing of 30,000 abstracts'
    character counts made copies 110 MB above the matrix."""
    matrix = sparse.csr_matrix(matrix)
    index_dtype = np.int32 if max(len(kept), matrix.nnz) < np.iinfo(np.int32).max else np.int64
    new_column = (np.cumsum(kept, dtype=np.int64) - 1).astype(index_dtype)
    entry_kept = kept[matrix.indices]
    indices = matrix.indices[entry_kept].astype(index_dtype, copy=False)
    for start in range(0, len(indices), _ENTRY_BLOCK):  # renumbered in place, a block at a time
        indices[start:start + _ENTRY_BLOCK] = new_column[indices[start:start + _ENTRY_BLOCK]]
    indptr = np.zeros(matrix.shape[0] + 1, dtype=index_dtype)
    for start in range(0, matrix.shape[0], _ROW_BLOCK):  # kept entries before each row, a block of rows at a time
        stop = min(start + _ROW_BLOCK, matrix.shape[0])
        first, last = matrix.indptr[start], matrix.indptr[stop]
        before = np.concatenate([[0], np.cumsum(entry_kept[first:last], dtype=np.int64)])
        indptr[start + 1: stop + 1] = indptr[start] + before[matrix.indptr[start + 1: stop + 1] - first]
    pruned = sparse.csr_matrix((matrix.data[entry_kept], indices, indptr), shape=(matrix.shape[0], int(kept.sum())))
    pruned.sort_indices()  # (already sorted when the matrix's were: the kept columns keep their order)
    return pruned


def encode_counts(name: str, matrix: sparse.csr_matrix) -> dict[str, np.ndarray]:
    """The arrays ``NAME.counts``, ``NAME.gaps``, ``NAME.row_lengths`` and ``NAME.shape`` that
    :func:`decode_counts` makes ``matrix`` from again (a CSR matrix of whole, non-negative
    counts; other values are kept as float32)."""
    matrix = sparse.csr_matrix(matrix)
    if not matrix.has_sorted_indices:
        matrix = matrix.sorted_indices()
    data = np.asarray(matrix.data)
    whole = len(data) == 0 or (bool((data >= 0).all()) and bool((data == np.round(data)).all()))
    counts = data.astype(count_type(int(data.max(initial=0))) if whole else np.float32)
    indices = matrix.indices.astype(np.int64)
    gaps = np.diff(indices, prepend=np.int64(0))
    lengths = np.diff(matrix.indptr)
    starts = matrix.indptr[:-1][lengths > 0]
    gaps[starts] = indices[starts]  # a row's first gap is its first column
    return {f"{name}.counts": counts, f"{name}.gaps": gaps.astype(_smallest_unsigned(gaps)),
            f"{name}.row_lengths": lengths.astype(_smallest_unsigned(lengths)),
            f"{name}.shape": np.asarray(matrix.shape, dtype=np.int64)}


def has_counts(name: str, arrays: Mapping[str, np.ndarray]) -> bool:
    """Whether ``arrays`` hold matrix ``name`` in this encoding."""
    return f"{name}.gaps" in arrays


def decode_counts(name: str, arrays: Mapping[str, np.ndarray]) -> sparse.csr_matrix:
    """Matrix ``name`` of ``arrays`` (int32 sorted columns; its counts as stored: uint8 or
    uint16, other values float32). ValueError when the arrays do not describe a matrix."""
    try:
        counts, gaps, lengths, shape = (np.asarray(arrays[f"{name}.{part}"]) for part in _PARTS)
    except KeyError as exc:
        raise ValueError(f"matrix {name} lacks its {exc.args[0]}") from None
    if not (counts.ndim == gaps.ndim == lengths.ndim == 1 and shape.shape == (2,)
            and gaps.dtype.kind == lengths.dtype.kind == "u" and counts.dtype.kind in "uf"):
        raise ValueError(f"matrix {name} is damaged (arrays of the wrong kind)")
    n_rows, n_columns = (int(v) for v in shape)
    if len(lengths) != n_rows or len(counts) != len(gaps) or int(lengths.sum(dtype=np.int64)) != len(gaps):
        raise ValueError(f"matrix {name} is damaged (its sizes disagree)")
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    starts = indptr[:-1][lengths > 0]
    index_dtype = np.int32 if max(len(gaps), n_columns) < np.iinfo(np.int32).max else np.int64
    if len(gaps):
        # A row's gaps add up to its last (largest) column: checked in 64 bits before any
        # narrower sum is made, so that no damaged gap can wrap around into range.
        last_columns = np.add.reduceat(gaps, starts, dtype=np.int64)
        repeated = int(np.count_nonzero(gaps == 0)) - int(np.count_nonzero(gaps[starts] == 0))
        if int(last_columns.max()) >= n_columns or repeated:
            raise ValueError(f"matrix {name} is damaged (columns out of range or out of order)")
        # One running sum gives every column: each row's first gap (its first column) less
        # the last column of the row before, so the sum starts again at each row.
        steps = gaps.astype(index_dtype)
        steps[starts[1:]] -= last_columns[:-1].astype(index_dtype)
        indices = np.cumsum(steps, dtype=index_dtype)
    else:
        indices = np.zeros(0, dtype=index_dtype)
    if counts.dtype not in (np.uint8, np.uint16):
        counts = counts.astype(np.float32)
    return sparse.csr_matrix((counts, indices, indptr.astype(index_dtype)), shape=(n_rows, n_columns))
