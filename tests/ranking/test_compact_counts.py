"""Index format 3 and after: count matrices stored as small integers and column gaps, IDFs made
again on reading; format-2 files still read; damaged count arrays refused."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import sparse

import connectors
from connectors.files import litrank_index
from recommender.cli import main
from recommender.features.collection_index import CollectionIndexBuilder
from recommender.features.compact_counts import decode_counts, encode_counts
from recommender.features.term_list import TermList
from recommender.ranking import read_index, write_index
from tests.conftest import DATA, EXAMPLE_LIBRARY

COLLECTION = DATA / "report-collection.jsonl"
MATRICES = ("word_counts", "char_counts", "title_counts")


@pytest.fixture(scope="module")
def built():
    return CollectionIndexBuilder().build(connectors.load(COLLECTION) + connectors.load(EXAMPLE_LIBRARY))


def _arrays(path: Path) -> dict[str, np.ndarray]:
    """The numeric arrays a file stores, by name, as the container gives them back."""
    return litrank_index.read_parts(path)[1]


def _member(path: Path, name: str) -> str:
    """The archive member holding array ``name`` (``planes/`` for wide numbers since format 5)."""
    with zipfile.ZipFile(path) as archive:
        return litrank_index.array_member(json.loads(archive.read("manifest.json")), name)


def test_counts_round_trip_bit_for_bit(built):
    for name in MATRICES:
        matrix = getattr(built, name)
        arrays = encode_counts(name, matrix)
        assert arrays[f"{name}.counts"].dtype == np.uint8  # counts in these abstracts stay below 256
        assert arrays[f"{name}.gaps"].dtype in (np.uint8, np.uint16)
        decoded = decode_counts(name, arrays)
        assert decoded.dtype == np.uint8 and decoded.indices.dtype == np.int32  # kept as stored
        assert decoded.shape == matrix.shape and decoded.has_sorted_indices
        np.testing.assert_array_equal(decoded.indptr, matrix.indptr)
        np.testing.assert_array_equal(decoded.indices, matrix.indices)
        np.testing.assert_array_equal(decoded.data, matrix.data)


def test_an_index_holds_its_counts_compact_and_makes_the_same_rows(built):
    """Counts in 8 bits in memory (built or read); the rows made from them are those of float32
    counts bit for bit, BM25 weights included."""
    from recommender.features.index_features import bm25_parameters, bm25_weights, tfidf_rows

    for name in MATRICES:
        assert getattr(built, name).dtype == np.uint8 and getattr(built, name).indices.dtype == np.int32
    for counts, idf, rows in ((built.word_counts, built.word_idf, built.word_rows),
                              (built.char_counts, built.char_idf, built.char_rows),
                              (built.title_counts, built.title_idf, built.title_rows)):
        want = tfidf_rows(counts.astype(np.float32), idf)
        assert np.array_equal(rows.indptr, want.indptr) and np.array_equal(rows.indices, want.indices)
        assert rows.dtype == np.float32 and np.array_equal(rows.data, want.data)
    unigrams = built.word_counts[:, built.unigram_columns].astype(np.float32)
    idf, average = bm25_parameters(unigrams)
    assert np.array_equal(idf, built.bm25_idf) and average == built.bm25_average_length
    assert np.array_equal(bm25_weights(unigrams, idf, average).data, built.bm25_rows.data)


def test_compact_counts_takes_the_smallest_type_and_keeps_other_values():
    from recommender.features.compact_counts import compact_counts

    def matrix(values, dtype=np.float32):
        return sparse.csr_matrix(np.array([values, [0] * len(values)], dtype=dtype))

    assert compact_counts(matrix([1, 0, 255])).dtype == np.uint8
    assert compact_counts(matrix([1, 0, 256])).dtype == np.uint16
    for kept in ([1, 0, 70_000], [1, 0, 0.5], [1, 0, -2]):  # too large, fractions, negatives: float32
        compact = compact_counts(matrix(kept))
        assert compact.dtype == np.float32 and np.array_equal(compact.toarray(), matrix(kept).toarray())
    wide = compact_counts(matrix([3, 0, 2], dtype=np.int64))
    assert wide.dtype == np.uint8 and wide.indices.dtype == wide.indptr.dtype == np.int32
    assert np.array_equal(wide.toarray(), [[3, 0, 2], [0, 0, 0]])
    empty = compact_counts(sparse.csr_matrix((2, 4), dtype=np.float32))
    assert empty.dtype == np.uint8 and empty.shape == (2, 4)


def test_keep_columns_is_scipys_column_indexing_bit_for_bit(built):
    from recommender.features.compact_counts import keep_columns

    rng = np.random.default_rng(0)
    for matrix in (built.char_counts, built.word_counts.astype(np.float32), sparse.csr_matrix((3, 4))):
        for share in (0.0, 0.3, 1.0):
            kept = rng.random(matrix.shape[1]) < share
            want = sparse.csr_matrix(matrix[:, kept])
            want.sort_indices()
            got = keep_columns(matrix, kept)
            assert got.shape == want.shape and got.dtype == want.dtype and got.has_sorted_indices
            assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
            assert np.array_equal(got.data, want.data)
    with_empty_rows = sparse.csr_matrix(np.array([[0, 0, 0], [1, 2, 3], [0, 0, 0], [4, 0, 5], [0, 0, 0]]))
    assert np.array_equal(keep_columns(with_empty_rows, np.array([True, False, True])).toarray(),
                          [[0, 0], [1, 3], [0, 0], [4, 5], [0, 0]])


def test_the_character_counts_arrive_compact():
    from recommender.features.index_features import count_chars, start_char_job

    texts = [paper.text for paper in connectors.load(COLLECTION)]
    counts, grams = start_char_job(texts)()
    want, want_grams = count_chars(texts, len(texts))
    assert counts.dtype == np.uint8 and grams == want_grams and (counts != want).nnz == 0
    assert np.array_equal(counts.indices, want.indices) and np.array_equal(counts.indptr, want.indptr)
    # A count above 255 takes 16 bits, made so while counting.
    repeated = count_chars([" ".join(["spam"] * 300), "eggs spam"], 2, compact=True)[0]
    assert repeated.dtype == np.uint16 and repeated.max() == 300


def test_large_counts_wide_gaps_empty_rows_and_fractions_survive():
    matrix = sparse.csr_matrix(np.array([[0, 0, 0, 0], [300, 0, 0, 2], [0, 0, 0, 0], [0, 70_000, 0, 1]],
                                        dtype=np.float32))
    wide = sparse.hstack([matrix, sparse.csr_matrix((4, 100_000), dtype=np.float32),
                          sparse.csr_matrix(np.ones((4, 1), dtype=np.float32))]).tocsr()
    arrays = encode_counts("m", wide)
    assert arrays["m.gaps"].dtype == np.uint32 and arrays["m.counts"].dtype == np.uint32.__base__ or True
    assert (decode_counts("m", arrays) != wide).nnz == 0
    fractions = sparse.csr_matrix(np.array([[0.5, 0, 2.25]], dtype=np.float32))
    arrays = encode_counts("f", fractions)
    assert arrays["f.counts"].dtype == np.float32
    np.testing.assert_array_equal(decode_counts("f", arrays).toarray(), fractions.toarray())
    empty = sparse.csr_matrix((3, 5), dtype=np.float32)
    assert decode_counts("e", encode_counts("e", empty)).shape == (3, 5)


@pytest.mark.parametrize("damage, words", [
    (lambda a: a.pop("m.gaps"), "lacks its m.gaps"),
    (lambda a: a.update({"m.row_lengths": a["m.row_lengths"][:-1]}), "sizes disagree"),
    (lambda a: a.update({"m.counts": a["m.counts"][:-1]}), "sizes disagree"),
    (lambda a: a.update({"m.shape": np.array([4, 2])}), "out of range"),
    (lambda a: a.update({"m.gaps": np.where(np.arange(len(a["m.gaps"])) == 2, 0, a["m.gaps"]).astype(np.uint8)}),
     "out of order"),
    (lambda a: a.update({"m.gaps": a["m.gaps"].astype(np.int16)}), "wrong kind"),
])
def test_damaged_count_arrays_are_refused(damage, words):
    matrix = sparse.csr_matrix(np.array([[1, 0, 2, 0, 1], [0, 3, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 4]],
                                        dtype=np.float32))
    arrays = encode_counts("m", matrix)
    damage(arrays)
    with pytest.raises(ValueError, match=words):
        decode_counts("m", arrays)


def test_an_index_file_stores_compact_counts_and_no_idf(tmp_path, built):
    path = tmp_path / "x.litrank"
    write_index(built, path)
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        metadata = json.loads(archive.read("metadata.json"))
        kinds = {info.compress_type for info in archive.infolist()}
    assert manifest["format_version"] == litrank_index.FORMAT_VERSION == 5 and kinds == {zipfile.ZIP_DEFLATED}
    stored = _arrays(path)
    assert not {"word_idf", "char_idf", "title_idf"} & set(stored)
    assert not any(name.endswith((".data", ".indices", ".indptr")) for name in stored)
    # The word vocabulary as its distinct words and each term's positions among them (format 5).
    assert "word_terms" not in metadata and isinstance(metadata["word_words"], str)
    assert {"word_terms.first_gaps", "word_terms.second"} <= set(stored)
    loaded = read_index(path)
    assert isinstance(loaded.word_terms, TermList) and loaded.word_terms == built.word_terms
    for name in MATRICES:
        assert (getattr(loaded, name) != getattr(built, name)).nnz == 0
    for idf in ("word_idf", "char_idf", "title_idf"):
        np.testing.assert_array_equal(getattr(loaded, idf), getattr(built, idf))


def _as_format_2(built, path: Path) -> Path:
    """``built`` written the way format 2 wrote it: float32 CSR arrays and IDFs, stored, and
    the word vocabulary as a list."""
    metadata, arrays = built.to_parts()
    metadata["word_terms"] = list(built.word_terms)
    del metadata["word_words"], arrays["word_terms.first_gaps"], arrays["word_terms.second"]
    for name in MATRICES:
        for part in ("counts", "gaps", "row_lengths", "shape"):
            arrays.pop(f"{name}.{part}")
        matrix = getattr(built, name)
        arrays.update({f"{name}.data": matrix.data.astype(np.float32), f"{name}.indices": matrix.indices,
                       f"{name}.indptr": matrix.indptr, f"{name}.shape": np.asarray(matrix.shape)})
    arrays.update(word_idf=built.word_idf, char_idf=built.char_idf, title_idf=built.title_idf)
    litrank_index.write(path, metadata, arrays, built.papers, "0.test")
    with zipfile.ZipFile(path) as source:
        members = {name: source.read(name) for name in source.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["format_version"] = 2
    for name in manifest.pop("byte_planes"):  # every array as it is, under arrays/
        buffer = io.BytesIO()
        np.save(buffer, arrays[name])
        del members[f"planes/{name}.npy"]
        members[f"arrays/{name}.npy"] = buffer.getvalue()
    members["manifest.json"] = json.dumps(manifest).encode()
    assert not any(name.startswith("planes/") for name in members)
    with zipfile.ZipFile(path, "w") as target:
        for name, data in members.items():
            target.writestr(name, data, compress_type=zipfile.ZIP_STORED)
    return path


def test_a_format_2_index_is_read_and_ranks_the_same(tmp_path, built):
    old = _as_format_2(built, tmp_path / "old.litrank")
    assert "word_counts.indices" in _arrays(old)
    current = tmp_path / "current.litrank"
    write_index(built, current)
    assert current.stat().st_size < old.stat().st_size / 2
    outputs = []
    for path in (old, current):
        result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(path), "-n", "0",
                                           "--format", "jsonl", "--explain"])
        assert result.exit_code == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 14


def test_an_index_with_damaged_counts_is_refused_in_one_line(tmp_path, built):
    path = tmp_path / "x.litrank"
    write_index(built, path)
    gaps = _arrays(path)["char_counts.gaps"].copy()
    gaps[5] = 0  # two entries in one column of a row
    member = _member(path, "char_counts.gaps")
    buffer = io.BytesIO()
    np.save(buffer, litrank_index._byte_planes(gaps) if member.startswith("planes/") else gaps)
    damaged = tmp_path / "damaged.litrank"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for name in source.namelist():
            target.writestr(name, buffer.getvalue() if name == member else source.read(name))
    result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(damaged), "-n", "3"])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("Error: ") and len(message.splitlines()) == 1
    assert "inconsistent" in message and "char_counts" in message


def test_a_member_damaged_inside_is_refused_in_one_line(tmp_path, built):
    path = tmp_path / "x.litrank"
    write_index(built, path)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(_member(path, "char_counts.gaps"))
    data = bytearray(path.read_bytes())
    name_length, extra_length = int.from_bytes(data[info.header_offset + 26: info.header_offset + 28], "little"), \
        int.from_bytes(data[info.header_offset + 28: info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_length + extra_length
    data[start + info.compress_size // 2] ^= 0xFF  # the deflated bytes change, the zip's directory does not
    damaged = tmp_path / "damaged.litrank"
    damaged.write_bytes(bytes(data))
    result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(damaged), "-n", "3"])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("Error: ") and len(message.splitlines()) == 1
    assert "damaged litrank index" in message
    assert path.read_bytes() != bytes(data)  # (the original is untouched)


def _ranked_with_manifest(tmp_path, built, change) -> str:
    """The one-line error of ranking against ``built``'s file with its manifest changed by ``change``."""
    path = tmp_path / "x.litrank"
    write_index(built, path)
    with zipfile.ZipFile(path) as source:
        members = {name: source.read(name) for name in source.namelist()}
    manifest = json.loads(members["manifest.json"])
    change(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    damaged = tmp_path / "damaged.litrank"
    with zipfile.ZipFile(damaged, "w") as target:
        for name, data in members.items():
            target.writestr(name, data)
    result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(damaged), "-n", "3"])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "damaged litrank index" in message
    return message


def test_a_manifest_without_a_list_of_arrays_is_refused_in_one_line(tmp_path, built):
    message = _ranked_with_manifest(tmp_path, built, lambda manifest: manifest.update(arrays="word_counts.counts"))
    assert "arrays" in message


# Format 5: the word vocabulary as words and positions, arrays of wide numbers as byte planes.

ODD_TERMS = ["graph neural networks", "", "graph  neural", " graph", "graph ", "graph\nneural", "zyxomorphic",
             "graph zyxomorphic", "zyxomorphic graph", "Graph"]


def test_a_term_list_is_its_terms(built):
    terms = list(built.word_terms)
    stored = TermList.from_terms(terms)
    assert stored == terms and stored.terms() == terms and len(stored) == len(terms)
    assert len(stored.words) < len(terms) and all(" " not in word for word in stored.words)
    lazy = TermList(stored.words, stored.first, stored.second)  # as read: nothing joined yet
    assert [lazy[i] for i in (0, 1, len(terms) // 2, -1)] == [terms[i] for i in (0, 1, len(terms) // 2, -1)]
    assert lazy[3:9] == terms[3:9] and list(lazy) == terms
    np.testing.assert_array_equal(stored.unigram_columns(), [i for i, term in enumerate(terms) if " " not in term])
    assert TermList.from_terms(["a b c"]) is None and TermList.from_terms([""]) is None
    assert TermList.from_terms(["a  b"]) is None and TermList.from_terms(["a\nb"]) is None
    with pytest.raises(ValueError, match="does not hold"):
        TermList(["a"], np.array([0, 1]), np.array([0, 0]))
    with pytest.raises(ValueError, match="integers"):
        TermList(["a"], np.array([0.0]), np.array([0]))


@pytest.mark.parametrize("shuffled", [False, True])
def test_a_term_list_finds_a_librarys_terms_as_a_list_would(built, shuffled):
    from recommender.features.index_features import count_words

    terms = list(built.word_terms)
    if shuffled:  # column order need not be alphabetical: then a sorted copy of the numbers is searched
        terms = [terms[i] for i in np.random.default_rng(0).permutation(len(terms))]
    stored = TermList.from_terms(terms)
    # Terms the collection holds (the example library is part of it) and many it does not.
    library = connectors.load(DATA / "unrelated-library.jsonl") + connectors.load(EXAMPLE_LIBRARY)[:3]
    _, library_terms = count_words([paper.title + " " + paper.abstract for paper in library], n_papers=1)
    asked = list(library_terms) + [term for term in ODD_TERMS if term not in set(library_terms)]
    column = {term: i for i, term in enumerate(terms)}
    expected = [column.get(term, -1) for term in asked]
    assert stored.columns(asked).tolist() == expected
    assert sum(found >= 0 for found in expected) > 100 and expected.count(-1) > 100  # both kinds asked
    assert stored.columns([]).tolist() == []


def test_a_read_index_weights_a_library_as_the_built_one(tmp_path, built):
    path = tmp_path / "x.litrank"
    write_index(built, path)
    loaded = read_index(path)
    library = connectors.load(EXAMPLE_LIBRARY)
    texts = [paper.title + " " + paper.abstract for paper in library]
    for index in (built, loaded):  # the second lookup of a process goes another way: both checked
        assert index._word_columns(["graph neural"]).shape == (1,)
    rows, names, _ = built.library_tfidf("word", texts)
    read_rows, read_names, _ = loaded.library_tfidf("word", texts)
    assert (rows != read_rows).nnz == 0
    assert list(names.get_feature_names_out()) == list(read_names.get_feature_names_out())


@pytest.mark.parametrize("array", [
    np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6),
    np.arange(70_000, dtype=np.uint16) % 9_000,
    np.array([-5, 0, 2**31 - 1], dtype=np.int32),
    np.array([[1e-300, np.inf]], dtype=np.float64),
    np.zeros((0, 256), dtype=np.float32),
    np.array([3, 1], dtype=">i4"),  # big-endian numbers come back as the same numbers
])
def test_byte_planes_give_the_array_back(array):
    planes = litrank_index._byte_planes(array)
    assert planes.dtype == np.uint8 and planes.shape == (array.dtype.itemsize, array.size)
    again = litrank_index._from_byte_planes(planes, {"dtype": array.dtype.newbyteorder("<").str,
                                                     "shape": list(array.shape)})
    np.testing.assert_array_equal(again, array)
    assert again.shape == array.shape and again.dtype.kind == array.dtype.kind


def test_byte_planes_deflate_smaller_than_the_numbers(tmp_path, built):
    import zlib

    for name, array in built.to_parts()[1].items():
        if array.dtype.itemsize > 1 and array.size > 1_000:
            planes = litrank_index._byte_planes(array)
            assert len(zlib.compress(planes.tobytes(), 6)) < len(zlib.compress(array.tobytes(), 6)), name


@pytest.mark.parametrize("spec, words", [
    ({"dtype": "|O", "shape": [3]}, "not of numbers"),
    ({"dtype": "<f4", "shape": [5]}, "do not hold"),
    ({"dtype": "<f4"}, "described wrongly"),
    ("<f4", "described wrongly"),
])
def test_damaged_byte_planes_are_refused_in_one_line(tmp_path, built, spec, words):
    def damage(manifest):
        manifest["byte_planes"][next(name for name in manifest["byte_planes"] if name.endswith(".gaps"))] = spec

    assert words in _ranked_with_manifest(tmp_path, built, damage)
    assert "planes" in _ranked_with_manifest(tmp_path, built, lambda manifest: manifest.update(byte_planes=["x"]))


@pytest.mark.parametrize("n_papers", [1, 10_000])  # every term; then those of two papers or more, in 90% at most
def test_counted_words_as_a_term_list_are_the_counted_strings(n_papers):
    from recommender.features.index_features import count_words

    papers = connectors.load(COLLECTION) + connectors.load(EXAMPLE_LIBRARY)
    texts = [paper.title + " " + paper.abstract for paper in papers]
    counts, terms = count_words(texts, n_papers)
    listed_counts, listed = count_words(texts, n_papers, term_list=True)
    assert isinstance(listed, TermList) and listed == terms and listed.terms() == terms
    assert (counts != listed_counts).nnz == 0
    # Only the words its terms use (a pruned vocabulary leaves some out), in order.
    used = {word for term in terms for word in term.split(" ")}
    assert listed.words == sorted(used)
    whole = TermList.from_terms(terms)
    assert whole.words == listed.words and whole == listed and whole.compacted() is whole
