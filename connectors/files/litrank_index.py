"""litrank's collection index files (``.litrank``): the container of a collection index's parts.

This module knows the file, not the index: :meth:`CollectionIndex.to_parts` gives the metadata
and arrays written here, and :meth:`CollectionIndex.from_parts` rebuilds an index from what
:func:`read_parts` returns (:func:`recommender.ranking.write_index` and
:func:`~recommender.ranking.read_index` join the two).

A ``.litrank`` file is a zip archive of plain data, nothing executable:

* ``manifest.json``: ``{"format": "litrank-index", "format_version": N, "litrank_version",
  "arrays": [names], "byte_planes": {name: {"dtype", "shape"}}}``;
* ``metadata.json``: the index's vocabularies, feature layout and embedder, and the papers'
  identity keys (what finding the papers a library already holds compares)
  (``CollectionIndex.to_parts``);
* ``papers.json``: the collection's papers, every field (format 4: one list a field, in the
  order of :class:`~recommender.paper.Paper`'s fields; formats 1-3: one object a paper);
* ``arrays/NAME.npy``: numeric arrays of bytes, read with ``allow_pickle=False``;
* ``planes/NAME.npy`` (format 5; before it, ``arrays/``): numeric arrays of wider numbers, as
  byte planes (an array of bytes, a row per byte of the numbers: :func:`_byte_planes`), made
  again with the dtype and shape the manifest gives.

Every member is deflated.

Reading checks the container (a zip holding a litrank manifest), the format version, and
then the index itself (feature layout, shapes): a file from another program, a damaged file,
or one written by a litrank with another format or feature layout is refused with a
:class:`~connectors.errors.SourceError` naming the problem.
"""
from __future__ import annotations

import dataclasses
import io
import json
import struct
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np

from connectors._io import atomic_write_binary
from connectors.errors import SourceError
from recommender.paper import Paper

FORMAT = "litrank-index"
FORMAT_VERSION = 5
# Format 1 stored the LSA components (k x n_terms) where format 2 stores their basis (n_papers x k);
# format 3 stores count matrices as small integers and column gaps, deflated, without the IDF
# that follows from them (recommender.features.compact_counts: 25 MB -> 8 MB for 3,000 papers);
# format 4 stores the papers as one list a field, not one object a paper (read in half the time).
# format 5 stores arrays of numbers wider than a byte as byte planes (see _byte_planes), the word
# vocabulary as its words and positions among them (recommender.features.term_list), all deflated
# at the default level (11.2 MB -> 8.9 MB for 3,000 papers).
# The same index, read the same way.
READABLE_VERSIONS = (1, 2, 3, 4, 5)
SUFFIX = ".litrank"
_FIELD_NAMES = [f.name for f in dataclasses.fields(Paper)]
_PAPER_FIELDS = set(_FIELD_NAMES)
_TEXT_FIELDS = ("id", "title", "abstract", "venue")
_ARRAYS, _PLANES = "arrays/", "planes/"  # the members of arrays stored as they are, and as byte planes


def is_index_path(source) -> bool:
    """True for a source naming a ``.litrank`` file."""
    return str(source).lower().endswith(SUFFIX)


def write(path: str | Path, metadata: dict, arrays: dict[str, np.ndarray], papers: Sequence[Paper],
          litrank_version: str) -> None:
    """Write an index's parts to ``path`` atomically: ``metadata`` (JSON-ready), numeric
    ``arrays`` by name, the collection's ``papers``, and the litrank version that wrote them."""
    arrays = {name: np.asarray(array) for name, array in arrays.items()}
    # What makes each array of wider numbers again; its planes are made as it is written, one at a time.
    planes = {name: {"dtype": array.dtype.newbyteorder("<").str, "shape": list(array.shape)}
              for name, array in arrays.items() if array.dtype.itemsize > 1}
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "litrank_version": litrank_version,
                "arrays": sorted(arrays), "byte_planes": planes}
    # One list a field, in the order of Paper's fields (JSON of a few long lists decodes in half
    # the time of an object a paper, and a paper is made from its values in order).
    columns = {name: [getattr(paper, name) for paper in papers] for name in _FIELD_NAMES}

    def write_zip(handle) -> None:
        # Deflated at zlib's default level: text a fifth smaller than at the fastest, counts and
        # gaps a tenth, for 0.3 s more to write 3,000 papers (inflating takes no longer). Floats
        # (embeddings, topics) gain under 1% there: they take the fastest level.
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            archive.writestr("manifest.json", json.dumps(manifest, indent=1))
            # Pure ASCII, other characters escaped: one accent in 5 MB of UTF-8 sends decoding
            # down its slow path (3,000 papers: 18 ms to decode, 5 ms as ASCII; deflated, the same size).
            archive.writestr("metadata.json", json.dumps(metadata))
            archive.writestr("papers.json", json.dumps(columns))
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, _byte_planes(array) if name in planes else np.ascontiguousarray(array),
                        allow_pickle=False)
                archive.writestr(f"{_PLANES if name in planes else _ARRAYS}{name}.npy", buffer.getvalue(),
                                 compresslevel=1 if array.dtype.kind == "f" else 6)

    atomic_write_binary(Path(path).expanduser(), write_zip)


def _byte_planes(array) -> np.ndarray:
    """The array's bytes as one row per byte of its values (all first bytes, then all second
    bytes...), little-endian: shape ``(itemsize, size)``, uint8.

    Deflate finds what numbers share in their high bytes only when those bytes sit together:
    stored so, float32 embeddings deflate to 8% fewer bytes and 16-bit column gaps to 18% fewer
    (shuffling, as HDF5's and Blosc's filters do).
    """
    little = np.ascontiguousarray(array).astype(np.asarray(array).dtype.newbyteorder("<"), copy=False)
    return np.ascontiguousarray(little.reshape(-1).view(np.uint8).reshape(-1, little.dtype.itemsize).T)


def _from_byte_planes(planes: np.ndarray, spec) -> np.ndarray:
    """The array :func:`_byte_planes` stored; ValueError when the planes and ``spec`` disagree."""
    if not isinstance(spec, dict) or not isinstance(spec.get("dtype"), str) or not isinstance(spec.get("shape"), list) \
            or not all(isinstance(n, int) and n >= 0 for n in spec["shape"]):
        raise ValueError("its byte planes are described wrongly")
    dtype = np.dtype(spec["dtype"])
    if dtype.kind not in "biuf" or dtype.itemsize < 2:
        raise ValueError(f"byte planes of {dtype}, not of numbers")
    if planes.dtype != np.uint8 or planes.shape != (dtype.itemsize, int(np.prod(spec["shape"], dtype=np.int64))):
        raise ValueError("its byte planes do not hold the array they describe")
    values = np.empty((planes.shape[1], dtype.itemsize), dtype=np.uint8)
    for byte, plane in enumerate(planes):  # a plane at a time: 3-5 times faster than one transposing copy
        values[:, byte] = plane
    return values.view(dtype).reshape(spec["shape"])


def _paper(record, path: Path) -> Paper:
    if not isinstance(record, dict) or set(record) - _PAPER_FIELDS or "id" not in record:
        raise SourceError(f"{path}: damaged litrank index (a paper record has unexpected fields)")
    paper = Paper(**record)
    if not all(isinstance(getattr(paper, name), str) for name in ("id", "title", "abstract", "venue")) \
            or not isinstance(paper.authors, list):
        raise SourceError(f"{path}: damaged litrank index (a paper record has fields of the wrong type)")
    return paper


def _open(path: Path) -> tuple[zipfile.ZipFile, dict]:
    """The archive and its manifest, both checked."""
    if not path.is_file():
        raise SourceError(f"{path}: no such file")
    try:
        archive = zipfile.ZipFile(path)
        manifest = json.loads(archive.read("manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError):
        raise SourceError(f"{path}: not a litrank index (build one with `litrank index COLLECTION -o "
                          f"{path.name}`)") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SourceError(f"{path}: not a litrank index (its manifest names another format)")
    version = manifest.get("format_version")
    if version not in READABLE_VERSIONS:
        raise SourceError(f"{path}: litrank index format {version}, but this litrank reads formats "
                          f"{', '.join(map(str, READABLE_VERSIONS))}; rebuild it with `litrank index`")
    arrays = manifest.get("arrays", [])
    if not isinstance(arrays, list) or not all(isinstance(name, str) for name in arrays):
        raise SourceError(f"{path}: damaged litrank index (its manifest lists no arrays)")
    return archive, manifest


def _papers(data: bytes, path: Path) -> list[Paper]:
    try:
        records = json.loads(data)
    except ValueError as exc:
        raise SourceError(f"{path}: damaged litrank index ({exc})") from None
    if isinstance(records, dict):  # format 4: one list a field
        return _papers_of_columns(records, path)
    if not isinstance(records, list):
        raise SourceError(f"{path}: damaged litrank index (papers.json holds no list)")
    return [_paper(record, path) for record in records]  # formats 1-3: one object a paper


def _papers_of_columns(columns: dict, path: Path) -> list[Paper]:
    """The papers of format 4's ``papers.json``: every field of Paper, a list of one value a paper."""
    if set(columns) != _PAPER_FIELDS:
        raise SourceError(f"{path}: damaged litrank index (papers.json names other fields than a paper's)")
    ordered = [columns[name] for name in _FIELD_NAMES]
    if not all(isinstance(values, list) for values in ordered) or len({len(values) for values in ordered}) > 1:
        raise SourceError(f"{path}: damaged litrank index (papers.json holds no list a field, all of one length)")
    # The types of a column's values as a set (map in C: a quarter of the time of a Python loop).
    if not set().union(*(map(type, columns[name]) for name in _TEXT_FIELDS)) <= {str} \
            or not set(map(type, columns["authors"])) <= {list}:
        raise SourceError(f"{path}: damaged litrank index (a paper record has fields of the wrong type)")
    return [Paper(*values) for values in zip(*ordered)]


def read_papers(path: str | Path) -> list[Paper]:
    """Only the collection's papers of a ``.litrank`` file (for commands that need no ranking)."""
    path = Path(path).expanduser()
    archive, _ = _open(path)
    with archive:
        try:
            data = archive.read("papers.json")
        except (KeyError, zipfile.BadZipFile, OSError) as exc:
            raise SourceError(f"{path}: damaged litrank index ({exc})") from None
    return _papers(data, path)


def _compressed(handle, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes as stored (zip's local header skipped), read from the archive's file."""
    handle.seek(info.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04" or info.flag_bits & 0x1:
        raise zipfile.BadZipFile(f"member {info.filename} has no readable local header")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    data = handle.read(info.compress_size)
    if len(data) != info.compress_size:
        raise zipfile.BadZipFile(f"member {info.filename} is truncated")
    return data


def _inflated(info: zipfile.ZipInfo, data: bytes) -> bytes:
    """The member's bytes, inflated and checked against its CRC-32, as ``ZipFile.read`` checks."""
    if info.compress_type == zipfile.ZIP_DEFLATED:
        data = zlib.decompress(data, -15)
    elif info.compress_type != zipfile.ZIP_STORED:
        raise zipfile.BadZipFile(f"member {info.filename} is compressed in a way litrank does not write")
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
    return data


def array_member(manifest: dict, name: str) -> str:
    """The archive member that holds array ``name`` of a file with this manifest."""
    return f"{_PLANES if name in manifest.get('byte_planes', {}) else _ARRAYS}{name}.npy"


def _member(info: zipfile.ZipInfo, data: bytes, planes=None):
    """A member's bytes inflated, or for an array (``.npy``) the array, made again from its byte
    planes when described by ``planes``."""
    data = _inflated(info, data)
    if not info.filename.endswith(".npy"):
        return data
    array = np.load(io.BytesIO(data), allow_pickle=False)  # refuses object arrays (pickles): they never run
    return array if planes is None else _from_byte_planes(array, planes)


def read_parts(path: str | Path) -> tuple[dict, dict[str, np.ndarray], list[Paper]]:
    """``(metadata, arrays, papers)`` stored at ``path``, the container checked (what they hold
    is checked by ``CollectionIndex.from_parts``)."""
    path = Path(path).expanduser()
    archive, manifest = _open(path)
    with archive:
        array_names = manifest.get("arrays", [])
        planes = manifest.get("byte_planes", {})  # format 5
        if not isinstance(planes, dict):
            raise SourceError(f"{path}: damaged litrank index (its manifest lists byte planes wrongly)")
        names = ["papers.json", "metadata.json"] + [array_member(manifest, name) for name in array_names]
        try:
            infos = [archive.getinfo(name) for name in names]
            with open(path, "rb") as handle:
                stored = [_compressed(handle, info) for info in infos]
            # Inflated (and arrays made) by two threads (zlib and numpy's copies let go of the
            # interpreter lock; the archive's file is read above, by this thread only) while this
            # one decodes those already done: a third less time than one member after another.
            with ThreadPoolExecutor(2) as pool:
                members = pool.map(_member, infos, stored, [None, None] + [planes.get(name) for name in array_names])
                papers = _papers(next(members), path)
                metadata = json.loads(next(members))
                arrays = dict(zip(array_names, members))
        except SourceError:
            raise
        except (KeyError, ValueError, zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise SourceError(f"{path}: damaged litrank index ({exc})") from None
    if not isinstance(metadata, dict):
        raise SourceError(f"{path}: damaged litrank index (metadata.json holds no object)")
    return metadata, arrays, papers
