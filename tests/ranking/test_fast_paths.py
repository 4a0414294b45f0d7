"""The one-user path's faster computations give the numbers of the plain ones they replace."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, strip_accents_unicode

import connectors
from recommender.features.char_grams import count_char_grams
from recommender.features.collection_index import CollectionIndexBuilder
from recommender.features.index_features import CountedTfidf, document_frequency_limits, tfidf_norms, tfidf_rows
from recommender.features.sparse_products import SideBySide, _split, dense_product, head_product
from recommender.features.term_list import TermList
from recommender.features.word_grams import count_word_grams
from recommender.models.aggregation import column_top_k, standardize_columns, top_mean
from recommender.models.hybrid import HybridModel
from recommender.text import STOP_WORDS, strip_accents
from tests.conftest import CONFERENCES, DATA, EXAMPLE_LIBRARY, require

# What a library's texts hold besides plain words: one-letter words, runs of mixed whitespace,
# accents (composed and combining), non-breaking spaces, characters beyond 16 bits, nothing.
AWKWARD_TEXTS = ["", "a", "a b  c", "x  y\t\tz\n", "Ünïcödé naïve café — 𝒪(n) bound ∀x ∈ ℝ", "I a",
                 "  ", "ab", "abc d ef", "\u00a0nbsp\u00a0here \x1cfs", "ÀB a\u0301 ﬁne Ⅻ", "𝑥 𝑦"]


def _texts() -> list[str]:
    papers = connectors.load(EXAMPLE_LIBRARY) + connectors.load(DATA / "report-collection.jsonl") \
        + connectors.load(DATA / "hard-cases.bib")
    return [paper.text for paper in papers] + AWKWARD_TEXTS


def test_character_grams_are_those_of_scikit_learns_char_wb_analyzer():
    texts = _texts()
    counter = CountVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode", dtype=np.float32)
    expected = counter.fit_transform(texts)
    counts, grams = count_char_grams(texts, counter.build_preprocessor())
    assert grams.tolist() == counter.get_feature_names_out().tolist()
    assert counts.dtype == np.float32 and counts.shape == expected.shape and (counts != expected).nnz == 0
    assert any(len(gram) == 3 for gram in grams)  # one-letter words (" a ") are counted as themselves
    empty, none = count_char_grams(["", "  "], counter.build_preprocessor())
    assert empty.shape == (2, 0) and len(none) == 0


def test_accent_folding_is_scikit_learns():
    for text in _texts():
        assert strip_accents(text) == strip_accents_unicode(text)


def test_library_rows_equal_a_vectoriser_fitted_on_the_library():
    """The library's character counts, mapped onto the index's columns and its own terms."""
    papers = connectors.load(DATA / "report-collection.jsonl")
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    texts = [paper.text for paper in connectors.load(EXAMPLE_LIBRARY)] + AWKWARD_TEXTS
    counts, extra = index._library_counts("char", texts)
    counter = CountVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode", dtype=np.float32)
    reference = counter.fit_transform(texts)
    terms = counter.get_feature_names_out()
    column_of = {term: column for column, term in enumerate(index.char_terms + extra)}
    assert extra == sorted(set(terms) - set(index.char_terms)) and extra
    reference = reference.tocoo()
    rebuilt = sparse.csr_matrix((reference.data, (reference.row, [column_of[terms[c]] for c in reference.col])),
                                shape=counts.shape)
    assert (counts != rebuilt).nnz == 0


@pytest.mark.parametrize("share", [0.0, 0.005, 0.2, 2.0])  # everything dense ... nothing dense
@pytest.mark.parametrize("batch", [3, 4096])  # rows several batches at a time, or all in one
def test_dense_product_is_the_sparse_product(share, batch, monkeypatch):
    monkeypatch.setattr("recommender.features.sparse_products.ROW_BATCH", batch)
    papers = connectors.load(DATA / "report-collection.jsonl")
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    library = index.char_rows[:5].astype(np.float64)
    expected = (index.char_rows @ library.T).toarray()
    got = dense_product(index.char_rows, library, dense_column_share=share)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(dense_product(expected, expected), expected @ expected.T)  # dense inputs


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_are_shared_evenly_by_the_workers(workers, monkeypatch):
    from recommender.features import sparse_products

    monkeypatch.setattr(sparse_products, "WORKERS", workers)
    for n_rows in (1, 500, 1024, 1025, 3000, 3500, 30000):
        size = sparse_products.batch_size(n_rows)
        n_batches = -(-n_rows // size)
        assert size <= sparse_products.ROW_BATCH and n_batches >= -(-n_rows // sparse_products.ROW_BATCH)
        if n_rows > sparse_products.ROW_BATCH:  # several batches: every worker gets as many
            assert n_batches % workers == 0 and n_rows - (n_batches - 1) * size > size // 2
        else:
            assert n_batches == 1
    assert sparse_products.batch_size(3000) == (750 if workers == 2 else 1000)
    # Wide dense blocks (the feedback product's ~4,000 frequent float64 columns): batches of
    # about BLOCK_BYTES, still shared evenly; never below MIN_BATCH_ROWS rows.
    wide = sparse_products.batch_size(3000, row_bytes=4000 * 8)
    assert wide * 4000 * 8 <= sparse_products.BLOCK_BYTES and -(-3000 // wide) % workers == 0
    assert sparse_products.batch_size(3000, row_bytes=1 << 40) <= sparse_products.MIN_BATCH_ROWS
    assert sparse_products.batch_size(3000, row_bytes=8) == sparse_products.batch_size(3000)


def test_character_grams_of_real_abstracts_beside_the_vectoriser():
    """Hundreds of real abstracts (the shared conference lists), as a library would bring them."""
    papers = connectors.load(require(CONFERENCES / "icml2019.jsonl.gz"))[:400]
    texts = [paper.text for paper in papers]
    counter = CountVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode", dtype=np.float32)
    expected = counter.fit_transform(texts)
    counts, grams = count_char_grams(texts, counter.build_preprocessor())
    assert grams.tolist() == counter.get_feature_names_out().tolist() and (counts != expected).nnz == 0


def _many_characters(n_characters: int = 700) -> list[str]:
    """Texts of 700 distinct CJK characters (more than 9 bits rank), words of one to five."""
    return [" ".join("".join(chr(0x4E00 + (start + 7 * word + offset) % n_characters) for offset in range(1 + word % 5))
                     for word in range(40)) for start in range(0, n_characters, 13)]


def _some_characters() -> list[str]:
    """Texts of 300 distinct CJK characters: with ASCII, 9 bits rank them."""
    return _many_characters(300)


def _real_texts() -> list[str]:
    papers = connectors.load(require(CONFERENCES / "icml2019.jsonl.gz"))
    return [paper.text for paper in papers] + _texts()


@pytest.mark.parametrize("texts", [_real_texts, _some_characters, _many_characters])
def test_character_grams_of_a_collection_partition_beside_the_vectoriser(texts):
    """A conference's abstracts (as a partition of an index holds), or many distinct characters."""
    texts = texts()
    counter = CountVectorizer(analyzer="char_wb", ngram_range=(4, 4), strip_accents="unicode", dtype=np.float32)
    expected = counter.fit_transform(texts)
    counts, grams = count_char_grams(texts, counter.build_preprocessor())
    assert grams.tolist() == counter.get_feature_names_out().tolist() and (counts != expected).nnz == 0
    assert counts.has_sorted_indices


@pytest.mark.parametrize("texts", [_real_texts, _many_characters])
def test_word_grams_are_those_of_the_index_word_vectoriser(texts):
    """Word uni+bigrams without stop words, counted with numpy: the vectoriser's matrix and terms."""
    texts = texts() + ["the of and", "x_y __ 12 ab\u0301c ²³ a-b-c", "ab ab ab ab"]
    counter = CountVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, ngram_range=(1, 2), dtype=np.float32)
    expected = counter.fit_transform(texts)
    counts, terms = count_word_grams(texts, counter.build_preprocessor(), STOP_WORDS)
    assert terms == counter.get_feature_names_out().tolist()
    assert counts.dtype == np.float32 and counts.shape == expected.shape and (counts != expected).nnz == 0
    assert counts.has_sorted_indices and any(" " in term for term in terms)
    with pytest.raises(ValueError):  # as the vectoriser: nothing but stop words
        count_word_grams(["the of", ""], counter.build_preprocessor(), STOP_WORDS)


@pytest.mark.parametrize("extra, dtype", [("café naïve über straße", np.uint8),  # Latin-1: one byte each
                                          ("Ωμέγα κβαντικό 量子 계산", np.uint16),  # below 65,536: two
                                          ("𝒪 𝑥𝑦 bound 𝔼 ℝ", np.uint32)])  # beyond 16 bits: four
def test_word_grams_of_texts_in_each_code_point_width(extra, dtype):
    """The texts' code points are held in the narrowest type that takes them all, and the
    counts are the vectoriser's in each."""
    from recommender.features.word_grams import code_points

    texts = ["plain ascii words here", "more plain words", extra, extra + " again"]
    joined = " ".join(text.lower() for text in texts)
    points = code_points(joined)
    assert points.dtype == dtype and points.tolist() == [ord(character) for character in joined]
    counter = CountVectorizer(stop_words=STOP_WORDS, ngram_range=(1, 2), dtype=np.float32)
    expected = counter.fit_transform(texts)
    counts, terms = count_word_grams(texts, str.lower, STOP_WORDS)
    assert terms == counter.get_feature_names_out().tolist() and (counts != expected).nnz == 0
    # The texts and their code points are let go once the tokens are numbered; the counts stand.
    from recommender.features.word_grams import CodePoints, word_grams

    points = CodePoints(texts, str.lower)
    grams = word_grams(points, STOP_WORDS)
    assert points.joined == "" and len(points.codes) == 0 and len(points) == len(texts)
    assert grams.terms() == terms and (grams.counts != expected).nnz == 0


def test_word_grams_group_short_and_long_tokens_exactly():
    """Tokens up to a packed key's width are grouped by their packed characters, longer ones by
    their strings: anagrams, prefixes, and words of every length either side of the width."""
    lengths = range(2, 22)  # (the width is 64 // bits: 5 bits here, so 12 characters)
    words = ["".join(chr(ord("a") + (start + offset) % 20) for offset in range(length))
             for start in range(3) for length in lengths]
    texts = [" ".join(words[i::4]) for i in range(4)] + ["listen silent enlist tinsel", "silent listen",
                                                         " ".join(reversed(words))]
    counter = CountVectorizer(stop_words=STOP_WORDS, ngram_range=(1, 2), dtype=np.float32)
    expected = counter.fit_transform(texts)
    counts, terms = count_word_grams(texts, str.lower, STOP_WORDS)
    assert terms == counter.get_feature_names_out().tolist() and (counts != expected).nnz == 0
    # The texts and their code points are let go once the tokens are numbered; the counts stand.
    from recommender.features.word_grams import CodePoints, word_grams

    points = CodePoints(texts, str.lower)
    grams = word_grams(points, STOP_WORDS)
    assert points.joined == "" and len(points.codes) == 0 and len(points) == len(texts)
    assert grams.terms() == terms and (grams.counts != expected).nnz == 0


def test_library_word_counts_equal_a_vectoriser_fitted_on_the_library():
    """The library's word counts, in the index's columns, then its own terms (sorted) after them."""
    papers = connectors.load(DATA / "report-collection.jsonl")
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    texts = [paper.text for paper in connectors.load(EXAMPLE_LIBRARY)] + AWKWARD_TEXTS
    counts, extra = index._library_counts("word", texts)
    counter = CountVectorizer(strip_accents="unicode", stop_words=STOP_WORDS, ngram_range=(1, 2), dtype=np.float32)
    reference = counter.fit_transform(texts)
    terms = counter.get_feature_names_out()
    min_df = document_frequency_limits("word", index.n_papers)[0]
    frequency = dict(zip(terms, np.bincount(reference.indices, minlength=len(terms))))
    assert extra == sorted(t for t in set(terms) - set(index.word_terms) if frequency[t] >= min_df) and extra
    column_of = {term: column for column, term in enumerate(index.word_terms + extra)}
    reference = reference.tocoo()
    kept = np.array([terms[c] in column_of for c in reference.col], dtype=bool)
    rebuilt = sparse.csr_matrix((reference.data[kept], (reference.row[kept],
                                                        [column_of[terms[c]] for c in reference.col[kept]])),
                                shape=counts.shape)
    assert counts.dtype == np.float32 and counts.has_sorted_indices and (counts != rebuilt).nnz == 0
    again, extra_again = index._library_counts("word", texts)
    assert extra_again == extra and (again != counts).nnz == 0
    np.testing.assert_array_equal(again.indices, counts.indices)
    # A vocabulary of strings (a partitioned index's): the first library is looked up the other
    # way round (the index's terms among its own), the next ones in the index's vocabulary.
    assert isinstance(index.word_terms, TermList)
    listed = dataclasses.replace(index, word_terms=list(index.word_terms))
    for lookups in (1, 2):
        by_strings, extra_by_strings = listed._library_counts("word", texts)
        assert listed._word_lookups == lookups and extra_by_strings == extra and (by_strings != counts).nnz == 0
    none, no_terms = index._library_counts("word", ["the of and", ""])
    assert none.shape == (2, len(index.word_terms)) and none.nnz == 0 and no_terms == []


@pytest.mark.parametrize("share", [0.0, 0.005, 0.2, 2.0])
@pytest.mark.parametrize("batch", [3, 4096])
def test_head_product_is_the_dense_product_bit_for_bit(share, batch, monkeypatch):
    """Splitting the library's rows out of the rows' own split changes no sum's order."""
    monkeypatch.setattr("recommender.features.sparse_products.ROW_BATCH", batch)
    papers = connectors.load(DATA / "report-collection.jsonl")
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    for rows in (index.char_rows, index.word_rows):
        expected = dense_product(rows, rows[:7], dense_column_share=share)
        got = head_product(rows, 7, dense_column_share=share)
        assert got.dtype == expected.dtype == np.float32
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_allclose(got, (rows @ rows[:7].T).toarray(), rtol=1e-5, atol=1e-6)


def test_split_is_the_column_selection():
    papers = connectors.load(DATA / "report-collection.jsonl")
    rows = CollectionIndexBuilder(lsa_components=0).build(papers).char_rows
    frequent = np.flatnonzero(np.bincount(rows.indices, minlength=rows.shape[1]) > rows.shape[0] // 4)
    position = np.full(rows.shape[1], -1, dtype=np.int64)
    position[frequent] = np.arange(len(frequent))
    block, rest = _split(rows, position, len(frequent), np.float32)
    assert 0 < len(frequent) < rows.shape[1]
    np.testing.assert_array_equal(block, rows[:, frequent].toarray())
    others = np.ones(rows.shape[1], dtype=bool)
    others[frequent] = False
    plain_rest = rows.multiply(others[None, :]).tocsr()
    plain_rest.eliminate_zeros()
    assert rest.shape == rows.shape and (rest != plain_rest).nnz == 0
    np.testing.assert_array_equal(rest.indptr, plain_rest.indptr)


def test_library_title_rows_equal_the_title_vectoriser_with_the_index_vocabulary():
    """Library titles counted straight into the index's title columns, as its vectoriser counts them."""
    from recommender.features.index_features import tfidf_rows, title_counter

    papers = connectors.load(DATA / "report-collection.jsonl") + connectors.load(DATA / "hard-cases.bib")
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    library = connectors.load(EXAMPLE_LIBRARY) + connectors.load(DATA / "hard-cases.bib")
    titles = ["" if paper.title_derived else paper.title for paper in library]
    expected = tfidf_rows(title_counter(index.title_terms).fit([]).transform(titles), index.title_idf)
    rows = index.representations(library).vectors["title"][: len(library)]
    assert rows.shape == expected.shape and rows.nnz > 0 and (rows != expected).nnz == 0


def _real_representations():
    """A collection index of the report collection and the example library's rows against it."""
    papers = connectors.load(DATA / "report-collection.jsonl")
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    return index.representations(connectors.load(EXAMPLE_LIBRARY))


def test_bm25_is_made_only_for_a_model_that_reads_it(monkeypatch):
    """The default ranks against an index without BM25; the whole-library profile makes it,
    the same weights as an index made with them at once."""
    import recommender.features.collection_index as collection_index
    from recommender.models.index_fit import fit_on_index

    papers = connectors.load(DATA / "report-collection.jsonl")
    library = connectors.load(EXAMPLE_LIBRARY)
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    made = []
    real = collection_index.bm25_weights
    monkeypatch.setattr(collection_index, "bm25_weights", lambda *args: made.append(args) or real(*args))
    fit_on_index(HybridModel(), index, library)
    assert made == []
    profiled = fit_on_index(HybridModel(profile_weight=1.0), index, library)
    assert len(made) == 2 and "profile" in profiled.components_  # the collection's rows, then the library's
    fit_on_index(HybridModel(profile_weight=1.0), index, library)
    assert len(made) == 3  # the collection's are made once
    expected = HybridModel(profile_weight=1.0).fit(library, papers)
    np.testing.assert_array_equal(profiled.components_["profile"], expected.components_["profile"])


def test_side_by_side_rows_are_the_joined_rows_bit_for_bit():
    rep = _real_representations()
    word, char = rep.vectors["word"][:], rep.vectors["char"][:]
    a, b = 1 / np.sqrt(1.25), 0.5 / np.sqrt(1.25)
    joined = sparse.hstack([word * a, char * b], format="csr")
    rows = np.array([40, 3, 17, 17, 0])
    taken = SideBySide([word, char], [a, b]).take(rows)
    assert taken.dtype == joined.dtype == np.float64 and (taken != joined[rows]).nnz == 0
    np.testing.assert_array_equal(taken.data, joined[rows].data)


def test_stacked_rows_are_the_stacked_matrix_bit_for_bit():
    """A library's rows above the index's, taken as the products take them, are those of
    ``sparse.vstack``: whole, a slice, chosen rows in any order, one row, a negative row."""
    from recommender.features.sparse_products import StackedRows

    rep = _real_representations()
    for name in ("word", "char"):
        stacked = rep.vectors[name]
        assert isinstance(stacked, StackedRows)
        plain = sparse.vstack([stacked.head, stacked.tail[:]], format="csr")  # (char: rows made from counts)
        n_library = stacked.head.shape[0]
        for rows in (slice(None), slice(2, 40, 3), np.array([n_library + 5, 1, n_library, 0, 1]),
                     np.arange(n_library, plain.shape[0]), [n_library - 1], 7, -1, np.array([], dtype=int)):
            taken, expected = stacked[rows], plain[rows]
            assert taken.shape == expected.shape and taken.dtype == expected.dtype
            np.testing.assert_array_equal(taken.toarray(), expected.toarray())
            np.testing.assert_array_equal(taken.data, expected.data)
        np.testing.assert_array_equal(stacked[1:, :50].toarray(), plain[1:, :50].toarray())
        mask = np.arange(plain.shape[0]) % 3 == 1
        np.testing.assert_array_equal(stacked[mask].toarray(), plain[mask].toarray())
        with pytest.raises(IndexError):
            stacked[mask[:-1]]
        np.testing.assert_array_equal(stacked.column_counts(), np.bincount(plain.indices, minlength=plain.shape[1]))
        other = plain[[n_library + 2, 0, n_library + 9]].T.tocsr()
        product, expected = stacked @ other, plain @ other
        assert product.dtype == expected.dtype and np.array_equal(product.toarray(), expected.toarray())
        with pytest.raises(IndexError):
            stacked[np.array([plain.shape[0]])]
    # The BM25 weights and term counts are stacked the same way, never copied, and made only
    # when read.
    assert rep.term_counts is None and rep.bm25_weights is None
    for stacked in rep.bm25():
        assert isinstance(stacked, StackedRows) and stacked.dtype == np.float32
        plain = sparse.vstack([stacked.head, stacked.tail], format="csr")
        rows = np.array([3, stacked.head.shape[0] + 1, 0])
        assert np.array_equal(stacked[rows].toarray(), plain[rows].toarray()) and stacked[rows].dtype == plain.dtype
    with pytest.raises(ValueError, match="cannot be stacked"):
        StackedRows(sparse.csr_matrix((1, 3)), sparse.csr_matrix((1, 4)))


def test_stacked_embeddings_are_the_stacked_array_bit_for_bit():
    """A library's embeddings above the index's, never copied whole: every way the ranking and
    the report take them gives ``np.vstack``'s rows (new arrays: the index's own rows are never
    written), and the products made of them are its products to the last bit."""
    from recommender.features.sparse_products import StackedDense
    from recommender.models.static_embeddings import StaticEmbedder

    papers = connectors.load(DATA / "report-collection.jsonl")
    library = connectors.load(EXAMPLE_LIBRARY)
    embedder = StaticEmbedder()
    index = CollectionIndexBuilder(lsa_components=0, embedder=embedder).build(papers)
    stacked = index.representations(library, embedder=embedder).vectors["embedding"]
    assert isinstance(stacked, StackedDense) and stacked.tail is index.embeddings
    plain = np.vstack([stacked.head, stacked.tail])
    n_library = len(library)
    assert stacked.shape == plain.shape and len(stacked) == len(plain) and stacked.dtype == plain.dtype == np.float32
    mask = np.arange(len(plain)) % 3 == 1
    for rows in (slice(None), slice(2, 40, 3), slice(n_library - 2, n_library + 3), slice(n_library + 1, None),
                 slice(5, 5), np.array([n_library + 5, 1, n_library, 0, 1]),
                 np.arange(n_library, len(plain)), [n_library - 1], mask, np.array([-1, -len(plain)]),
                 np.array([], dtype=int)):
        taken = stacked[rows]
        assert taken.dtype == plain.dtype and taken.flags.c_contiguous
        np.testing.assert_array_equal(taken, plain[rows])
    np.testing.assert_array_equal(stacked[7], plain[7])
    np.testing.assert_array_equal(stacked[-1], plain[-1])
    np.testing.assert_array_equal(stacked[1:, :50], plain[1:, :50])
    taken = stacked.take(np.arange(len(plain)))
    taken[:] = 0
    assert np.array_equal(np.vstack([stacked.head, stacked.tail]), plain)  # a copy was written, not the index
    for bad in (np.array([len(plain)]), np.array([-len(plain) - 1]), mask[:-1]):
        with pytest.raises(IndexError):
            stacked[bad]
    with pytest.raises(ValueError, match="cannot be stacked"):
        StackedDense(np.zeros((2, 3)), np.zeros((2, 4)))
    # The products the hybrid model makes of them: the first pass's block, and candidates (not
    # in order, not all) against chosen rows.
    np.testing.assert_array_equal(head_product(stacked, n_library), head_product(plain, n_library))
    rows = np.arange(len(plain))[::-1][:-3]
    np.testing.assert_array_equal(dense_product(stacked, plain[:6], row_indices=rows),
                                  dense_product(plain, plain[:6], row_indices=rows))


@pytest.mark.parametrize("batch", [3, 4096])
def test_products_of_stacked_rows_are_those_of_the_stacked_matrix_bit_for_bit(batch, monkeypatch):
    """Ranking against an index multiplies the stacked rows without stacking them: the same
    numbers as the copy made before, to the last bit."""
    monkeypatch.setattr("recommender.features.sparse_products.ROW_BATCH", batch)
    rep = _real_representations()
    for name in ("word", "char"):
        stacked = rep.vectors[name]
        plain = sparse.vstack([stacked.head, stacked.tail[:]], format="csr")  # (char: rows made from counts)
        n_library = stacked.head.shape[0]
        np.testing.assert_array_equal(head_product(stacked, n_library), head_product(plain, n_library))
        rows = np.arange(plain.shape[0])[::-1][:-3]
        np.testing.assert_array_equal(dense_product(stacked, plain[:6], row_indices=rows),
                                      dense_product(plain, plain[:6], row_indices=rows))


@pytest.mark.parametrize("share", [0.0, 0.005, 2.0])
@pytest.mark.parametrize("batch", [3, 4096])  # many batches on two threads, or one
def test_product_of_chosen_side_by_side_rows_is_the_sparse_product(share, batch, monkeypatch):
    """Rows taken a batch at a time (on threads) from word | char rows never joined, column
    shares from the known counts: the numbers of the plain sparse product."""
    monkeypatch.setattr("recommender.features.sparse_products.ROW_BATCH", batch)
    monkeypatch.setattr("recommender.features.sparse_products.WORKERS", 2)
    rep = _real_representations()
    word, char = rep.vectors["word"][:], rep.vectors["char"][:]
    a, b = 1 / np.sqrt(1.25), 0.5 / np.sqrt(1.25)
    joined = sparse.hstack([word * a, char * b], format="csr")
    # The parts as the index gives them: library rows stacked above the collection's as taken.
    side_by_side = SideBySide([rep.vectors["word"], rep.vectors["char"]], [a, b],
                              [rep.column_counts["word"], rep.column_counts["char"]])
    other = joined[:9]
    rows = np.arange(joined.shape[0])[::-1][: joined.shape[0] - 4]  # not in order, not all of them
    got = dense_product(side_by_side, other, dense_column_share=share, row_indices=rows)
    assert got.dtype == np.float64 and got.shape == (len(rows), 9)
    np.testing.assert_allclose(got, (joined[rows] @ other.T).toarray(), rtol=1e-12, atol=1e-12)
    plain = dense_product(word, word[:9], dense_column_share=share, row_indices=rows)
    np.testing.assert_allclose(plain, (word[rows] @ word[:9].T).toarray(), rtol=1e-5, atol=1e-6)


def test_known_column_counts_are_the_counted_ones():
    rep = _real_representations()
    for name in ("word", "char"):
        rows = rep.vectors[name][:]
        np.testing.assert_array_equal(rep.column_counts[name], np.bincount(rows.indices, minlength=rows.shape[1]))
        np.testing.assert_array_equal(rep.vectors[name].column_counts(), rep.column_counts[name])


def test_shared_authors_are_the_author_blocks_sums():
    papers = connectors.load(require(CONFERENCES / "icml2019.jsonl.gz"))[:400]
    model = HybridModel().fit(papers[:40], papers[40:])
    rep = model.rep_
    block_sums = rep.blocks["authors"][np.ix_(model.candidate_rows_, model.library_rows_)].sum(axis=1)
    got = model._shared_authors(rep)
    assert got.dtype == block_sums.dtype and block_sums.max() > 0
    np.testing.assert_array_equal(got, block_sums)


@pytest.mark.parametrize("chunk", [2, 512])
def test_chunked_selections_and_standardising_are_the_plain_ones(chunk, monkeypatch):
    """Feedback choice (each column's k best rows), the in-place standardising and each row's
    k best columns, a chunk of rows at a time, on a real first-pass block."""
    monkeypatch.setattr("recommender.models.aggregation.ROW_CHUNK", chunk)
    rep = _real_representations()
    block = (rep.blocks["word"] + 0.25 * rep.blocks["char"]).astype(np.float64)
    block[np.arange(rep.n_library), np.arange(rep.n_library)] = -np.inf  # not its own feedback
    block[[5, 30]] = -np.inf  # disliked papers
    for k in (1, 8, len(block)):
        top = column_top_k(block, k)
        assert top.shape == (k, block.shape[1])
        for column in range(block.shape[1]):
            np.testing.assert_array_equal(np.sort(block[top[:, column], column]), np.sort(block[:, column])[-k:])
    # Standardising a column keeps its order: the plain cosines choose the same feedback.
    finite = np.where(np.isfinite(block), block, 0.0)
    standardized = standardize_columns(finite, finite[rep.n_library:])
    for column in range(block.shape[1]):
        chosen = column_top_k(block, 8)[:, column]
        assert set(chosen) == set(np.argsort(-np.where(np.isfinite(block), standardized, -np.inf)[:, column],
                                             kind="stable")[:8])
    expected = (finite - finite.mean(axis=0)) / finite.std(axis=0)
    np.testing.assert_allclose(standardize_columns(finite.copy(), in_place=True), expected, rtol=1e-12, atol=1e-12)
    for k in (1, 9, finite.shape[1]):
        means, columns = top_mean(finite, k)
        np.testing.assert_array_equal(np.take_along_axis(finite, columns, axis=1).mean(axis=1), means)
        np.testing.assert_allclose(means, np.sort(finite, axis=1)[:, -k:].mean(axis=1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("chunk, dense", [(7, False), (512, False), (7, True)])
def test_lexical_channel_is_standardised_a_chunk_at_a_time_as_the_whole_block(chunk, dense, monkeypatch):
    """The feedback-expanded lexical cosines are standardised (and weighted) a chunk of rows at
    a time, not in a whole copy (120 MB at 30,000 candidates, the run's peak): bit for bit what
    standardising the whole block gives."""
    from recommender.models import hybrid
    from recommender.models.aggregation import column_scale
    from recommender.models.pseudo_feedback import feedback_expanded_similarity

    monkeypatch.setattr("recommender.models.aggregation.ROW_CHUNK", chunk)
    made = {}

    def keep(*args, **kwargs):
        made.setdefault("lexical", feedback_expanded_similarity(*args, **kwargs))
        return made["lexical"].copy()

    monkeypatch.setattr(hybrid, "feedback_expanded_similarity", keep)
    papers = connectors.load(DATA / "report-collection.jsonl")
    library = connectors.load(EXAMPLE_LIBRARY)
    if dense:  # the default install's: the static table, each channel by its own best papers
        from recommender.models.static_embeddings import StaticEmbedder

        model = HybridModel(embedder=StaticEmbedder()).fit(library, papers)
    else:
        model = HybridModel().fit(library, papers)
    raw = made["lexical"]
    assert raw.dtype == np.float64 and raw.shape == (len(papers), len(library))
    mean, spread = column_scale(raw, pooled=True, prior=model.column_prior)
    whole = standardize_columns(raw.copy(), in_place=True, pooled=True, prior=model.column_prior)
    np.testing.assert_array_equal((raw[:3] - mean) / spread, whole[:3])
    if dense:
        assert model.dense_depth and set(model.components_) == {"lexical", "dense", "authors"}
        whole *= model.dense_weight / model.dense_weights(library)
    expected, _ = top_mean(whole, model.aggregation_depth_)
    np.testing.assert_array_equal(model.components_["lexical"], expected)
    text = expected + model.components_["dense"] if dense else expected
    np.testing.assert_array_equal(model.scores_, text + model.components_["authors"])


def test_freed_memory_is_handed_back_before_large_expanded_products_only(monkeypatch):
    """Before the feedback-expanded product, what the first pass freed goes back to the system
    when the product is large (at 30,000 candidates the allocator kept 60-85 MB there), not
    before small ones (pages handed back are faulted in again); the scores are the same."""
    from recommender.models import pseudo_feedback

    papers = connectors.load(DATA / "report-collection.jsonl")
    library = connectors.load(EXAMPLE_LIBRARY)
    trims = []
    monkeypatch.setattr(pseudo_feedback, "release_free_memory", lambda: trims.append(1))
    small = HybridModel().fit(library, papers).scores_
    assert trims == [] and len(papers) * len(library) * 8 < pseudo_feedback.TRIM_BEFORE_BYTES
    monkeypatch.setattr(pseudo_feedback, "TRIM_BEFORE_BYTES", len(papers) * len(library) * 8)
    np.testing.assert_array_equal(HybridModel().fit(library, papers).scores_, small)
    assert trims == [1]


def test_topic_rows_made_when_asked_are_those_of_all_rows():
    from recommender.features.index_features import TopicRows, lsa_rows

    papers = connectors.load(DATA / "report-collection.jsonl")
    index = CollectionIndexBuilder(lsa_components=8).build(papers + connectors.load(EXAMPLE_LIBRARY))
    rep = index.representations(connectors.load(EXAMPLE_LIBRARY)[:5])
    topics = rep.vectors["lsa"]
    assert isinstance(topics, TopicRows) and topics.shape == (5 + index.n_papers, 8)
    word = rep.vectors["word"][:, : len(index.word_terms)]
    everything = lsa_rows(word, index.lsa_components)
    np.testing.assert_array_equal(np.asarray(topics), everything)
    np.testing.assert_array_equal(index.lsa_rows, everything[5:])
    picked = np.array([7, 0, 4, 30, 5])  # collection and library rows, in any order
    np.testing.assert_array_equal(topics[picked], everything[picked])
    np.testing.assert_array_equal(topics[3], everything[3])
    np.testing.assert_array_equal(topics[2:9], everything[2:9])


def _conference_texts(n_papers: int) -> list[str]:
    """The texts of the first ``n_papers`` papers of a few conferences, and the awkward ones."""
    papers = []
    for name in ("icml2019", "nips2018", "iclr2018", "cvpr2019", "nips2017", "cvpr2018"):
        if len(papers) < n_papers:
            papers += connectors.load(require(CONFERENCES / f"{name}.jsonl.gz"))
    assert len(papers) >= n_papers
    return [paper.text for paper in papers[:n_papers]] + AWKWARD_TEXTS


def _assert_same_counts(counts: sparse.csr_matrix, expected: sparse.csr_matrix) -> None:
    assert counts.dtype == expected.dtype == np.float32 and counts.shape == expected.shape
    np.testing.assert_array_equal(counts.indptr, expected.indptr)
    np.testing.assert_array_equal(counts.indices, expected.indices)
    np.testing.assert_array_equal(counts.data, expected.data)


# From 5,000 papers a term must be in 2 of them; words in more than 90% are left out from 10.
@pytest.mark.parametrize("kind, n_papers", [("word", 9), ("word", 400), ("word", 5200), ("char", 400), ("char", 5200)])
def test_collection_counts_made_with_numpy_are_the_vectorisers(kind, n_papers):
    """The index builder's word and character counts and terms, limits included, as scikit-learn's."""
    from recommender.features.index_features import char_counter, count_chars, count_words, fit_counts, word_counter

    count, counter = (count_words, word_counter) if kind == "word" else (count_chars, char_counter)
    texts = _conference_texts(n_papers)
    counts, terms = count(texts, n_papers=len(texts))
    expected, expected_terms = fit_counts(counter(n_papers=len(texts)), texts)
    assert terms == expected_terms
    _assert_same_counts(counts, expected)
    with pytest.raises(ValueError):
        count(["the of and", "a"] if kind == "word" else ["", " "], n_papers=2)


def test_title_counts_made_with_numpy_are_the_vectorisers():
    """The index builder's title counts and terms (unigrams, stop words out), as scikit-learn's."""
    from recommender.features.index_features import count_titles, fit_counts, title_counter

    titles = [text.split(". ")[0] for text in _conference_texts(3000)] + ["", "The Of", "Über-Modèle naïve"]
    counts, terms = count_titles(titles)
    expected, expected_terms = fit_counts(title_counter(), titles)
    assert terms == expected_terms
    _assert_same_counts(counts, expected)
    with pytest.raises(ValueError):
        count_titles(["the of and", "a", ""])


def _reference_tfidf(counts, idf):
    """The rows as scikit-learn's TfidfTransformer(sublinear_tf=True) makes them, with ``idf``."""
    from sklearn.preprocessing import normalize

    rows = sparse.csr_matrix(counts, dtype=np.float32, copy=True)
    rows.data = (np.log(rows.data) + 1.0) * idf[rows.indices]
    return normalize(rows)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.int64])
def test_tfidf_rows_of_compact_counts_are_scikit_learns_bit_for_bit(dtype):
    index = CollectionIndexBuilder(lsa_components=0).build(connectors.load(DATA / "report-collection.jsonl"))
    counts = index.char_counts.astype(np.float32)  # (held in 8 bits: too narrow for 3,000)
    counts.data[::7] = 200 if dtype == np.uint8 else 3000  # counts the 8- and 16-bit tables must look up too
    counts = sparse.csr_matrix(counts.astype(dtype))
    before = counts.copy()
    want = _reference_tfidf(counts, index.char_idf)
    got = tfidf_rows(counts, index.char_idf)
    assert got.dtype == want.dtype == np.float32
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.data, want.data)
    norms = tfidf_norms(counts, index.char_idf)
    assert np.array_equal(tfidf_rows(counts, index.char_idf, norms).data, want.data)
    assert (counts != before).nnz == 0 and counts.dtype == dtype  # the counts untouched


def test_the_index_makes_its_character_rows_from_their_counts_as_taken(monkeypatch):
    """A large collection's index holds no character rows, only 1-byte counts: any rows taken
    (one, a slice, chosen ones, widened for a library's own n-grams) are the TF-IDF rows of
    float32 counts bit for bit, and the ranking's stacked rows take them so; it ranks as an
    index that holds its rows (a small collection's), to the last bit."""
    papers = connectors.load(DATA / "report-collection.jsonl")
    held = CollectionIndexBuilder(lsa_components=0).build(papers)
    assert sparse.issparse(held.char_tfidf) and held.char_rows is held.char_tfidf
    monkeypatch.setattr("recommender.features.collection_index.COUNTED_CHAR_ROWS_MIN_PAPERS", 1)
    index = CollectionIndexBuilder(lsa_components=0).build(papers)
    assert index.char_counts.dtype == np.uint8 and "char_rows" not in vars(index)
    assert isinstance(index.char_tfidf, CountedTfidf) and (index.char_rows != held.char_rows).nnz == 0
    library = connectors.load(EXAMPLE_LIBRARY)
    scores = [HybridModel().fit_representations(i.representations(library), np.arange(len(library)),
                                                len(library) + np.arange(i.n_papers), library).scores_
              for i in (index, held)]
    assert np.array_equal(scores[0], scores[1])
    want = tfidf_rows(index.char_counts.astype(np.float32), index.char_idf)
    lazy = index.char_tfidf
    for rows in (slice(None), slice(3, 9), np.array([5, 0, 5, 2]), 4):
        got, expected = lazy[rows], want[[rows] if isinstance(rows, int) else rows]
        assert got.dtype == np.float32 and np.array_equal(got.indptr, expected.indptr)
        assert np.array_equal(got.indices, expected.indices) and np.array_equal(got.data, expected.data)
    wide = lazy.widened(want.shape[1] + 10)
    assert wide.shape == (want.shape[0], want.shape[1] + 10) and (wide[:][:, : want.shape[1]] != want).nnz == 0
    assert np.array_equal(wide.column_counts()[: want.shape[1]], np.bincount(want.indices, minlength=want.shape[1]))
    rep = index.representations(connectors.load(EXAMPLE_LIBRARY)[:4])
    stacked = rep.vectors["char"]
    assert isinstance(stacked.tail, CountedTfidf)  # the index's counts, not a copy of rows
    assert np.shares_memory(stacked.tail.counts.data, index.char_counts.data)
    collection_rows = stacked[np.arange(4, stacked.shape[0])]
    assert collection_rows.shape[1] >= want.shape[1] and collection_rows[:, want.shape[1]:].nnz == 0
    assert np.array_equal(collection_rows[:, : want.shape[1]].toarray(), want.toarray())


def test_counted_tfidf_makes_the_rows_and_any_columns_of_them_bit_for_bit():
    index = CollectionIndexBuilder(lsa_components=0).build(connectors.load(DATA / "report-collection.jsonl"))
    for counts, idf in ((index.word_counts, index.word_idf), (index.char_counts, index.char_idf)):
        counts = sparse.csr_matrix(counts.astype(np.uint8))
        counted = CountedTfidf(counts, idf, tfidf_norms(counts, idf))
        whole = tfidf_rows(counts, idf)
        assert counted.shape == whole.shape and (counted.rows() != whole).nnz == 0
        some = np.array([0, 3, 3, counts.shape[0] - 1])
        assert np.array_equal(counted.take(some).toarray(), whole[some].toarray())
        rng = np.random.default_rng(0)
        for share in (0.0, 0.01, 0.3, 1.0):
            columns = np.sort(rng.choice(counts.shape[1], int(share * counts.shape[1]), replace=False))
            got, want = counted.columns(columns), whole[:, columns]
            assert got.shape == want.shape and np.array_equal(got.indptr, want.indptr)
            assert np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data)


def test_explaining_many_picks_names_the_word_columns_once_a_fit(monkeypatch):
    """The shared terms of every explained pick are read from one array of the run's word
    column names (each made of the whole vocabulary: 14 ms at 3,000 papers, three times a pick
    before); a new fit names its own columns, and the terms are those of the names made afresh."""
    from recommender.features.index_features import ColumnNames
    from recommender.ranking import Ranker

    made = []
    original = ColumnNames.get_feature_names_out
    monkeypatch.setattr(ColumnNames, "get_feature_names_out", lambda self: made.append(self) or original(self))
    library = connectors.load(EXAMPLE_LIBRARY)
    collection = connectors.load(DATA / "report-collection.jsonl")
    ranker = Ranker(HybridModel())
    ranking = ranker.rank(library, collection, top=30, explain_terms=5)
    reasons = [reason for pick in ranking.recommendations for reason in pick.because]
    assert len(reasons) >= 30 and sum(bool(reason.terms) for reason in reasons) >= 30
    assert len(made) == 1
    model = ranking.fitted_model
    names = original(model.rep_.word_vectorizer)
    model.__dict__.pop("_word_names_of")  # the same terms from names made afresh
    monkeypatch.setattr(ColumnNames, "get_feature_names_out", lambda self: names)
    for pick in ranking.recommendations[:10]:
        for reason in pick.because:
            library_row = model.library_rows_[library.index(reason.paper)]
            row = model.candidate_rows_[ranking.candidates.index(pick.paper)]
            assert tuple(model.shared_terms(row, int(library_row), 5)) == reason.terms
    monkeypatch.setattr(ColumnNames, "get_feature_names_out", lambda self: made.append(self) or original(self))
    ranker.rank(library, collection, top=5, explain_terms=5)
    assert len(made) == 2 and made[1] is not made[0]
