"""litrank's collection index files (``.litrank``): the container of a collection index's parts.

This module knows the file, not the index: :meth:`CollectionIndex.to_parts` gives the metadata
and arrays written here, and :meth:`CollectionIndex.from_parts` rebuilds an index from what
:func:`read_parts` returns (:func:`recommender.ranking.write_index` and
:func:`~recommender.ranking.read_index` join the two).

A ``.litrank`` file is a zip archive of plain data, nothing executable:

* ``manifest.json``: ``{"format": "litrank-index", "format_version": N, "litrank_version",
  "arrays": [names]}``;
* ``metadata.json``: the index's vocabularies, feature layout and embedder, and the papers'
  identity keys (what finding the papers a library already holds compares)
  (``CollectionIndex.to_parts``);
* ``papers.json``: the collection's papers, every field (format 4: one list a field, in the
  order of :class:`~recommender.paper.Paper`'s fields; formats 1-3: one object a paper);
* ``arrays/NAME.npy``: numeric arrays, deflated, read with ``allow_pickle=False``.

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
FORMAT_VERSION = 4
# Format 1 stored the LSA components (k x n_terms) where format 2 stores their basis (n_papers x k);
# format 3 stores count matrices as small integers and column gaps, deflated, without the IDF
# that follows from them (recommender.features.compact_counts: 25 MB -> 8 MB for 3,000 papers);
# format 4 stores the papers as one list a field, not one object a paper (read in half the time).
# The same index, read the same way.
READABLE_VERSIONS = (1, 2, 3, 4)
SUFFIX = ".litrank"
_FIELD_NAMES = [f.name for f in dataclasses.fields(Paper)]
_PAPER_FIELDS = set(_FIELD_NAMES)
_TEXT_FIELDS = ("id", "title", "abstract", "venue")


def is_index_path(source) -> bool:
    """True for a source naming a ``.litrank`` file."""
    return str(source).lower().endswith(SUFFIX)


def write(path: str | Path, metadata: dict, arrays: dict[str, np.ndarray], papers: Sequence[Paper],
          litrank_version: str) -> None:
    """Write an index's parts to ``path`` atomically: ``metadata`` (JSON-ready), numeric
    ``arrays`` by name, the collection's ``papers``, and the litrank version that wrote them."""
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "litrank_version": litrank_version,
                "arrays": sorted(arrays)}
    # One list a field, in the order of Paper's fields (JSON of a few long lists decodes in half
    # the time of an object a paper, and a paper is made from its values in order).
    columns = {name: [getattr(paper, name) for paper in papers] for name in _FIELD_NAMES}

    def write_zip(handle) -> None:
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            archive.writestr("manifest.json", json.dumps(manifest, indent=1))
            archive.writestr("metadata.json", json.dumps(metadata, ensure_ascii=False))
            archive.writestr("papers.json", json.dumps(columns, ensure_ascii=False))
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
                # Deflated at the fastest level: small integers and gaps shrink by a third to a
                # half, and inflating them takes milliseconds.
                archive.writestr(f"arrays/{name}.npy", buffer.getvalue())

    atomic_write_binary(Path(path).expanduser(), write_zip)


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
    if not all(type(value) is str for name in _TEXT_FIELDS for value in columns[name]) \
            or not all(type(value) is list for value in columns["authors"]):
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


def read_parts(path: str | Path) -> tuple[dict, dict[str, np.ndarray], list[Paper]]:
    """``(metadata, arrays, papers)`` stored at ``path``, the container checked (what they hold
    is checked by ``CollectionIndex.from_parts``)."""
    path = Path(path).expanduser()
    archive, manifest = _open(path)
    with archive:
        names = ["papers.json", "metadata.json"] + [f"arrays/{name}.npy" for name in manifest.get("arrays", [])]
        try:
            infos = [archive.getinfo(name) for name in names]
            with open(path, "rb") as handle:
                stored = [_compressed(handle, info) for info in infos]
            # Inflated by two threads (zlib lets go of the interpreter lock; the archive's file
            # is read above, by this thread only) while this one decodes those already done:
            # a third less time than one member after another.
            with ThreadPoolExecutor(2) as pool:
                members = pool.map(_inflated, infos, stored)
                papers = _papers(next(members), path)
                metadata = json.loads(next(members))
                # np.load refuses object arrays (pickles) with a ValueError: they never run.
                arrays = {name[len("arrays/"):-len(".npy")]: np.load(io.BytesIO(data), allow_pickle=False)
                          for name, data in zip(names[2:], members)}
        except SourceError:
            raise
        except (KeyError, ValueError, zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise SourceError(f"{path}: damaged litrank index ({exc})") from None
    if not isinstance(metadata, dict):
        raise SourceError(f"{path}: damaged litrank index (metadata.json holds no object)")
    return metadata, arrays, papers
