"""Word uni+bigram counts of many texts, as the index's scikit-learn word vectoriser counts them.

``CountVectorizer(strip_accents="unicode", stop_words=..., ngram_range=(1, 2))`` finds each
text's tokens with ``(?u)\\b\\w\\w+\\b``, drops stop words and joins neighbours into bigrams, all
in Python, a token at a time: half of the time of indexing a large collection.
:func:`count_word_grams` does the same over the code points of all texts at once with numpy
and returns the same matrix and the same sorted terms.

- A token is a maximal run of two or more word characters (``\\w``; \\b is the edge of such a
  run), so tokens are found from a table saying which of the texts' characters ``\\w`` matches.
- Equal tokens are grouped by a 64-bit polynomial hash, then every token is compared code
  point by code point with the first token of its group: a collision is found, never
  trusted (the caller then counts the slow way), so the grouping is exact.
- Terms are ordered without comparing strings beyond the distinct words: a space sorts before
  every word character, so "a b" sorts by (a, b) and after "a" (see :func:`_term_keys`).
"""
from __future__ import annotations

import re
from typing import Callable, Collection, Sequence

import numpy as np
from scipy import sparse

_WORD_CHARACTER = re.compile(r"\w")
_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd: its powers never vanish modulo 2**64
_TOKEN_BATCH = 1 << 20  # tokens hashed / compared at a time (bounds the per-character arrays)


class HashCollision(RuntimeError):
    """Two different tokens had the same hash: count these texts the slow way."""


def _word_table(codes: np.ndarray) -> np.ndarray:
    """Which code points ``\\w`` matches (the regular expression itself decides, per distinct one)."""
    # Most characters are ASCII: all 128 are classified, and only the others found in the texts.
    present = np.concatenate([np.arange(128), np.unique(codes[codes >= 128])]).astype(np.int64)
    table = np.zeros(int(present[-1]) + 1, dtype=bool)
    table[present] = [_WORD_CHARACTER.match(chr(code)) is not None for code in present.tolist()]
    return table


def _char_positions(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For tokens (start, length): the position of each of their characters and its offset in its token."""
    first = np.cumsum(lengths) - lengths
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(first, lengths)
    return np.repeat(starts, lengths) + offsets, offsets


def _hashes(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    powers = np.ones(int(lengths.max(initial=1)), dtype=np.uint64)  # 1, B, B**2 ... modulo 2**64
    powers[1:] = np.cumprod(np.full(len(powers) - 1, _BASE, dtype=np.uint64))
    out = np.empty(len(starts), dtype=np.uint64)
    for begin in range(0, len(starts), _TOKEN_BATCH):
        stop = begin + _TOKEN_BATCH
        positions, offsets = _char_positions(starts[begin:stop], lengths[begin:stop])
        terms = codes[positions].astype(np.uint64) * powers[offsets]  # wraps modulo 2**64, as meant
        out[begin:stop] = np.add.reduceat(terms, np.cumsum(lengths[begin:stop]) - lengths[begin:stop])
    return out


def _check_groups(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, first: np.ndarray,
                  group: np.ndarray) -> None:
    """Raise :class:`HashCollision` unless every token equals the first token of its hash group."""
    representative = first[group]
    if np.any(lengths[representative] != lengths):
        raise HashCollision("tokens of different lengths share a hash")
    for begin in range(0, len(starts), _TOKEN_BATCH):
        stop = begin + _TOKEN_BATCH
        positions, offsets = _char_positions(starts[begin:stop], lengths[begin:stop])
        representative_positions = np.repeat(starts[representative[begin:stop]], lengths[begin:stop]) + offsets
        if np.any(codes[positions] != codes[representative_positions]):
            raise HashCollision("different tokens share a hash")


def _term_keys(rank: np.ndarray, text: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """One int64 key per unigram and bigram occurrence, in the terms' string order, and its text.

    A word's terms are "a" then "a b" for each following word b: key ``rank(a) * (n + 1)``
    for "a", ``rank(a) * (n + 1) + 1 + rank(b)`` for "a b" (``rank``: place in the sorted
    distinct words). Sound because every word character sorts after the space: "a b" < "a'"
    whenever a < a', also when a is a prefix of a'.
    """
    stride = np.int64(n_words + 1)
    unigrams = rank * stride
    same_text = text[1:] == text[:-1]  # bigrams never cross two texts
    bigrams = rank[:-1][same_text] * stride + 1 + rank[1:][same_text]
    return np.concatenate([unigrams, bigrams]), np.concatenate([text, text[:-1][same_text]])


def count_word_grams(texts: Sequence[str], preprocess: Callable[[str], str],
                     stop_words: Collection[str]) -> tuple[sparse.csr_matrix, list[str]]:
    """``(counts, terms)``: float32 counts (one row per text, sorted column indices) and the
    sorted terms, equal to ``CountVectorizer(preprocessor=preprocess, stop_words=stop_words,
    ngram_range=(1, 2))``'s ``fit_transform`` and ``get_feature_names_out`` (no document
    frequency limits). Raises :class:`HashCollision` (never seen) when hashing cannot tell
    two tokens apart; ``ValueError`` when no text holds a term, as the vectoriser does.
    """
    processed = [preprocess(text) for text in texts]
    # Texts joined by a space: not a word character, so no token crosses from one text into the next.
    joined = " ".join(processed)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    text_starts = np.cumsum([0] + [len(text) + 1 for text in processed])[:-1]
    is_word = _word_table(codes)[codes].astype(np.int8)
    edges = np.diff(is_word, prepend=np.int8(0), append=np.int8(0))
    del is_word
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    del edges
    long_enough = ends - starts >= 2
    starts, lengths = starts[long_enough], (ends - starts)[long_enough]
    hashes, first, group = np.unique(_hashes(codes, starts, lengths), return_index=True, return_inverse=True)
    del hashes
    _check_groups(codes, starts, lengths, first, group)
    del codes
    words = [joined[start:start + length] for start, length in zip(starts[first].tolist(), lengths[first].tolist())]
    order = sorted(range(len(words)), key=words.__getitem__)
    rank = np.empty(len(words), dtype=np.int64)
    rank[order] = np.arange(len(words))
    is_stop = np.fromiter((word in stop_words for word in words), dtype=bool, count=len(words))
    kept = ~is_stop[group]
    token_text = np.searchsorted(text_starts, starts[kept], side="right") - 1
    keys, entry_text = _term_keys(rank[group[kept]], token_text, len(words))
    if not len(keys):
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    # One sort of (term, text): its runs are the counts, its term changes the columns, and
    # the entries come out grouped by term, which CSR conversion keeps within each row.
    n_texts = np.int64(len(texts))
    if int(keys.max()) < np.iinfo(np.int64).max // max(int(n_texts), 1):
        entries = np.sort(keys * n_texts + entry_text)
        new = np.flatnonzero(np.diff(entries, prepend=np.int64(-1)) != 0)
        counts = np.diff(np.append(new, len(entries))).astype(np.float32)
        entries = entries[new]
        entry_keys, entry_text = entries // n_texts, entries % n_texts
    else:  # (a vocabulary too large to pack with the text number: never at index sizes)
        pairs, counts = np.unique(np.stack([keys, entry_text]), axis=1, return_counts=True)
        entry_keys, entry_text, counts = pairs[0], pairs[1], counts.astype(np.float32)
    new_term = np.diff(entry_keys, prepend=np.int64(-1)) != 0
    columns = np.cumsum(new_term) - 1
    term_keys = entry_keys[new_term]
    # Entries in column order: the conversion keeps that order within each row (sorted indices).
    matrix = sparse.coo_matrix((counts, (entry_text, columns)), shape=(len(texts), len(term_keys))).tocsr()
    sorted_words = [words[index] for index in order]
    stride = len(words) + 1
    terms = [sorted_words[key // stride] if key % stride == 0
             else sorted_words[key // stride] + " " + sorted_words[key % stride - 1] for key in term_keys.tolist()]
    return matrix, terms
