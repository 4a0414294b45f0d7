"""CSV and TSV: one paper per row, columns named like the JSON fields.

Lists (authors, keywords) are written joined with ``"; "`` and split on ``;`` when read.
Zotero's own CSV export columns (Title, Author, Abstract Note, Publication Year, ...) are
recognised as well.
"""
from __future__ import annotations

import csv
import io
import logging
from pathlib import Path
from typing import Sequence

from connectors._io import atomic_write_text, read_text
from connectors.errors import NOTICE, SourceError
from connectors.files.flat_records import FIELD_ALIASES, fill_missing_ids, paper_from_record, record_from_paper
from recommender.paper import Paper

log = logging.getLogger("litrank")
COLUMNS = ["id", "title", "title_derived", "authors", "year", "venue", "doi", "arxiv_id", "url", "keywords", "date_added", "abstract"]


def loads(text: str, source: str = "<string>", delimiter: str = ",") -> list[Paper]:
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    if not reader.fieldnames:
        return []
    text_columns = set(FIELD_ALIASES["title"]) | set(FIELD_ALIASES["abstract"])
    header = [name.strip() for name in reader.fieldnames if name and name.strip()]
    if not text_columns & set(header):
        raise SourceError(f"{source}: no title or abstract column (the header has "
                          f"{', '.join(header)}); name one 'title' or 'abstract'")
    _say_columns(header, source)
    lines: list[str] = []  # the file's lines, as the csv module counts them; split only when a row spans several
    papers = []
    previous = reader.line_num
    try:
        for row in reader:
            first, last, previous = previous + 1, reader.line_num, reader.line_num
            # A row over several lines with an odd number of quotes: one never closed, and the
            # csv module read everything after it, to the end of the file, as one cell.
            if last > first and not lines:
                lines = io.StringIO(text, newline="").readlines()
            if last > first and "".join(lines[first - 1:last]).count('"') % 2:
                log.warning("%s: line %d: a quote opened on this line is never closed, so lines %d-%d were read "
                            "as one row; close the quote", source, first, first, last)
            if not any((value or "").strip() for value in row.values() if isinstance(value, str)):
                continue
            row.pop(None, None)  # cells beyond the header
            try:
                papers.append(paper_from_record(row, source, f"line {first}"))
            except SourceError as exc:  # one bad row must not sink the others
                log.warning("%s; row skipped", exc)
    except csv.Error as exc:
        raise SourceError(f"{source}: line {reader.line_num}: malformed CSV ({exc})") from None
    return papers


def _say_columns(header: list[str], source: str) -> None:
    """Which columns the ranking reads, when the file has others (kept as fields, not read)."""
    known = {alias: field for field, aliases in FIELD_ALIASES.items() for alias in aliases}
    others = [name for name in header if name not in known]
    if others:
        used = ", ".join(name for name in header if name in known)
        log.log(NOTICE, "%s: read columns %s; %s kept as extra fields (not ranked on)", source, used,
                ", ".join(others))


def load(path: Path) -> list[Paper]:
    delimiter = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
    papers = loads(read_text(path), str(path), delimiter)
    fill_missing_ids(papers, path.name.split(".")[0] or "paper")
    return papers


def dumps(papers: Sequence[Paper], delimiter: str = ",") -> str:
    records = [record_from_paper(paper) for paper in papers]
    extra = sorted({key for record in records for key in record} - set(COLUMNS))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS + extra, delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({key: "; ".join(value) if isinstance(value, list) else value for key, value in record.items()})
    return buffer.getvalue()


def dump(papers: Sequence[Paper], path: Path) -> None:
    delimiter = "\t" if Path(path).name.lower().removesuffix(".gz").endswith(".tsv") else ","
    atomic_write_text(Path(path), dumps(papers, delimiter))
