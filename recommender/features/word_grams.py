"""Word uni+bigram counts of many texts, as the index's scikit-learn word vectoriser counts them.

``CountVectorizer(strip_accents="unicode", stop_words=..., ngram_range=(1, 2))`` finds each
text's tokens with ``(?u)\\b\\w\\w+\\b``, drops stop words and joins neighbours into bigrams, all
in Python, a token at a time: half of the time of indexing a large collection.
:func:`count_word_grams` does the same over the code points of all texts at once with numpy
and returns the same matrix and the same sorted terms.

- A token is a maximal run of two or more word characters (``\\w``; \\b is the edge of such a
  run), so tokens are found from a table saying which of the texts' characters ``\\w`` matches.
- Equal tokens are grouped exactly, without hashing: a token of up to ``64 // bits``
  characters is packed into one integer (each character's rank among the word characters
  present, ``bits`` each, first character highest, so the integers sort as the strings do);
  the longer ones (about one in eight) are grouped by a dict of their strings.
- Terms are ordered without comparing strings beyond the distinct words: a space sorts before
  every word character, so "a b" sorts by (a, b) and after "a" (see :func:`_term_keys`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Collection, Sequence

import numpy as np
from scipy import sparse

_WORD_CHARACTER = re.compile(r"\w")


class CodePoints:
    """Texts after ``preprocess``, joined by a space (not a word character: no token crosses from
    one text into the next), as one string and one array of its code points (of the smallest
    unsigned type that holds them all)."""

    def __init__(self, texts: Sequence[str], preprocess: Callable[[str], str]):
        processed = [preprocess(text) for text in texts]
        self.joined = " ".join(processed)
        # Text i is joined[starts[i]:starts[i + 1] - 1].
        self.starts = np.cumsum([0] + [len(text) + 1 for text in processed])
        del processed
        self.codes = code_points(self.joined)

    def __len__(self) -> int:
        return len(self.starts) - 1

    def release(self) -> None:
        """Let go of the text and its code points (the texts' count and starts stay): once the
        tokens are numbered, nothing reads them, and at 30,000 abstracts the two hold 70-140 MB
        while the terms are counted."""
        self.joined, self.codes = "", self.codes[:0]


def code_points(text: str) -> np.ndarray:
    """The code points of ``text``, one array element per character: uint8 when all are below
    256, uint16 below 65,536, else uint32. The texts of 30,000 abstracts are 35 million
    characters; as uint32 they took 140 MB beside the string for the whole count."""
    try:
        return np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        pass
    encoded = text.encode("utf-16-le", "surrogatepass")
    if len(encoded) == 2 * len(text):  # no character beyond 16 bits (each would take two units)
        return np.frombuffer(encoded, dtype=np.uint16)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _word_table(codes: np.ndarray) -> np.ndarray:
    """Which code points ``\\w`` matches (the regular expression itself decides, per distinct one)."""
    # Most characters are ASCII: all 128 are classified, and only the others found in the texts.
    present = np.concatenate([np.arange(128), np.unique(codes[codes >= 128])]).astype(np.int64)
    table = np.zeros(int(present[-1]) + 1, dtype=bool)
    table[present] = [_WORD_CHARACTER.match(chr(code)) is not None for code in present.tolist()]
    return table


@dataclass
class WordGrams:
    """Counts of word terms: ``counts`` (float32, one row per text, sorted column indices), and
    term j is ``words[first[j]]``, followed by ``" " + words[second[j]]`` when ``second[j] >= 0``
    (``words`` sorted, so are the terms). Terms as numbers, not strings: a partition of a large
    collection sends these to the driver, not a million strings."""

    counts: sparse.csr_matrix
    words: list[str]
    first: np.ndarray
    second: np.ndarray

    def terms(self) -> list[str]:
        return join_terms(self.words, self.first, self.second)


def join_terms(words: Sequence[str], first: np.ndarray, second: np.ndarray) -> list[str]:
    """Term j as a string: ``words[first[j]]``, then ``" " + words[second[j]]`` unless it is -1."""
    return [words[a] if b < 0 else words[a] + " " + words[b] for a, b in zip(first.tolist(), second.tolist())]


def _tokens(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, length) of every maximal run of two or more word characters, and the word
    characters present (sorted code points)."""
    table = _word_table(codes)
    seen = np.zeros(len(table), dtype=bool)
    seen[codes] = True
    alphabet = np.flatnonzero(seen & table).astype(np.uint32)
    del seen
    is_word = table[codes].view(np.int8)
    edges = np.diff(is_word, prepend=np.int8(0), append=np.int8(0))
    del is_word
    # 32 bits (a text of 2 GB is far beyond any collection): 30,000 abstracts hold 6 million
    # tokens, and each int64 array of them is 48 MB.
    position = np.int32 if len(codes) + 64 < np.iinfo(np.int32).max else np.int64  # (+ _packed's reach)
    starts = np.flatnonzero(edges == 1).astype(position)
    lengths = np.flatnonzero(edges == -1).astype(position)
    del edges
    lengths -= starts
    long_enough = lengths >= 2
    return starts[long_enough], lengths[long_enough], alphabet


def _packed(ranks: np.ndarray, starts: np.ndarray, lengths: np.ndarray, bits: int, width: int) -> np.ndarray:
    """Each token (of at most ``width`` characters) as one integer: its characters' ranks
    (``ranks``: one per character, 1 and up, ``width`` zeros at the end), ``bits`` each, the
    first in the highest bits, zeros after its end."""
    keys = np.zeros(len(starts), dtype=np.uint64)
    positions = starts.copy()
    for offset in range(width):
        keys <<= np.uint64(bits)
        keys |= np.where(lengths > offset, ranks[positions], 0).astype(np.uint64)
        positions += 1
    return keys


def _unpacked(keys: np.ndarray, alphabet: np.ndarray, bits: int, width: int) -> list[str]:
    chars = np.zeros((len(keys), width), dtype=np.uint32)
    for offset in range(width):
        rank = ((keys >> np.uint64(bits * (width - 1 - offset))) & np.uint64((1 << bits) - 1)).astype(np.int64)
        chars[:, offset] = np.where(rank > 0, alphabet[np.maximum(rank, 1) - 1], 0)
    return chars.view(f"<U{width}").ravel().tolist()  # (numpy drops the trailing zeros)


def _word_numbers(points: CodePoints, starts: np.ndarray, lengths: np.ndarray,
                  alphabet: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each token's number in the distinct words, and those words (in no particular order).
    ``alphabet``: the word characters (ranked by code point, 0 left for "none")."""
    codes = points.codes
    rank_of = np.zeros(int(codes.max(initial=0)) + 1, dtype=np.uint8 if len(alphabet) < 256 else np.uint32)
    rank_of[alphabet] = np.arange(1, len(alphabet) + 1)
    bits = max(int(len(alphabet)).bit_length(), 1)
    width = 64 // bits
    ranks = np.zeros(len(codes) + width, dtype=rank_of.dtype)
    ranks[:len(codes)] = rank_of[codes]
    short = lengths <= width
    keys = _packed(ranks, starts[short], lengths[short], bits, width)
    del ranks
    order = np.argsort(keys)
    keys = keys[order]
    new = np.diff(keys, prepend=np.uint64(0)) != 0  # (no key is 0: a token has characters)
    distinct = keys[new]
    del keys
    numbers = np.empty(len(starts), dtype=np.int32)  # (distinct words: far below 2**31)
    short_numbers = np.empty(len(order), dtype=np.int32)
    short_numbers[order] = np.cumsum(new) - 1
    numbers[short] = short_numbers
    del order, new, short_numbers
    words = _unpacked(distinct, alphabet, bits, width)
    joined = points.joined
    long_tokens = [joined[start:start + length]
                   for start, length in zip(starts[~short].tolist(), lengths[~short].tolist())]
    long_words = dict.fromkeys(long_tokens)
    for number, word in enumerate(long_words, start=len(words)):
        long_words[word] = number
    numbers[~short] = np.fromiter(map(long_words.__getitem__, long_tokens), dtype=np.int32, count=len(long_tokens))
    return numbers, words + list(long_words)


def _term_keys(rank: np.ndarray, text: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """One int64 key per unigram and bigram occurrence, in the terms' string order, and its text.

    A word's terms are "a" then "a b" for each following word b: key ``rank(a) * (n + 1)``
    for "a", ``rank(a) * (n + 1) + 1 + rank(b)`` for "a b" (``rank``: place in the sorted
    distinct words). Sound because every word character sorts after the space: "a b" < "a'"
    whenever a < a', also when a is a prefix of a'.
    """
    stride = np.int64(n_words + 1)
    same_text = text[1:] == text[:-1]  # bigrams never cross two texts
    n_unigrams, n_bigrams = len(rank), int(np.count_nonzero(same_text))
    # Written into their places, not made apart and concatenated: at 30,000 abstracts each
    # int64 array of these 9 million entries is 72 MB.
    keys = np.empty(n_unigrams + n_bigrams, dtype=np.int64)
    np.multiply(rank, stride, out=keys[:n_unigrams])
    texts = np.empty(n_unigrams + n_bigrams, dtype=text.dtype)
    texts[:n_unigrams] = text
    if n_bigrams:
        bigrams = keys[n_unigrams:]
        np.compress(same_text, keys[: n_unigrams - 1], out=bigrams)
        bigrams += 1
        bigrams += np.compress(same_text, rank[1:])
        np.compress(same_text, text[:-1], out=texts[n_unigrams:])
    return keys, texts


def _changes(values: np.ndarray) -> np.ndarray:
    """``np.diff(values, prepend=-1) != 0`` for non-negative values, without the differences."""
    changed = np.empty(len(values), dtype=bool)
    changed[:1] = True
    np.not_equal(values[1:], values[:-1], out=changed[1:])
    return changed


def word_grams(points: CodePoints, stop_words: Collection[str]) -> WordGrams:
    """The word uni+bigram counts of ``points``' texts (see :func:`count_word_grams`); ``points``
    is released (:meth:`CodePoints.release`) once its tokens are numbered."""
    starts, lengths, alphabet = _tokens(points.codes)
    numbers, words = _word_numbers(points, starts, lengths, alphabet)
    points.release()
    del lengths
    order = sorted(range(len(words)), key=words.__getitem__)
    rank = np.empty(len(words), dtype=np.int64)
    rank[order] = np.arange(len(words))
    stop_words = frozenset(stop_words)
    is_stop = np.fromiter((word in stop_words for word in words), dtype=bool, count=len(words))
    kept = ~is_stop[numbers]
    tokens_per_text = np.diff(np.searchsorted(starts, points.starts))
    token_text = np.repeat(np.arange(len(points), dtype=np.int32), tokens_per_text)[kept]
    del starts
    keys, entry_text = _term_keys(rank[numbers[kept]], token_text, len(words))
    del numbers, token_text
    if not len(keys):
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    # One sort of (term, text): its runs are the counts, its term changes the columns, and
    # the entries come out grouped by term, which CSR conversion keeps within each row.
    n_texts = np.int64(len(points))
    if int(keys.max()) < np.iinfo(np.int64).max // max(int(n_texts), 1):
        # In place: at 30,000 abstracts each copy of these 9 million entries is 72 MB.
        entries = keys
        del keys
        entries *= n_texts
        entries += entry_text
        entries.sort()
        new = np.flatnonzero(_changes(entries))
        counts = np.empty(len(new), dtype=np.float32)  # each run's length, without an int64 copy
        np.subtract(new[1:], new[:-1], out=counts[:-1], casting="unsafe")
        counts[-1:] = len(entries) - new[-1:]
        entries = entries[new]
        del new
        entry_keys = entries // n_texts
        entries %= n_texts
        entry_text = entries.astype(np.int32)  # (the text numbers: 32 bits hold them)
        del entries
    else:  # (a vocabulary too large to pack with the text number: never at index sizes)
        pairs, counts = np.unique(np.stack([keys, entry_text]), axis=1, return_counts=True)
        entry_keys, entry_text, counts = pairs[0], pairs[1], counts.astype(np.float32)
    new_term = _changes(entry_keys)
    term_keys = entry_keys[new_term]
    del entry_keys
    # The entries are in (term, text) order: compressed columns as they are, made rows by one
    # conversion, which keeps each row's columns in order (sorted indices).
    column_starts = np.append(np.flatnonzero(new_term), len(new_term))
    del new_term
    matrix = sparse.csc_matrix((counts, entry_text, column_starts), shape=(len(points), len(term_keys))).tocsr()
    stride = len(words) + 1
    return WordGrams(matrix, [words[index] for index in order], term_keys // stride, term_keys % stride - 1)


def count_word_grams(texts: Sequence[str], preprocess: Callable[[str], str],
                     stop_words: Collection[str]) -> tuple[sparse.csr_matrix, list[str]]:
    """``(counts, terms)``: float32 counts (one row per text, sorted column indices) and the
    sorted terms, equal to ``CountVectorizer(preprocessor=preprocess, stop_words=stop_words,
    ngram_range=(1, 2))``'s ``fit_transform`` and ``get_feature_names_out`` (no document
    frequency limits). ``ValueError`` when no text holds a term, as the vectoriser does.
    """
    grams = word_grams(CodePoints(texts, preprocess), stop_words)
    return grams.counts, grams.terms()
