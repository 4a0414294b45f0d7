"""A word vocabulary kept as its words and pairs of them: how a collection index holds its
250,000 word terms, and a ``.litrank`` file stores them, without making 250,000 strings.

An index's word terms are words and two-word phrases ("graph", "graph neural"); nine in ten of
a collection's are phrases, made of a few thousand distinct words. :class:`TermList` holds the
distinct words once and each term as one or two positions among them. Counting a collection's
words gives them so (``count_words(..., term_list=True)``), a file stores them so (a third of
the bytes of the terms written out: 0.43 MB instead of 1.03 deflated for 3,000 abstracts), and
nothing is joined until a term's text is asked for (an explanation, ``list()``). Looking a
library's terms up (:meth:`TermList.columns`) compares positions, not strings.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np


class TermList(Sequence):
    """The terms of a word vocabulary, in column order, as positions among their words.

    Parameters
    ----------
    words : list of str, shape (n_words,)
        The distinct words the terms are made of, none empty or holding a space or a newline.
    first : ndarray of int, shape (n_terms,)
        Each term's first word (its position in ``words``).
    second : ndarray of int, shape (n_terms,)
        1 + each term's second word, 0 for a term of one word.
    """

    def __init__(self, words: list[str], first: np.ndarray, second: np.ndarray):
        first, second = np.asarray(first), np.asarray(second)
        if first.ndim != 1 or first.shape != second.shape or first.dtype.kind not in "iu" \
                or second.dtype.kind not in "iu":
            raise ValueError("a term list needs one first and one second word (integers) a term")
        if len(first) and (first.min() < 0 or first.max() >= len(words) or second.min() < 0
                           or second.max() > len(words)):
            raise ValueError("a term list names words it does not hold")
        # 32 bits a position: 8 bytes a term, where its string would take some 60.
        first, second = first.astype(np.int32), second.astype(np.int32)
        self.words, self.first, self.second = words, first, second
        self._terms: list[str] | None = None
        self._keys: tuple[np.ndarray, np.ndarray | None] | None = None
        self._position: dict[str, int] | None = None

    @classmethod
    def from_terms(cls, terms: Sequence[str]) -> "TermList | None":
        """The list of ``terms`` (one word, or two joined by one space), None for a vocabulary
        with any other term (which is then stored as it is)."""
        chunks = [terms[start:start + _CHUNK] for start in range(0, len(terms), _CHUNK)]
        words: set[str] = set()
        for chunk in chunks:  # a chunk at a time: every word of 250,000 terms at once is 30 MB
            joined = "\n".join(chunk)
            if joined.count("\n") != len(chunk) - 1:
                return None
            words.update(joined.replace("\n", " ").split(" "))
        if "" in words:  # an empty term, or a space at an end or doubled
            return None
        ordered = sorted(words)
        position = dict(zip(ordered, range(len(ordered))))
        first, second = np.empty(len(terms), dtype=np.int64), np.empty(len(terms), dtype=np.int64)
        for start, chunk in zip(range(0, len(terms), _CHUNK), chunks):
            first[start:start + len(chunk)], second[start:start + len(chunk)] = _word_positions(chunk, position)
        if len(terms) and second.min() < 0:  # three words or more
            return None
        return cls(ordered, first, second)

    def compacted(self) -> "TermList":
        """The same terms over only the words they use (in the same order: a list of sorted
        words stays sorted), as a file stores them."""
        used = np.zeros(len(self.words), dtype=bool)
        used[self.first] = True
        used[self.second[self.second > 0] - 1] = True
        if used.all():
            return self
        position = np.cumsum(used) - 1
        words = [word for word, keep in zip(self.words, used.tolist()) if keep]
        second = np.where(self.second > 0, position[np.maximum(self.second, 1) - 1] + 1, 0)
        return TermList(words, position[self.first], second)

    def __add__(self, other) -> list[str]:  # as a list of the terms would
        return self.terms() + list(other)

    def __len__(self) -> int:
        return len(self.first)

    def __getitem__(self, item):
        if isinstance(item, slice) or self._terms is not None:
            return self.terms()[item]
        first, second = self.words[self.first[item]], int(self.second[item])
        return first if second == 0 else f"{first} {self.words[second - 1]}"

    def __iter__(self):
        return iter(self.terms())

    def __eq__(self, other) -> bool:
        if isinstance(other, TermList) and self.words == other.words:
            return np.array_equal(self.first, other.first) and np.array_equal(self.second, other.second)
        return isinstance(other, (list, tuple, TermList)) and self.terms() == list(other)

    __hash__ = None  # mutable-looking and compared by value, as a list

    def __repr__(self) -> str:
        return f"TermList({len(self):,} terms of {len(self.words):,} words)"

    def terms(self) -> list[str]:
        """Every term's text, in column order (joined once, on first use)."""
        if self._terms is None:
            words = self.words
            self._terms = [words[first] if second == 0 else f"{words[first]} {words[second - 1]}"
                           for first, second in zip(self.first.tolist(), self.second.tolist())]
        return self._terms

    def unigram_columns(self) -> np.ndarray:
        """The columns of the one-word terms."""
        return np.flatnonzero(self.second == 0)

    def columns(self, terms: Sequence[str]) -> np.ndarray:
        """The column of each of ``terms`` in this list, -1 for those it does not hold.

        Each term becomes a number (its first word's position and its second's), found among
        this list's numbers by a sorted search: no string of this list is made.
        """
        keys, order = self._sorted_keys()
        found = np.full(len(terms), -1, dtype=np.int64)
        if not len(terms) or not len(keys):
            return found
        if self._position is None:
            self._position = dict(zip(self.words, range(len(self.words))))
        first, second = _word_positions(terms, self._position)
        wanted = np.flatnonzero((first >= 0) & (second >= 0))
        if not len(wanted):
            return found
        key = first[wanted] * (len(self.words) + 1) + second[wanted]
        at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
        hit = keys[at] == key
        columns = at[hit] if order is None else order[at[hit]]
        found[wanted[hit]] = columns
        return found

    def _sorted_keys(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Each term's number in ascending order and, when column order is not already that
        order (a vocabulary in alphabetical order is), the columns in it."""
        if self._keys is None:
            keys = self.first.astype(np.int64) * (len(self.words) + 1) + self.second
            if len(keys) < 2 or bool(np.all(keys[1:] > keys[:-1])):
                self._keys = (keys, None)
            else:
                order = np.argsort(keys, kind="stable")
                self._keys = (keys[order], order)
        return self._keys


_CHUNK = 65_536


def _word_positions(terms: Sequence[str], position: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """``(first, second)`` of each term: its first word's position (-1 when ``position`` has
    none) and 1 + its second's (0 for one word; -1 for a second word it has not, or for three
    words or more).

    Every word of every term comes from one split, and each term's count of words from its
    spaces: a third of the time of splitting the terms one by one (50,000 terms of 500 papers).
    """
    if not len(terms):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    joined = "\n".join(terms)
    if joined.count("\n") != len(terms) - 1:  # a term holding a newline is none of these words
        joined = "\n".join(term.replace("\n", "\r") for term in terms)
    text = np.frombuffer(joined.encode("utf-8"), dtype=np.uint8)
    spaces = np.concatenate([[0], np.cumsum(text == ord(" "))])
    ends = np.append(np.flatnonzero(text == ord("\n")), len(text))
    starts = np.concatenate([[0], ends[:-1] + 1])
    n_words = 1 + spaces[ends] - spaces[starts]
    words = joined.replace("\n", " ").split(" ")
    ids = np.fromiter(map(position.get, words, repeat(-1)), dtype=np.int64, count=len(words))
    head = np.concatenate([[0], np.cumsum(n_words)[:-1]])
    following = ids[np.minimum(head + 1, len(ids) - 1)]
    second = np.where(n_words == 2, np.where(following >= 0, following + 1, -1), 0)
    second[n_words > 2] = -1
    return ids[head], second
