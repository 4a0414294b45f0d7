"""JSON Lines and JSON: one paper per object, with the fields of ``../shared/data/conferences``.

Reads ``.jsonl``/``.ndjson`` (one object per line) and ``.json`` (a list of objects, or an
object holding the list under ``papers``, ``items``, ``recommendations`` or ``data``), either
optionally gzip-compressed. Field names follow the conference lists (title, authors,
abstract, venue, year, url, doi, keywords, ...); common alternatives are accepted.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable, Sequence

from connectors._io import NotUtf8, atomic_write_text, iter_utf8_lines, read_text
from connectors.errors import SourceError
from connectors.files.flat_records import fill_missing_ids, paper_from_record, record_from_paper
from recommender.paper import Paper

_LIST_KEYS = ("papers", "items", "recommendations", "data", "results")
log = logging.getLogger("litrank")


def _id_prefix(path: Path) -> str:
    return path.name.split(".")[0] or "paper"


def loads(text: str, source: str = "<string>", lines: bool | None = None) -> list[Paper]:
    """Parse JSON or JSON Lines text. ``lines`` forces JSON Lines (default: guess)."""
    stripped = text.lstrip()
    if lines is None:
        lines = not stripped.startswith("[") and not _is_single_document(stripped)
    if lines:
        return _papers_from_lines(text.split("\n"), source)  # ("\n" alone: U+2028 inside a string is no break)
    try:
        document = json.loads(text) if stripped else []
    except json.JSONDecodeError as exc:
        raise SourceError(f"{source}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if isinstance(document, dict):
        document = next((document[key] for key in _LIST_KEYS if isinstance(document.get(key), list)), [document])
    if not isinstance(document, list):
        raise SourceError(f"{source}: expected a list of paper objects")
    records = [(record, f"item {index}") for index, record in enumerate(document, start=1)]
    return [paper_from_record(record, source, position) for record, position in records]


def _papers_from_lines(lines: Iterable[str], source: str) -> list[Paper]:
    """One paper per JSON line. One broken line must not sink the others: it is reported with
    its number and skipped (the reports are made once all lines are read)."""
    papers, skipped = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            papers.append(paper_from_record(json.loads(line), source, f"line {number}"))
        except json.JSONDecodeError as exc:
            skipped.append(f"{source}:{number}: invalid JSON ({exc.msg}); line skipped")
        except SourceError as exc:
            skipped.append(f"{exc}; line skipped")
    for message in skipped:
        log.warning("%s", message)
    if skipped and not papers:
        raise SourceError(f"{source}: no readable paper ({len(skipped)} broken line{'s' if len(skipped) > 1 else ''})")
    return papers


def _is_single_document(text: str) -> bool:
    if not text.startswith("{"):
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def load(path: Path) -> list[Paper]:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".json"):
        papers = loads(read_text(path), str(path))
    else:
        try:  # a line at a time: a large collection is never held whole as text
            papers = _papers_from_lines(iter_utf8_lines(path), str(path))
        except NotUtf8:  # (a legacy encoding: decided on the whole file, as read_text does)
            papers = loads(read_text(path), str(path), lines=True)
    fill_missing_ids(papers, _id_prefix(path))
    return papers


def dumps(papers: Sequence[Paper], format: str = "jsonl") -> str:
    """Serialise papers as JSON Lines (``format="jsonl"``) or an indented JSON list."""
    records = [record_from_paper(paper) for paper in papers]
    if format == "json":
        return json.dumps(records, ensure_ascii=False, indent=2) + "\n"
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def dump(papers: Sequence[Paper], path: Path) -> None:
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith(".json"):
        atomic_write_text(Path(path), dumps(papers, "json"))
    else:  # a line at a time: a large collection is never held twice as text
        atomic_write_text(Path(path), (json.dumps(record_from_paper(paper), ensure_ascii=False) + "\n"
                                       for paper in papers))
