"""The reduce step of a partitioned index build: each partition's terms and their document
frequencies (and total counts) summed over the partitions, as they arrive, in any order; then
the builder's vocabulary and each partition's local → vocabulary column map.

Character n-grams travel as a numpy string array (a partition holds ~150,000 of them). Word terms travel
as numbers: a partition's distinct words (tens of thousands) and, per term, its first and
second word's place in them (:class:`~recommender.features.word_grams.WordGrams`), so that neither a
worker nor the driver makes or hashes a string per term (a 12,500-paper partition holds ~0.8
million terms, and the driver must keep up with two workers). Only the vocabulary's terms
become strings, once, at the end.
"""
from __future__ import annotations

import numpy as np

from recommender.features.index_features import document_frequency_limits
from recommender.features.word_grams import join_terms


class _Sums:
    """Document frequencies and total counts of numbered terms, in arrays that grow as needed."""

    def __init__(self):
        self.df = np.zeros(1 << 16, dtype=np.int64)
        self.total = np.zeros(1 << 16, dtype=np.float64)
        self.local: dict[int, np.ndarray] = {}  # per partition: its terms' numbers

    def _add(self, partition: int, numbers: np.ndarray, n_numbers: int, df: np.ndarray, total) -> None:
        """A partition's terms are distinct: numpy's sums are the per-term sums."""
        if n_numbers > len(self.df):
            size = max(n_numbers, 2 * len(self.df))
            self.df = np.concatenate([self.df, np.zeros(size - len(self.df), dtype=np.int64)])
            self.total = np.concatenate([self.total, np.zeros(size - len(self.total))])
        self.df[numbers] += df
        if total is not None:
            self.total[numbers] += total
        self.local[partition] = numbers.astype(np.int32)

    def _columns(self, kept_numbers: np.ndarray, n_numbers: int) -> list[np.ndarray]:
        # 32-bit: half the bytes sent to the workers (a vocabulary holds far fewer than 2**31 terms).
        column = np.full(n_numbers, -1, dtype=np.int32)
        column[kept_numbers] = np.arange(len(kept_numbers))
        return [column[self.local[partition]] for partition in range(len(self.local))]

    def _kept(self, kind: str, n_numbers: int, n_papers: int) -> np.ndarray:
        min_df, max_df = document_frequency_limits(kind, n_papers)
        df = self.df[:n_numbers]
        return (df >= min_df) & (df <= max_df * n_papers)


class _SortedKeys(_Sums):
    """Terms as keys kept sorted (an array, not a dict: the driver folds ~1 million terms a
    partition), each key beside its term's number (numbered as first seen)."""

    def __init__(self, dtype):
        super().__init__()
        self.keys = np.zeros(0, dtype=dtype)
        self.key_numbers = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.keys)

    def _numbers(self, keys: np.ndarray) -> np.ndarray:
        """The term number of each of ``keys`` (distinct), new keys numbered and inserted. Looked
        up in sorted order (7x faster than in any order: each search starts where the last
        ended), and the new ones inserted in that order (the keys stay sorted)."""
        if keys.dtype.itemsize > self.keys.dtype.itemsize:  # (longer strings than seen so far)
            self.keys = self.keys.astype(keys.dtype)
        order = np.argsort(keys)
        keys = keys[order]
        places = np.searchsorted(self.keys, keys)
        found = places < len(self.keys)
        found[found] = self.keys[places[found]] == keys[found]
        numbers = np.empty(len(keys), dtype=np.int64)
        numbers[found] = self.key_numbers[places[found]]
        fresh = np.flatnonzero(~found)
        numbers[fresh] = len(self.keys) + np.arange(len(fresh))
        self.keys = np.insert(self.keys, places[fresh], keys[fresh])
        self.key_numbers = np.insert(self.key_numbers, places[fresh], numbers[fresh])
        in_given_order = np.empty_like(numbers)
        in_given_order[order] = numbers
        return in_given_order


class TermCounts(_SortedKeys):
    """Terms as strings (a numpy string array of each partition's terms)."""

    def __init__(self):
        super().__init__("<U1")

    def add(self, partition: int, terms, df: np.ndarray, total) -> None:
        """Partition ``partition``'s terms, in any order of partitions (sums of integers)."""
        terms = np.asarray(terms, dtype=str) if len(terms) else np.zeros(0, dtype="<U1")
        self._add(partition, self._numbers(terms), len(self.keys), df, total)

    def vocabulary(self, kind: str, n_papers: int) -> tuple[list[str], np.ndarray, np.ndarray, list[np.ndarray]]:
        """The builder's vocabulary (sorted, limited by document frequency), its terms' df and
        total counts, and each partition's local → vocabulary column map."""
        kept = self._kept(kind, len(self.keys), n_papers)[self.key_numbers]  # in the keys' (sorted) order
        if not kept.any():
            raise ValueError("cannot build a vocabulary from the collection's texts (after pruning, no terms remain)")
        numbers = self.key_numbers[kept]
        return self.keys[kept].tolist(), self.df[numbers], self.total[numbers], self._columns(numbers, len(self.keys))


class WordTermCounts(_SortedKeys):
    """Word uni+bigrams as numbers: each distinct word numbered when first seen, a term's key
    ``(first word's number << 32) | (second word's number + 1, or 0)``."""

    def __init__(self):
        super().__init__(np.int64)
        self.word_number: dict[str, int] = {}

    def add(self, partition: int, words: list[str], first: np.ndarray, second: np.ndarray, df: np.ndarray,
            total) -> None:
        """Partition ``partition``'s terms (term j: ``words[first[j]]``, then
        ``words[second[j]]`` unless it is -1), in any order of partitions."""
        word_number = self.word_number
        numbers = np.fromiter((word_number.setdefault(word, len(word_number)) for word in words), dtype=np.int64,
                              count=len(words))
        keys = (numbers[first] << 32) | np.where(second >= 0, numbers[np.maximum(second, 0)] + 1, 0)
        self._add(partition, self._numbers(keys), len(self.keys), df, total)

    def vocabulary(self, kind: str, n_papers: int) -> tuple[list[str], np.ndarray, np.ndarray, list[np.ndarray]]:
        """As :meth:`TermCounts.vocabulary`: the terms in string order (a space sorts before
        every word character, so "a b" sorts by (a, b) and after "a", as
        :func:`~recommender.features.word_grams._term_keys` orders them)."""
        n_terms = len(self.keys)
        keys = np.empty(n_terms, dtype=np.int64)
        keys[self.key_numbers] = self.keys
        kept_numbers = np.flatnonzero(self._kept(kind, n_terms, n_papers))
        if not len(kept_numbers):
            raise ValueError("cannot build a vocabulary from the collection's texts (after pruning, no terms remain)")
        words = list(self.word_number)
        order = sorted(range(len(words)), key=words.__getitem__)
        rank = np.empty(len(words) + 1, dtype=np.int64)  # (rank[-1]: no second word, before every word)
        rank[order] = np.arange(1, len(words) + 1)
        rank[-1] = 0
        first, second = keys[kept_numbers] >> 32, (keys[kept_numbers] & 0xFFFFFFFF) - 1
        order = np.argsort(rank[first] * (len(words) + 1) + rank[second], kind="stable")
        kept_numbers, first, second = kept_numbers[order], first[order], second[order]
        terms = join_terms(words, first, second)
        return terms, self.df[kept_numbers], self.total[kept_numbers], self._columns(kept_numbers, n_terms)
