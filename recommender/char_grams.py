"""Character 4-gram counts of a few hundred texts, as scikit-learn's ``char_wb`` analyzer counts them.

``CountVectorizer(analyzer="char_wb", ngram_range=(4, 4))`` cuts each whitespace-separated word,
padded with one space on either side, into its 4-character windows (a one-character word,
" w ", counts as itself) and counts them in Python, one n-gram at a time: most of the time of
transforming a library. :func:`count_char_grams` finds the same windows with numpy over the
texts' code points and returns the same matrix and the same sorted n-grams.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np
from scipy import sparse

N = 4
# scikit-learn's _VectorizerMixin._white_spaces, applied before splitting into words.
_WHITE_SPACES = re.compile(r"\s\s+")
_SPACE = ord(" ")


def _padded_words(text: str) -> str:
    """The text's words, each padded with spaces, written one after the other."""
    words = _WHITE_SPACES.sub(" ", text).split()
    return " " + "  ".join(words) + " " if words else ""


def count_char_grams(texts: Sequence[str], preprocess: Callable[[str], str]) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``(counts, grams)``: float32 counts (one row per text, one column per n-gram) and the
    n-grams in sorted order, equal to ``CountVectorizer(analyzer="char_wb", ngram_range=(4, 4),
    preprocessor=preprocess)``'s ``fit_transform`` and ``get_feature_names_out``.

    ``preprocess`` is the vectoriser's own (``build_preprocessor()``: lower case, accents).
    """
    padded = [_padded_words(preprocess(text)) for text in texts]
    # Texts joined by a double space: a window holding two adjacent spaces crosses from one
    # padded word (or text) into the next, and no window inside a padded word does.
    joined = "  ".join(padded)
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    text_of = np.repeat(np.arange(len(texts)), [len(p) + 2 for p in padded])[: len(codes)]
    # Code points ranked (order kept, 0 left for "no character") so that four fit in 64 bits.
    alphabet, ranks = np.unique(np.append(codes, _SPACE), return_inverse=True)
    if len(alphabet) >= 0xFFFF:  # more distinct characters than 16 bits rank: count them the slow way
        from sklearn.feature_extraction.text import CountVectorizer

        counter = CountVectorizer(analyzer="char_wb", ngram_range=(N, N), preprocessor=preprocess, dtype=np.float32)
        return sparse.csr_matrix(counter.fit_transform(texts)), counter.get_feature_names_out().astype(f"<U{N}")
    ranks = ranks[:-1].astype(np.uint64) + 1
    space = np.uint64(np.searchsorted(alphabet, _SPACE) + 1)
    n_windows = max(len(codes) - N + 1, 0)
    keys = np.zeros(n_windows, dtype=np.uint64)
    for offset in range(N):
        keys = (keys << np.uint64(16)) | ranks[offset: offset + n_windows]
    double_space = (codes[:-1] == _SPACE) & (codes[1:] == _SPACE)
    crossing = np.zeros(n_windows, dtype=bool)
    for offset in range(N - 1):
        crossing |= double_space[offset: offset + n_windows]
    window_text = text_of[:n_windows][~crossing]
    keys = keys[~crossing]
    # A one-character word is " w ": space, non-space, space (words hold no spaces).
    is_space = codes == _SPACE
    one_letter = np.flatnonzero(is_space[:-2] & ~is_space[1:-1] & is_space[2:])
    if len(one_letter):
        letters = ranks[one_letter + 1]
        keys = np.concatenate([keys, (space << np.uint64(48)) | (letters << np.uint64(32)) | (space << np.uint64(16))])
        window_text = np.concatenate([window_text, text_of[one_letter]])
    grams, columns = np.unique(keys, return_inverse=True)
    counts = sparse.csr_matrix((np.ones(len(keys), dtype=np.float32), (window_text, columns.ravel())),
                               shape=(len(texts), len(grams)))
    counts.sum_duplicates()
    # Back to text: the four ranks of each key, as code points; a trailing 0 ends a 3-character gram.
    chars = np.zeros((len(grams), N), dtype=np.uint32)
    for position in range(N):
        rank = (grams >> np.uint64(16 * (N - 1 - position))) & np.uint64(0xFFFF)
        chars[:, position] = np.where(rank > 0, alphabet[np.maximum(rank, 1).astype(np.int64) - 1], 0)
    return counts, chars.view(f"<U{N}").ravel()
