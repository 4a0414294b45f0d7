"""A library's word counts in the columns of a collection's vocabulary, in one pass.

Fitting a ``CountVectorizer`` on the library's texts, then mapping its sorted vocabulary onto
the collection's, sorts and re-indexes every term the library holds; only the few the
collection lacks need that. :func:`count_in_vocabulary` counts each text's terms straight
into the vocabulary's columns and gives the library's own terms columns after them, in the
order of their sorted text, as that route does.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy import sparse


def count_in_vocabulary(texts: Sequence[str], analyze: Callable[[str], list[str]], vocabulary: Mapping[str, int],
                        min_df: int) -> tuple[sparse.csr_matrix, list[str]]:
    """``(counts, own_terms)``: float32 counts, one row per text, with sorted column indices:
    ``vocabulary``'s columns, then one per term it lacks that at least ``min_df`` texts hold
    (``own_terms``, sorted).

    ``analyze`` cuts a text into its terms (a vectoriser's ``build_analyzer()``).
    """
    n_known = len(vocabulary)
    own: dict[str, int] = {}  # term the vocabulary lacks -> its order of appearance
    columns, values, indptr = [], [], [0]
    for text in texts:
        for term, count in Counter(analyze(text)).items():
            column = vocabulary.get(term)
            columns.append(n_known + own.setdefault(term, len(own)) if column is None else column)
            values.append(count)
        indptr.append(len(columns))
    columns = np.asarray(columns, dtype=np.int64)
    values = np.asarray(values, dtype=np.float32)
    own_terms = list(own)
    is_own = columns >= n_known
    document_frequency = np.bincount(columns[is_own] - n_known, minlength=len(own))
    kept = sorted(np.flatnonzero(document_frequency >= min_df).tolist(), key=own_terms.__getitem__)
    own_column = np.full(len(own), -1, dtype=np.int64)
    own_column[kept] = n_known + np.arange(len(kept))
    columns[is_own] = own_column[columns[is_own] - n_known]
    keep = columns >= 0
    kept_before = np.concatenate([[0], np.cumsum(keep)])[indptr]
    counts = sparse.csr_matrix((values[keep], columns[keep], kept_before), shape=(len(texts), n_known + len(kept)))
    counts.sort_indices()
    return counts, [own_terms[i] for i in kept]
