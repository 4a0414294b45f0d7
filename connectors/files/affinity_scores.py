"""Affinity scores out: one row per (profile, paper), written a block at a time.

Formats:

* ``csv``: a header and ``profile_id,paper_id,rank,score`` rows (rank 1 is the profile's best);
* ``openreview``: openreview-expertise's score file, no header, ``submission_id,reviewer_id,score``
  rows (the paper first, then the profile, as its models write them and as
  ``setup_committee_matching(compute_affinity_scores=FILE)`` reads them);
* ``parquet``: the csv's columns, typed (needs pyarrow: ``pip install 'litrank[parquet]'``), one
  row group per block.

Blocks come from an iterator, so no more than one block is ever held here; every format is
written to a temporary file renamed over the target at the end (atomic). Scores are written
with all their digits (``repr`` of the float), so a file reproduces the scores exactly.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from connectors._io import atomic_write_binary, atomic_write_text
from connectors.errors import SourceError

FORMATS = ("csv", "openreview", "parquet")
CSV_COLUMNS = ("profile_id", "paper_id", "rank", "score")
PARQUET_HINT = "writing parquet needs pyarrow: pip install 'litrank[parquet]' (or write .csv)"


@dataclass
class ScoreBlock:
    """The scores of one profile (or a part of them): ``paper_ids[i]`` scored ``scores[i]``, ranked ``ranks[i]``."""

    profile_id: str
    paper_ids: Sequence[str]
    scores: np.ndarray
    ranks: np.ndarray


def format_for(path: str | Path, requested: str | None = None) -> str:
    """The output format: ``requested``, else from the extension (``.csv``, ``.parquet``)."""
    suffix = Path(path).suffix.lower()
    implied = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}.get(suffix)
    if requested:
        if requested == "parquet" and implied not in (None, "parquet") or implied == "parquet" != requested:
            raise SourceError(f"--format {requested} contradicts the extension of {path}")
        return requested
    if implied is None:
        raise SourceError(f"{path}: cannot tell the format from the extension; use .csv or .parquet, or --format "
                          f"({', '.join(FORMATS)})")
    return implied


def parquet_available() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def write_scores(path: str | Path, blocks: Iterable[ScoreBlock], format: str) -> int:
    """Write every block to ``path`` in ``format``; returns the number of rows written."""
    path = Path(path).expanduser()
    if format not in FORMATS:
        raise SourceError(f"unknown score format {format!r}; choose from {', '.join(FORMATS)}")
    counter = _Counter(blocks)
    if format == "parquet":
        _write_parquet(path, counter)
    else:
        atomic_write_text(path, _csv_pieces(counter, header=format == "csv", openreview=format == "openreview"))
    return counter.rows


class _Counter:
    def __init__(self, blocks: Iterable[ScoreBlock]):
        self.blocks, self.rows = blocks, 0

    def __iter__(self) -> Iterator[ScoreBlock]:
        for block in self.blocks:
            self.rows += len(block.paper_ids)
            yield block


def _csv_pieces(blocks: Iterable[ScoreBlock], header: bool, openreview: bool) -> Iterator[str]:
    if header:
        yield ",".join(CSV_COLUMNS) + "\r\n"
    for block in blocks:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        scores = [repr(float(score)) for score in block.scores]
        if openreview:
            writer.writerows(zip(block.paper_ids, [block.profile_id] * len(scores), scores))
        else:
            writer.writerows(zip([block.profile_id] * len(scores), block.paper_ids,
                                 (int(rank) for rank in block.ranks), scores))
        yield buffer.getvalue()


def _write_parquet(path: Path, blocks: Iterable[ScoreBlock]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SourceError(PARQUET_HINT) from None
    schema = pa.schema([("profile_id", pa.string()), ("paper_id", pa.string()), ("rank", pa.int32()),
                        ("score", pa.float64())])

    def write(handle) -> None:
        with pq.ParquetWriter(handle, schema) as writer:
            for block in blocks:
                writer.write_table(pa.table({
                    "profile_id": pa.array([block.profile_id] * len(block.paper_ids), pa.string()),
                    "paper_id": pa.array(list(block.paper_ids), pa.string()),
                    "rank": pa.array(np.asarray(block.ranks, dtype=np.int32)),
                    "score": pa.array(np.asarray(block.scores, dtype=np.float64))}, schema=schema))

    atomic_write_binary(path, write)
