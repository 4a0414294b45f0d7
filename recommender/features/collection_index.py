"""A collection's fitted representations, built once and scored against any library.

:class:`CollectionIndexBuilder` fits, on the collection alone, everything a ranking needs from
it: the word and character vocabularies with their IDF, the papers' TF-IDF rows, BM25 weights
(made when a model first reads them), the LSA topic space, the authors and (with an embedder)
the embeddings. A library is then only *transformed* with those vectorisers
(:meth:`CollectionIndex.representations`), so ranking 500 papers against 3,000 tokenises 500
texts, not 3,500. ``litrank rank`` builds this index in memory for every run; ``litrank index``
stores it (``connectors.files.litrank_index``) for reuse.

Collection-wide state (fitted once): vocabularies, IDF, collection rows of every
representation, LSA components, BM25 document weights, author incidence, embeddings.
Per-library work: tokenising and embedding the library, the (collection + library) × library
similarity blocks, feedback and fusion (see :mod:`recommender.models.hybrid`). What the numbers are
made of (vectorisers, IDF, BM25, authors, LSA, the feature layout) is :mod:`recommender.features.index_features`.

Length: the index's fields, what is derived from them on construction, their file parts and a
library's representations against them are one structure, read together.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain
from typing import Mapping, Sequence

import numpy as np
from scipy import sparse

from recommender.estimator import Estimator
from recommender.features.compact_counts import compact_counts, decode_counts, encode_counts, has_counts
from recommender.features.index_features import (
    CountedTfidf,
    TopicRows,
    author_incidence,
    basis_from_components,
    bm25_parameters,
    bm25_weights,
    components_from_basis,
    count_titles,
    count_words,
    embedder_id,
    feature_layout,
    fit_lsa,
    lsa_fits,
    lsa_rows,
    smooth_idf,
    start_char_job,
    tfidf_norms,
    tfidf_rows,
    title_analyzer,
    widen_columns,
)
from recommender.features.library_weighting import LibraryWeighting, count_library_terms
from recommender.features.representations import Representations
from recommender.features.sparse_products import StackedDense, StackedRows, head_product
from recommender.features.term_list import TermList
from recommender.features.word_counts import count_in_vocabulary
from recommender.paper import IDENTITY_RULE, Paper
from recommender.runtime import release_free_memory


class _LazyBlocks(dict):
    """``Representations.blocks`` computed on first use: each model reads only some of them."""

    def __init__(self, compute):
        super().__init__()
        self._compute = compute

    def __missing__(self, name):
        value = self._compute(name)
        self[name] = value
        return value


# From this many papers an index makes its character rows from their counts as they are taken.
COUNTED_CHAR_ROWS_MIN_PAPERS = 10_000


def _narrowest(values: np.ndarray) -> np.ndarray:
    """Whole numbers in the narrowest unsigned type that holds them (int32 when any is negative):
    a term list's positions in one or two bytes each, not four, are a third of the bytes to inflate."""
    if len(values) == 0 or values.min() < 0:
        return values.astype(np.int32)
    largest = values.max()
    return values.astype(next(dtype for dtype in (np.uint8, np.uint16, np.uint32) if largest <= np.iinfo(dtype).max))


def _stored_term_list(words: str, arrays: Mapping[str, np.ndarray]) -> TermList:
    """The word vocabulary of a format-5 file: its distinct words (one string) and each term's
    positions among them (its first words' as gaps)."""
    try:
        first_gaps, second = arrays["word_terms.first_gaps"], arrays["word_terms.second"]
        if first_gaps.dtype.kind not in "iu":
            raise ValueError("its first words are not integers")
        return TermList(words.split("\n") if words else [], np.cumsum(first_gaps, dtype=np.int64), second)
    except (KeyError, ValueError) as exc:
        raise ValueError(f"the index is inconsistent: its word vocabulary is damaged ({exc})") from None


@dataclass
class CollectionIndex(LibraryWeighting):
    """The fitted representations of one collection (see the module docstring).

    Build with :class:`CollectionIndexBuilder`; store and read with ``connectors.files.litrank_index``.
    Row ``i`` of every matrix is ``papers[i]``.
    """

    papers: list[Paper]
    word_terms: list[str] | TermList  # a TermList when counted or read from format 5: see term_list
    word_idf: np.ndarray
    word_counts: sparse.csr_matrix
    char_terms: list[str] | None = None
    char_idf: np.ndarray | None = None
    char_counts: sparse.csr_matrix | None = None
    title_terms: list[str] | None = None
    title_idf: np.ndarray | None = None
    title_counts: sparse.csr_matrix | None = None
    lsa_basis: np.ndarray | None = None  # (n_papers, k) LSA basis: see index_features.fit_lsa
    # Topics to fit on first use when there is no basis yet (0: none); seed of that fit.
    lsa_dimensions: int = 0
    lsa_random_state: int = 0
    author_names: list[str] = field(default_factory=list)
    author_rows: sparse.csr_matrix | None = None
    embeddings: np.ndarray | None = None
    embedder_id: str | None = None
    layout: str = field(default_factory=feature_layout)
    # Derived on construction, never stored: they follow from the fields above.
    word_rows: sparse.csr_matrix = field(init=False, repr=False)
    char_tfidf: CountedTfidf | sparse.csr_matrix | None = field(init=False, repr=False, default=None)
    title_rows: sparse.csr_matrix | None = field(init=False, repr=False, default=None)

    def __post_init__(self):
        if self.layout != feature_layout():
            raise ValueError("this index was built by a litrank with another feature layout; rebuild it with "
                             "`litrank index`")
        n = len(self.papers)
        for name in ("word_counts", "char_counts", "title_counts", "author_rows", "embeddings", "lsa_basis"):
            value = getattr(self, name)
            if value is not None and value.shape[0] != n:
                raise ValueError(f"the index is inconsistent: {name} has {value.shape[0]} rows for {n} papers")
        for name in ("word_counts", "char_counts", "title_counts"):  # 8 or 16 bits: 64 MB less at 30,000 papers
            setattr(self, name, None if getattr(self, name) is None else compact_counts(getattr(self, name)))
        # The rows share their counts' column indices and row pointers (nothing changes either
        # in place): 8 bytes an entry fewer, 74 MB for 30,000 abstracts.
        self.word_rows = tfidf_rows(self.word_counts, self.word_idf, share_structure=True)
        if self.char_counts is not None:
            # A large collection's character rows are made from the counts a batch at a time as
            # taken (72 MB less at 30,000 papers); a small one's are held (0.03 s less a ranking).
            if n >= COUNTED_CHAR_ROWS_MIN_PAPERS:
                norms = tfidf_norms(self.char_counts, self.char_idf)
                self.char_tfidf = CountedTfidf(self.char_counts, self.char_idf, norms)
            else:
                self.char_tfidf = tfidf_rows(self.char_counts, self.char_idf, share_structure=True)
        if self.title_counts is not None:
            self.title_rows = tfidf_rows(self.title_counts, self.title_idf, share_structure=True)
        if self.author_rows is None:
            self.author_rows = sparse.csr_matrix((n, len(self.author_names)), dtype=np.float32)
        self._cached: dict = {}  # derived once per index: identity keys, topic rows, BM25
        self._document_frequencies: dict = {}

    _MATRICES = ("word_counts", "char_counts", "title_counts", "author_rows")
    _ARRAYS = ("word_idf", "char_idf", "title_idf", "lsa_basis", "embeddings")
    _LISTS = ("word_terms", "char_terms", "title_terms", "author_names")
    _IDF_OF_COUNTS = (("word_idf", "word_counts"), ("char_idf", "char_counts"), ("title_idf", "title_counts"))

    def to_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """``(metadata, arrays)``: JSON-able metadata (vocabularies, layout, embedder) and plain
        numeric arrays (sparse matrices as ``NAME.data/.indices/.indptr/.shape``), for a file."""
        metadata = {"layout": self.layout, "embedder_id": self.embedder_id, "n_papers": self.n_papers}
        metadata.update((name, getattr(self, name)) for name in self._LISTS)
        terms = self.word_terms.compacted() if isinstance(self.word_terms, TermList) else \
            TermList.from_terms(self.word_terms)
        if terms is not None:  # the distinct words once, each term as positions among them (format 5)
            del metadata["word_terms"]
            metadata["word_words"] = "\n".join(terms.words)
            word_terms_arrays = {"word_terms.first_gaps": _narrowest(np.diff(terms.first, prepend=0)),
                                 "word_terms.second": _narrowest(terms.second)}
        elif not any("\n" in term for term in self.word_terms):  # one string: read many times faster than a list
            metadata["word_terms"] = "\n".join(self.word_terms)
        # Made once here: finding the papers a library already holds needs them on every ranking.
        metadata["identity_keys"] = {"rule": IDENTITY_RULE, "keys": self.identity_keys()}
        if self.lsa_basis is None and "lsa_components" in self._cached:  # read from a format-1 file
            self.lsa_basis = basis_from_components(self.word_rows, self._cached["lsa_components"])
        elif self.has_topics:  # fitted now, once, rather than by every run that reads the file
            self.lsa_basis = self.topic_basis()
        arrays = {name: np.asarray(getattr(self, name)) for name in self._ARRAYS if getattr(self, name) is not None}
        if terms is not None:
            arrays.update(word_terms_arrays)
        for name in self._MATRICES:
            matrix = getattr(self, name)
            if matrix is not None:
                arrays.update(encode_counts(name, matrix))
        for idf, counts in self._IDF_OF_COUNTS:
            # An IDF is the smooth IDF of its counts, made again when read (4 bytes a term fewer).
            if idf in arrays and np.array_equal(arrays[idf], smooth_idf(getattr(self, counts))):
                del arrays[idf]
        return metadata, arrays

    @classmethod
    def from_parts(cls, metadata: Mapping, arrays: Mapping[str, np.ndarray], papers: list[Paper]) -> "CollectionIndex":
        """The inverse of :meth:`to_parts`; ValueError when the parts do not make an index of this
        litrank's feature layout."""
        if metadata.get("layout") != feature_layout():
            raise ValueError("the index was built by a litrank with another feature layout (other tokenisation or "
                             "settings); rebuild it with `litrank index`")
        if metadata.get("n_papers") != len(papers):
            raise ValueError(f"the index is inconsistent: {metadata.get('n_papers')} papers announced, "
                             f"{len(papers)} stored")
        fields = {name: metadata.get(name) for name in cls._LISTS}
        if isinstance(fields["word_terms"], str):
            fields["word_terms"] = fields["word_terms"].split("\n") if fields["word_terms"] else []
        elif isinstance(metadata.get("word_words"), str) and fields["word_terms"] is None:  # format 5
            fields["word_terms"] = _stored_term_list(metadata["word_words"], arrays)
        fields.update((name, arrays[name]) for name in cls._ARRAYS if name in arrays)
        for name in cls._MATRICES:
            if has_counts(name, arrays):
                try:
                    fields[name] = decode_counts(name, arrays)
                except ValueError as exc:
                    raise ValueError(f"the index is inconsistent: {exc}") from None
            elif f"{name}.data" in arrays:  # formats 1 and 2
                try:
                    fields[name] = sparse.csr_matrix(
                        (arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"]),
                        shape=tuple(int(v) for v in arrays[f"{name}.shape"]))
                    fields[name].check_format(full_check=True)
                except (KeyError, TypeError, ValueError) as exc:
                    raise ValueError(f"the index is inconsistent: matrix {name} is damaged ({exc})") from None
        for idf, counts in cls._IDF_OF_COUNTS:
            if idf not in fields and fields.get(counts) is not None:
                fields[idf] = smooth_idf(fields[counts])
        if not isinstance(fields["word_terms"], (list, TermList)) or "word_counts" not in fields \
                or "word_idf" not in fields:
            raise ValueError("the index is inconsistent: it holds no word vocabulary")
        for terms, matrix, idf in (("word_terms", "word_counts", "word_idf"), ("char_terms", "char_counts", "char_idf"),
                                   ("title_terms", "title_counts", "title_idf")):
            if fields.get(matrix) is not None and not (
                    len(fields[terms] or ()) == fields[matrix].shape[1] == len(fields.get(idf, ()))):
                raise ValueError(f"the index is inconsistent: {terms} does not match {matrix}")
        index = cls(papers=list(papers), embedder_id=metadata.get("embedder_id"), layout=metadata["layout"],
                    author_names=fields.pop("author_names") or [], **fields)
        if "lsa_components" in arrays and "lsa_basis" not in arrays:
            components = np.asarray(arrays["lsa_components"], dtype=np.float32)
            if components.ndim != 2 or components.shape[1] != index.word_rows.shape[1]:
                raise ValueError("the index is inconsistent: its LSA components do not match its word vocabulary")
            index._cached["lsa_components"] = components  # its basis is made only to write it again
        stored = metadata.get("identity_keys")
        if isinstance(stored, dict) and stored.get("rule") == IDENTITY_RULE:
            keys = stored.get("keys")
            # Types gathered by map, in C: a sixth of the time of a check a key (3,000 papers: 3 ms).
            if not (isinstance(keys, list) and len(keys) == len(papers) and set(map(type, keys)) <= {list}
                    and set(map(type, chain.from_iterable(keys))) <= {str}):
                raise ValueError("the index is inconsistent: its identity keys do not match its papers")
            index._cached["identity_keys"] = keys
        return index

    @property
    def char_rows(self) -> sparse.csr_matrix | None:
        """Every character TF-IDF row (of a large collection made anew on each call: ranking takes
        rows from :attr:`char_tfidf`)."""
        return self.char_tfidf.rows() if isinstance(self.char_tfidf, CountedTfidf) else self.char_tfidf

    @property
    def n_papers(self) -> int:
        return len(self.papers)

    # BM25 is made on first use: only the whole-library profile (off by default) and the learned
    # model read it. Made for every index, it took 0.1 s and 25 MB of a 30,000-paper ranking.
    @property
    def unigram_columns(self) -> np.ndarray:
        """The word columns that are single words (BM25's terms), ascending."""
        if "unigram_columns" not in self._cached:
            terms = self.word_terms
            self._cached["unigram_columns"] = terms.unigram_columns() if isinstance(terms, TermList) else \
                np.flatnonzero([" " not in term for term in terms])
        return self._cached["unigram_columns"]

    def _bm25(self) -> tuple[np.ndarray, float, sparse.csr_matrix, sparse.csr_matrix]:
        """``(idf, average_length, weights, unigram_counts)``, made once."""
        if "bm25" not in self._cached:
            unigrams = self.word_counts[:, self.unigram_columns]
            idf, average_length = bm25_parameters(unigrams)
            self._cached["bm25"] = idf, average_length, bm25_weights(unigrams, idf, average_length), unigrams
        return self._cached["bm25"]

    @property
    def bm25_idf(self) -> np.ndarray:
        """BM25 IDF of each unigram column."""
        return self._bm25()[0]

    @property
    def bm25_average_length(self) -> float:
        """The papers' mean length in unigrams, for BM25's length normalisation."""
        return self._bm25()[1]

    @property
    def bm25_rows(self) -> sparse.csr_matrix:
        """BM25 document weights of every paper, shape (n_papers, n_unigrams)."""
        return self._bm25()[2]

    @property
    def has_topics(self) -> bool:
        """Whether the index has (or will fit on first use) an LSA topic space."""
        if self.lsa_basis is not None or "lsa_components" in self._cached:
            return True
        return lsa_fits(*self.word_counts.shape, self.lsa_dimensions)

    def topic_basis(self) -> np.ndarray | None:
        """The LSA basis (:func:`~recommender.features.index_features.fit_lsa`), fitted on first use:
        only the diversity re-ordering, the report's map and the learned model read topics,
        and the fit was most of the time indexing 3,000 papers took (1.3 of 1.6 s)."""
        if self.lsa_basis is None and self.has_topics:
            self.lsa_basis = fit_lsa(self.word_rows, self.lsa_dimensions, self.lsa_random_state)
        return self.lsa_basis

    @property
    def lsa_components(self) -> np.ndarray | None:
        """The LSA components, shape ``(k, n_word_terms)``: made from the basis on first use, or
        as a format-1 file stored them."""
        if "lsa_components" not in self._cached:
            basis = self.topic_basis()
            if basis is None:
                return None
            self._cached["lsa_components"] = components_from_basis(self.word_rows, basis)
        return self._cached["lsa_components"]

    def _lsa(self, word_rows) -> np.ndarray:
        return lsa_rows(word_rows, self.lsa_components)

    @property
    def lsa_rows(self) -> np.ndarray | None:
        """Every paper's LSA topic row (made on first use: ranking reads only a few, see
        :class:`~recommender.features.index_features.TopicRows`), None without LSA components."""
        if self.lsa_components is None:
            return None
        if "lsa_rows" not in self._cached:
            self._cached["lsa_rows"] = self._lsa(self.word_rows)
        return self._cached["lsa_rows"]

    def document_frequencies(self, name: str) -> np.ndarray:
        """Papers of the collection holding each term of representation ``name`` ("word", "char")."""
        if name not in self._document_frequencies:
            counts = self.word_counts if name == "word" else self.char_counts
            self._document_frequencies[name] = np.bincount(counts.indices, minlength=counts.shape[1])
        return self._document_frequencies[name]

    def identity_keys(self) -> list[list[str]]:
        """Each paper's :meth:`~recommender.paper.Paper.identity_keys` (made once: every ranking
        against the index looks its papers up in the library)."""
        if "identity_keys" not in self._cached:
            self._cached["identity_keys"] = [paper.identity_keys() for paper in self.papers]
        return self._cached["identity_keys"]

    def check_embedder(self, embedder) -> None:
        """Raise ValueError when scoring with ``embedder`` cannot use this index's embeddings."""
        wanted = embedder_id(embedder)
        if wanted is None or wanted == self.embedder_id:
            return
        if self.embedder_id is None:
            raise ValueError(f"the index holds no embeddings but embedder {wanted} was asked for; rebuild it "
                             f"with `litrank index --embedder ...` or rank with --embedder none")
        raise ValueError(f"the index was built with embedder {self.embedder_id}, not {wanted}; rank with the "
                         "same embedder (or --embedder none), or rebuild the index")

    def representations(self, library: Sequence[Paper], embedder=None) -> Representations:
        """:class:`Representations` of ``library`` (rows ``0..n-1``) then every collection paper
        (row ``n + i`` is ``papers[i]``), the library transformed with the collection's vectorisers.

        ``embedder`` (checked by :meth:`check_embedder`) embeds the library; None leaves the
        dense representation out.
        """
        self.check_embedder(embedder)
        library = list(library)
        n_library = len(library)
        texts = [paper.text for paper in library]
        rep = Representations(n_library=n_library)
        library_word, rep.word_vectorizer, word_counts = self.library_tfidf("word", texts)
        # Stacked as rows are taken, not copied: the collection's rows stay the index's own.
        rep.vectors["word"] = StackedRows(library_word, widen_columns(self.word_rows, library_word.shape[1]))
        library_char = None
        if self.char_tfidf is not None:
            library_char = self.library_rows("char", texts)
            rep.vectors["char"] = StackedRows(library_char, widen_columns(self.char_tfidf, library_char.shape[1]))
        for name, library_rows in (("word", library_word), ("char", library_char)):
            if library_rows is not None:  # the products' column shares, without counting the collection again
                counts = np.bincount(library_rows.indices, minlength=library_rows.shape[1])
                counts[: len(self.document_frequencies(name))] += self.document_frequencies(name)
                rep.column_counts[name] = counts
        library_word = library_word[:, : len(self.word_terms)]
        if self.has_topics:
            rep.vectors["lsa"] = TopicRows(library_word, self.word_rows, lambda: self.lsa_components)
        if self.title_rows is not None:
            titles = ["" if paper.title_derived else paper.title for paper in library]
            # No collection paper holds a term below that document frequency: the index's terms only.
            counts, _ = count_in_vocabulary(titles, title_analyzer(), self._vocabulary("title"), len(titles) + 1)
            library_title = tfidf_rows(counts, self.title_idf)
            rep.vectors["title"] = sparse.vstack([library_title, self.title_rows], format="csr")
        if embedder is not None:
            library_dense = np.asarray(embedder.embed(texts), dtype=np.float32).reshape(n_library, -1)
            rep.vectors["embedding"] = StackedDense(library_dense, self.embeddings)
            rep.embedder_id = self.embedder_id

        def bm25():
            library_unigrams = word_counts[:, self.unigram_columns]
            # Stacked, not copied (30,000 abstracts: 40 MB): read a few rows at a time, or multiplied.
            return (StackedRows(library_unigrams, self._bm25()[3]),  # the collection's counts, sliced once
                    StackedRows(bm25_weights(library_unigrams, self.bm25_idf, self.bm25_average_length),
                                self.bm25_rows))

        rep.bm25_source = bm25
        vocabulary = {name: column for column, name in enumerate(self.author_names)}
        library_authors = author_incidence(library, vocabulary, grow=True)
        collection_authors = sparse.csr_matrix((self.author_rows.data, self.author_rows.indices,
                                                self.author_rows.indptr), shape=(self.n_papers, len(vocabulary)))
        rep.has_authors = bool(vocabulary)
        authors = rep.author_rows = sparse.vstack([library_authors, collection_authors], format="csr")

        def block(name: str) -> np.ndarray:
            if name == "authors":
                return (authors @ authors[:n_library].T).toarray()
            if name == "bm25":
                term_counts, weights = rep.bm25()
                queries = term_counts[:n_library].copy()
                queries.data[:] = 1.0
                scores = (weights @ queries.T).toarray()
                best = scores.max(axis=0)
                best[best == 0] = 1.0
                return scores / best
            rows = rep.vectors[name]
            if isinstance(rows, TopicRows):  # the learned model's topic block reads them all
                rows = rows[:]
            return head_product(rows, n_library, row_counts=rep.column_counts.get(name))

        rep.blocks = _LazyBlocks(block)
        return rep


class CollectionIndexBuilder(Estimator):
    """Fits a :class:`CollectionIndex` on a collection's papers.

    Parameters
    ----------
    use_char : bool, default=True
        Character 4-gram TF-IDF (robust to morphology, acronyms and LaTeX leftovers).
    lsa_components : int, default=64
        Dimensions of the LSA (TruncatedSVD) topic space (diversity, the report's map); 0: none.
    embedder : object with ``embed(texts) -> ndarray`` and ``model_id``, optional
        Dense sentence embeddings of the collection.
    random_state : int, default=0

    Attributes
    ----------
    index_ : CollectionIndex
    """

    def __init__(self, use_char: bool = True, lsa_components: int = 64, embedder=None, random_state: int = 0):
        self.use_char = use_char
        self.lsa_components = lsa_components
        self.embedder = embedder
        self.random_state = random_state

    def fit(self, papers: Sequence[Paper], y=None, library: Sequence[Paper] | None = None) -> "CollectionIndexBuilder":
        """Index ``papers``.

        ``library``: papers about to be ranked against the index (not indexed). Their terms
        are counted while the collection's character n-grams are counted in the second
        process, which this one would otherwise wait for, and the index keeps the counts for
        their first :meth:`~CollectionIndex.representations` (the same numbers as counted then).
        """
        papers = list(papers)
        if not papers:
            raise ValueError("the collection has no papers to index")
        texts = [paper.text for paper in papers]
        char_result = start_char_job(texts) if self.use_char else None
        # An embedder that may run in another thread (the static table: its tokenizer releases
        # the GIL) embeds the collection while the words are counted here; started after the
        # character job's fork, which its tokenizer's threads must not precede.
        embedding = None
        if self.embedder is not None and getattr(self.embedder, "thread_safe", False):
            embedding = ThreadPoolExecutor(max_workers=1)
            embedded = embedding.submit(self.embedder.embed, texts)
            embedding.shutdown(wait=False)
        try:
            word_counts, word_terms = count_words(texts, n_papers=len(texts), term_list=True)
        except ValueError as exc:
            raise ValueError(f"cannot build a vocabulary from the collection's texts ({exc})") from None
        word_idf = smooth_idf(word_counts)
        parts: dict = {}
        # Titles and authors before the character counts are waited for: counting them takes
        # longer than the words (30,000 papers: 3.3 s against 2.4 s), and meanwhile this process
        # would only wait.
        titles = ["" if paper.title_derived else paper.title for paper in papers]
        if any(titles):
            try:
                title_counts, title_terms = count_titles(titles)
                parts.update(title_counts=title_counts, title_terms=title_terms, title_idf=smooth_idf(title_counts))
            except ValueError:  # titles made only of stop words
                pass
        parts.update(lsa_dimensions=self.lsa_components, lsa_random_state=self.random_state)  # fitted when used
        vocabulary: dict[str, int] = {}
        parts["author_rows"] = author_incidence(papers, vocabulary, grow=True)
        parts["author_names"] = list(vocabulary)
        counted_library = None
        if library is not None and char_result is not None:
            library_texts = [paper.text for paper in library]
            counted_library = (library_texts, {name: count_library_terms(name, library_texts)
                                               for name in ("word", "char")})
        if char_result is not None:
            char_counts, char_terms = char_result()
            parts.update(char_counts=char_counts, char_terms=char_terms, char_idf=smooth_idf(char_counts))
        if self.embedder is not None:
            vectors = embedded.result() if embedding is not None else self.embedder.embed(texts)
            parts["embeddings"] = np.asarray(vectors, dtype=np.float32).reshape(len(papers), -1)
            parts["embedder_id"] = embedder_id(self.embedder)
        self.index_ = CollectionIndex(papers=papers, word_terms=word_terms, word_idf=word_idf,
                                      word_counts=word_counts, **parts)
        if counted_library is not None:
            self.index_.keep_library_counts(*counted_library)
        release_free_memory()  # what counting and embedding freed, before the scoring needs it
        return self

    def build(self, papers: Sequence[Paper], library: Sequence[Paper] | None = None) -> CollectionIndex:
        """``fit(papers, library=library).index_``."""
        return self.fit(papers, library=library).index_
