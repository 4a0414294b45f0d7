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

from recommender.features.compact_counts import count_type

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


def _batch_rows(keys: np.ndarray, window_text: np.ndarray, key_bits: int, n_texts: int):
    """``(gram numbers, row lengths, counts, distinct grams)`` of a batch's ``n_texts`` texts
    (``window_text``: numbers from 0 within the batch), ordered by text then gram (a gram's number: its place in
    the batch's distinct grams, which are sorted): CSR order. One sort of (text, gram) pairs
    packed in 64 bits when they fit, whose runs are the counts."""
    text_bits = max(int(window_text.max(initial=0)).bit_length(), 1)
    if key_bits + text_bits <= 64:
        entries = np.sort((window_text.astype(np.uint64) << np.uint64(key_bits)) | keys.astype(np.uint64))
        new = np.flatnonzero(np.diff(entries, prepend=entries[:1] ^ np.uint64(1)) != 0) if len(entries) else \
            np.zeros(0, dtype=np.int64)
        counts = np.diff(np.append(new, len(entries))).astype(np.float32)
        entries = entries[new]
        entry_keys = entries & np.uint64((1 << key_bits) - 1) if key_bits < 64 else entries
        entry_text = (entries >> np.uint64(key_bits)).astype(np.int32)
    else:  # (16-bit characters: a key takes all 64 bits)
        order = np.lexsort((keys, window_text))
        keys, window_text = keys[order], window_text[order]
        change = np.ones(len(keys), dtype=bool)
        change[1:] = (keys[1:] != keys[:-1]) | (window_text[1:] != window_text[:-1])
        new = np.flatnonzero(change)
        counts = np.diff(np.append(new, len(keys))).astype(np.float32)
        entry_keys, entry_text = keys[new].astype(np.uint64), window_text[new].astype(np.int32)
    distinct, numbers = np.unique(entry_keys, return_inverse=True)
    return numbers.astype(np.int32).ravel(), np.bincount(entry_text, minlength=n_texts), counts, distinct


def _alphabet(texts: Sequence[str]) -> np.ndarray:
    """The code points of ``texts``, sorted: all 128 ASCII ones and the others that occur."""
    others = set()
    for first in range(0, len(texts), _TEXT_BATCH):
        joined = "".join(texts[first:first + _TEXT_BATCH])
        if not joined.isascii():
            others.update(np.unique(_codes(joined)).tolist())
    return np.array(sorted(set(range(128)) | others), dtype=np.uint32)


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def count_char_grams(texts: Sequence[str], preprocess: Callable[[str], str],
                     compact: bool = False) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``(counts, grams)``: float32 counts (one row per text, one column per n-gram) and the
    n-grams in sorted order, equal to ``CountVectorizer(analyzer="char_wb", ngram_range=(4, 4),
    preprocessor=preprocess)``'s ``fit_transform`` and ``get_feature_names_out``.

    ``preprocess`` is the vectoriser's own (``build_preprocessor()``: lower case, accents);
    ``compact``: the same counts in the smallest unsigned type that holds them (as
    :func:`~recommender.features.compact_counts.compact_counts` gives them), made so, not
    converted: 30,000 abstracts' 18 million counts take 18 MB, not 72.
    """
    padded = [_padded_words(preprocess(text)) for text in texts]
    # Code points ranked (order kept, 0 left for "no character") so that four fit in a key;
    # a table, not a sort, ranks them (most are ASCII: all 128 are ranked, others as found).
    alphabet = _alphabet(padded)
    if len(alphabet) >= 0xFFFF:  # more distinct characters than 16 bits rank: count them the slow way
        from sklearn.feature_extraction.text import CountVectorizer

        counter = CountVectorizer(analyzer="char_wb", ngram_range=(N, N), preprocessor=preprocess, dtype=np.float32)
        return sparse.csr_matrix(counter.fit_transform(texts)), counter.get_feature_names_out().astype(f"<U{N}")
    rank_of = np.zeros(int(alphabet[-1]) + 1, dtype=np.uint16)
    rank_of[alphabet] = np.arange(1, len(alphabet) + 1)
    # Bits per character: 8 for up to 255 distinct characters (a key is 32 bits), 9 for up to
    # 511, else 16.
    bits = 8 if len(alphabet) < 1 << 8 else 9 if len(alphabet) < 1 << 9 else 16
    # Texts a batch at a time, each batch's rows counted on its own and kept in CSR order: the
    # per-character arrays stay cache-sized and no array of every window, or of every entry
    # in another order, is ever made (30,000 abstracts: 660 -> 250 MB at the peak).
    pieces = []
    for first in range(0, len(texts), _TEXT_BATCH):
        batch_texts = padded[first:first + _TEXT_BATCH]
        # Texts joined by a double space: a window holding two adjacent spaces crosses from one
        # padded word (or text) into the next, and no window inside a padded word does.
        codes = _codes("  ".join(batch_texts))
        text_of = np.repeat(np.arange(len(batch_texts), dtype=np.int32), [len(p) + 2 for p in batch_texts])
        keys, window_text = _window_keys(codes, rank_of[codes], text_of[:len(codes)], bits)
        pieces.append(_batch_rows(keys, window_text, bits * N, len(batch_texts)))
    grams = np.unique(np.concatenate([piece[3] for piece in pieces])) if pieces else np.zeros(0, dtype=np.uint64)
    indptr = np.zeros(len(texts) + 1, dtype=np.int64)
    for batch, piece in enumerate(pieces):
        indptr[batch * _TEXT_BATCH + 1: batch * _TEXT_BATCH + 1 + len(piece[1])] = piece[1]
    np.cumsum(indptr, out=indptr)
    # A batch's gram numbers to columns: the batch's distinct grams looked up, not each entry's.
    columns = np.empty(int(indptr[-1]), dtype=np.int32)
    largest = max((int(piece[2].max(initial=0)) for piece in pieces), default=0)
    values = np.empty(int(indptr[-1]), dtype=count_type(largest) if compact else np.float32)
    for batch, piece in enumerate(pieces):
        start, stop = indptr[batch * _TEXT_BATCH], indptr[min((batch + 1) * _TEXT_BATCH, len(texts))]
        columns[start:stop] = np.searchsorted(grams, piece[3]).astype(np.int32)[piece[0]]
        values[start:stop] = piece[2]
        pieces[batch] = None
    index_type = np.int32 if len(columns) < np.iinfo(np.int32).max else np.int64
    counts = sparse.csr_matrix((values, columns, indptr.astype(index_type)), shape=(len(texts), len(grams)))
    counts.has_sorted_indices = True  # (text, gram) order: columns ascend within each row
    # Back to text: the four ranks of each key, as code points; a trailing 0 ends a 3-character gram.
    chars = np.zeros((len(grams), N), dtype=np.uint32)
    for position in range(N):
        rank = (grams >> np.uint64(bits * (N - 1 - position))) & np.uint64((1 << bits) - 1)
        chars[:, position] = np.where(rank > 0, alphabet[np.maximum(rank, 1).astype(np.int64) - 1], 0)
    return counts, chars.view(f"<U{N}").ravel()
