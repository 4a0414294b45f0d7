"""How a library is weighted against a collection's vocabulary (its own IDF over library ∪
collection, its own terms as extra columns): one definition for the one-process
:class:`~recommender.features.collection_index.CollectionIndex` and the partitioned index's vocabulary
(:class:`~recommender.scale.partitioned_index.IndexVocabulary`)."""
from __future__ import annotations

from itertools import repeat

import numpy as np
from scipy import sparse

from recommender.features.char_grams import count_char_grams
from recommender.features.index_features import (
    ColumnNames,
    count_words,
    document_frequency_limits,
    fold_accents,
    idf_of,
    tfidf_rows,
)
from recommender.features.term_list import TermList


def count_library_terms(name: str, texts: list[str]) -> tuple[sparse.csr_matrix, np.ndarray | list[str]]:
    """A library's raw counts of representation ``name`` ("word" or "char") and their terms,
    before they are mapped onto an index's columns: the character n-grams (an ndarray) or the
    word terms (a list) of ``texts``, every term kept."""
    if name == "char":
        return count_char_grams(texts, fold_accents)
    try:
        return count_words(texts, n_papers=1)  # one paper's limits: every term
    except ValueError:  # no text holds a term
        return sparse.csr_matrix((len(texts), 0), dtype=np.float32), []


class LibraryWeighting:
    """A library's TF-IDF rows against a collection's vocabulary (see the module docstring).

    The subclass provides ``n_papers``, ``word_terms``, ``char_terms`` (``title_terms`` for
    titles), ``unigram_columns`` and :meth:`document_frequencies`.
    """

    def document_frequencies(self, name: str) -> np.ndarray:
        """Papers of the collection holding each term of representation ``name`` ("word", "char")."""
        raise NotImplementedError

    def _vocabulary(self, name: str) -> dict[str, int]:
        """Term -> column of the index's ``word`` or ``title`` vocabulary (made once)."""
        vocabularies = vars(self).setdefault("_vocabularies", {})
        if name not in vocabularies:
            terms = self.word_terms if name == "word" else self.title_terms
            vocabularies[name] = dict(zip(terms, range(len(terms))))
        return vocabularies[name]

    def _library_counts(self, name: str, texts: list[str]) -> tuple[sparse.csr_matrix, list[str]]:
        """The library's term counts: the index's columns, then the library's own terms (those
        no collection paper holds, kept as the index's ``min_df`` would keep them) after them.

        A library paper's own terms are part of what it is about: they take their share of its
        vector's length, as they did when the vocabulary was fitted on library ∪ collection.
        """
        min_df = document_frequency_limits(name, self.n_papers)[0]
        counted = vars(self).get("_counted_library", {})
        if counted.get("texts") == texts and name in counted:
            counts, terms = counted.pop(name)  # counted while the index was built (used once)
        else:
            counts, terms = count_library_terms(name, texts)
        if name == "char":
            columns, n_terms = self._char_columns(terms), len(self.char_terms)
        else:
            columns, n_terms = self._word_columns(terms), len(self.word_terms)
            terms = np.asarray(terms, dtype=object)
        extra = (columns < 0) & (np.bincount(counts.indices, minlength=len(terms)) >= min_df)
        columns[extra] = n_terms + np.arange(int(extra.sum()))
        kept = counts[:, columns >= 0]
        kept = sparse.csr_matrix((kept.data, columns[columns >= 0][kept.indices], kept.indptr),
                                 shape=(len(texts), n_terms + int(extra.sum())))
        kept.sort_indices()
        return kept, terms[extra].tolist()

    def keep_library_counts(self, texts: list[str], counted: dict) -> None:
        """Keep a library's raw counts (``{"word": ..., "char": ...}``, each what
        :func:`count_library_terms` gives) made before the index existed, for the first
        :meth:`library_tfidf` of the same ``texts`` (each used once, then let go)."""
        self._counted_library = {"texts": texts, **counted}

    def _word_columns(self, words: list[str]) -> np.ndarray:
        """The index's column of each of a library's word terms, -1 for those it does not hold.

        An index's own vocabulary (a :class:`~recommender.features.term_list.TermList`) finds
        them by their words' positions. In a vocabulary of strings (the partitioned index's, or
        one read from a file of format 1-4) the first library is looked up the other way round,
        the index's terms among its own: a dict of a library's terms (50,000 for 500 papers) is
        made faster than one of the index's 250,000 (a 500-paper library against a 3,000-paper
        index: about 30 ms, not 60).
        A process that ranks more libraries against the index (``litrank affinity``) makes
        that dict once and looks each library's terms up in it (12 ms for 500 papers)."""
        if isinstance(self.word_terms, TermList):
            return self.word_terms.columns(words)
        lookups = vars(self).get("_word_lookups", 0)
        self._word_lookups = lookups + 1
        if lookups > 0:
            vocabulary = self._vocabulary("word")
            return np.fromiter((vocabulary.get(word, -1) for word in words), dtype=np.int64, count=len(words))
        position = dict(zip(words, range(len(words))))
        found = np.fromiter(map(position.get, self.word_terms, repeat(-1, len(self.word_terms))), dtype=np.int64,
                            count=len(self.word_terms))
        columns = np.full(len(words), -1, dtype=np.int64)
        in_library = np.flatnonzero(found >= 0)
        columns[found[in_library]] = in_library
        return columns

    def _char_columns(self, grams: np.ndarray) -> np.ndarray:
        """The index's column of each character n-gram, -1 for those it does not hold."""
        cached = vars(self).setdefault("_char_order", {})
        if grams.dtype not in cached:
            terms = np.asarray(self.char_terms, dtype=grams.dtype)
            order = np.argsort(terms)
            cached[grams.dtype] = (terms[order], order)
        terms, order = cached[grams.dtype]
        if len(terms) == 0:
            return np.full(len(grams), -1, dtype=np.int64)
        position = np.minimum(np.searchsorted(terms, grams), len(terms) - 1)
        return np.where(terms[position] == grams, order[position], -1).astype(np.int64)

    def library_idf(self, name: str, library_counts: sparse.csr_matrix) -> np.ndarray:
        """Smooth IDF of each column of ``library_counts`` (from :meth:`_library_counts`) over the
        library's and the collection's papers together: the library's papers are documents too."""
        collection = self.document_frequencies(name)
        frequency = np.bincount(library_counts.indices, minlength=library_counts.shape[1])
        frequency[: len(collection)] += collection
        return idf_of(frequency, self.n_papers + library_counts.shape[0])

    def library_rows(self, name: str, texts: list[str]) -> sparse.csr_matrix:
        """TF-IDF rows ("word" or "char") of a library's texts: the index's columns weighted by
        :meth:`library_idf`, then the library's own terms (see :meth:`_library_counts`)."""
        return self.library_tfidf(name, texts)[0]

    def library_tfidf(self, name: str, texts: list[str]) -> tuple[sparse.csr_matrix, ColumnNames, sparse.csr_matrix]:
        """``(rows, names, known_counts)``: :meth:`library_rows`, the names of their columns (the
        index's terms, then the library's own) and the library's counts of the index's terms."""
        counts, own_terms = self._library_counts(name, texts)
        known = self.word_terms if name == "word" else self.char_terms
        return (tfidf_rows(counts, self.library_idf(name, counts)), ColumnNames(known, own_terms),
                counts[:, : len(known)])
