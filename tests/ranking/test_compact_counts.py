"""Index format 3: count matrices stored as small integers and column gaps, IDFs made again on
reading; format-2 files still read; damaged count arrays refused."""
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
from recommender.ranking import read_index, write_index
from tests.conftest import DATA, EXAMPLE_LIBRARY

COLLECTION = DATA / "report-collection.jsonl"
MATRICES = ("word_counts", "char_counts", "title_counts")


@pytest.fixture(scope="module")
def built():
    return CollectionIndexBuilder().build(connectors.load(COLLECTION) + connectors.load(EXAMPLE_LIBRARY))


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(path) as archive:
        return {name[len("arrays/"):-len(".npy")]: np.load(io.BytesIO(archive.read(name)), allow_pickle=False)
                for name in archive.namelist() if name.startswith("arrays/")}


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
        kinds = {info.compress_type for info in archive.infolist() if info.filename.startswith("arrays/")}
    assert manifest["format_version"] == litrank_index.FORMAT_VERSION == 4 and kinds == {zipfile.ZIP_DEFLATED}
    stored = _arrays(path)
    assert not {"word_idf", "char_idf", "title_idf"} & set(stored)
    assert not any(name.endswith((".data", ".indices", ".indptr")) for name in stored)
    assert isinstance(metadata["word_terms"], str)
    loaded = read_index(path)
    assert loaded.word_terms == built.word_terms
    for name in MATRICES:
        assert (getattr(loaded, name) != getattr(built, name)).nnz == 0
    for idf in ("word_idf", "char_idf", "title_idf"):
        np.testing.assert_array_equal(getattr(loaded, idf), getattr(built, idf))


def _as_format_2(built, path: Path) -> Path:
    """``built`` written the way format 2 wrote it: float32 CSR arrays and IDFs, stored, and
    the word vocabulary as a list."""
    metadata, arrays = built.to_parts()
    metadata["word_terms"] = list(built.word_terms)
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
    members["manifest.json"] = json.dumps(manifest).encode()
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
    buffer = io.BytesIO()
    np.save(buffer, gaps)
    damaged = tmp_path / "damaged.litrank"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for name in source.namelist():
            target.writestr(name, buffer.getvalue() if name == "arrays/char_counts.gaps.npy" else source.read(name))
    result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(damaged), "-n", "3"])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("Error: ") and len(message.splitlines()) == 1
    assert "inconsistent" in message and "char_counts" in message


def test_a_member_damaged_inside_is_refused_in_one_line(tmp_path, built):
    path = tmp_path / "x.litrank"
    write_index(built, path)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("arrays/char_counts.gaps.npy")
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


def test_a_manifest_without_a_list_of_arrays_is_refused_in_one_line(tmp_path, built):
    path = tmp_path / "x.litrank"
    write_index(built, path)
    with zipfile.ZipFile(path) as source:
        members = {name: source.read(name) for name in source.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["arrays"] = "word_counts.counts"
    members["manifest.json"] = json.dumps(manifest).encode()
    damaged = tmp_path / "damaged.litrank"
    with zipfile.ZipFile(damaged, "w") as target:
        for name, data in members.items():
            target.writestr(name, data)
    result = CliRunner().invoke(main, ["rank", "-l", str(EXAMPLE_LIBRARY), "-c", str(damaged), "-n", "3"])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "damaged litrank index" in message and "arrays" in message
