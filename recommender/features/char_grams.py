"""Character 4-gram counts of many texts, as scikit-learn's ``char_wb`` analyzer counts them.

``CountVectorizer(analyzer="char_wb", ngram_range=(4, 4))`` cuts each whitespace-separated word,
padded with one space on either side, into its 4-character windows (a one-character word,
" w ", counts as itself) and counts them in Python, one n-gram at a time: most of the time of
transforming a library, and half of tokenising a partition of a large collection. :func:`count_char_grams` finds the same windows with numpy over the
texts' code points and returns the same matrix and the same sorted n-grams.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy import sparse

N = 4
_SPACE = ord(" ")
_TEXT_BATCH = 2000


def _padded_words(text: str) -> str:
    """The text's words, each padded with spaces, written one after the other."""
    words = text.split()  # (the vectoriser first makes runs of whitespace one space: the same words)
    return " " + "  ".join(words) + " " if words else ""


def _window_keys(codes: np.ndarray, ranks: np.ndarray, text_of: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The keys (ranks of the four characters, ``bits`` each) of the windows of ``codes`` (whole
    padded texts joined by double spaces) that stay within one padded word, and their texts."""
    n_windows = max(len(codes) - N + 1, 0)
    key_type = np.uint32 if bits * N <= 32 else np.uint64  # (half the memory to go through)
    shift = key_type(bits)
    keys = np.zeros(n_windows, dtype=key_type)
    for offset in range(N):
        keys <<= shift
        keys |= ranks[offset: offset + n_windows]
    double_space = (codes[:-1] == _SPACE) & (codes[1:] == _SPACE)
    inside = np.ones(n_windows, dtype=bool)
    for offset in range(N - 1):
        inside &= ~double_space[offset: offset + n_windows]
    keys, window_text = keys[inside], text_of[:n_windows][inside]
    # A one-character word is " w ": space, non-space, space (words hold no spaces).
    is_space = codes == _SPACE
    one_letter = np.flatnonzero(is_space[:-2] & ~is_space[1:-1] & is_space[2:])
    if len(one_letter):
        space = key_type(_SPACE + 1)  # the space is ASCII: its rank is its code + 1
        letters = ranks[one_letter + 1].astype(key_type)
        keys = np.concatenate([keys, ((((space << shift) | letters) << shift) | space) << shift])
        window_text = np.concatenate([window_text, text_of[one_letter]])
    return keys, window_text


def _counted(keys: np.ndarray, window_text: np.ndarray, text_bits: int):
    """``(gram numbers, texts, counts, distinct grams)`` of a batch's windows, ordered by gram
    then text (a gram's number: its place in the batch's distinct grams): one sort of (gram,
    text) pairs packed in 64 bits, whose runs are the counts."""
    entries = np.sort((keys.astype(np.uint64) << np.uint64(text_bits)) | window_text.astype(np.uint64))
    new = np.flatnonzero(np.diff(entries, prepend=np.uint64(0)) != 0)  # (no entry is 0: a gram has characters)
    counts = np.diff(np.append(new, len(entries))).astype(np.float32)
    entries = entries[new]
    entry_keys = entries >> np.uint64(text_bits)
    entry_text = (entries & np.uint64((1 << text_bits) - 1)).astype(np.int32)
    new_gram = np.diff(entry_keys, prepend=np.uint64(0)) != 0
    return (np.cumsum(new_gram, dtype=np.int32) - 1).astype(np.int32), entry_text, counts, entry_keys[new_gram]


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
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    # Code points ranked (order kept, 0 left for "no character") so that four fit in a key;
    # a table, not a sort, ranks them (most are ASCII: all 128 are ranked, others as found).
    alphabet = np.concatenate([np.arange(128, dtype=np.uint32), np.unique(codes[codes >= 128])])
    if len(alphabet) >= 0xFFFF:  # more distinct characters than 16 bits rank: count them the slow way
        from sklearn.feature_extraction.text import CountVectorizer

        counter = CountVectorizer(analyzer="char_wb", ngram_range=(N, N), preprocessor=preprocess, dtype=np.float32)
        return sparse.csr_matrix(counter.fit_transform(texts)), counter.get_feature_names_out().astype(f"<U{N}")
    rank_of = np.zeros(int(alphabet[-1]) + 1, dtype=np.uint16)
    rank_of[alphabet] = np.arange(1, len(alphabet) + 1)
    # Bits per character: 8 for up to 255 distinct characters (a key is 32 bits), 9 for up to
    # 511 (a key then still leaves room for the text's number beside it, and one sort counts
    # everything), else 16.
    bits = 8 if len(alphabet) < 1 << 8 else 9 if len(alphabet) < 1 << 9 else 16
    # Texts a batch at a time, each batch counted on its own: the per-character arrays stay
    # small (cache-sized, and a partition of 25,000 abstracts peaks at half the memory).
    text_starts = np.cumsum([0] + [len(p) + 2 for p in padded])
    text_bits = max(int(len(texts)).bit_length(), 1)
    packed = bits * N + text_bits <= 64
    pieces = []
    for first in range(0, len(texts), _TEXT_BATCH):
        last = min(first + _TEXT_BATCH, len(texts))
        batch = codes[text_starts[first]: min(text_starts[last], len(codes))]
        text_of = np.repeat(np.arange(first, last, dtype=np.int32), np.diff(text_starts[first:last + 1]))
        keys, window_text = _window_keys(batch, rank_of[batch], text_of[:len(batch)], bits)
        if packed:
            pieces.append(_counted(keys, window_text, text_bits))
        else:  # (more than 511 distinct characters: counted once all are found)
            distinct = np.unique(keys)
            pieces.append((np.searchsorted(distinct, keys).astype(np.int32), window_text,
                           np.ones(len(keys), dtype=np.float32), distinct))
    del codes
    grams = np.unique(np.concatenate([piece[3] for piece in pieces]))
    # A batch's gram numbers to columns: the batch's distinct grams looked up, not each entry's.
    columns = np.concatenate([np.searchsorted(grams, piece[3]).astype(np.int32)[piece[0]] for piece in pieces])
    entry_text, values = (np.concatenate([piece[i] for piece in pieces]) for i in (1, 2))
    del pieces
    # A batch's counts are in gram order: CSR conversion keeps that order within each row.
    counts = sparse.coo_matrix((values, (entry_text, columns)), shape=(len(texts), len(grams))).tocsr()
    counts.sum_duplicates()
    # Back to text: the four ranks of each key, as code points; a trailing 0 ends a 3-character gram.
    chars = np.zeros((len(grams), N), dtype=np.uint32)
    for position in range(N):
        rank = (grams >> np.uint64(bits * (N - 1 - position))) & np.uint64((1 << bits) - 1)
        chars[:, position] = np.where(rank > 0, alphabet[np.maximum(rank, 1).astype(np.int64) - 1], 0)
    return counts, chars.view(f"<U{N}").ravel()
