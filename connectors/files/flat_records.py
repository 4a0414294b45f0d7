"""Mapping between flat records (JSON objects, CSV rows) and Paper, shared by json and csv."""
from __future__ import annotations

import re
from typing import Any, Mapping

from connectors.errors import SourceError
from recommender.paper import Paper
from recommender.text import abstract_fingerprint, find_arxiv_id

# Accepted spellings of each Paper field, first match wins. The first spelling of each
# list is the one written on export; the others are what other tools (Zotero CSV export,
# OpenReview dumps, our own conference lists) call it.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "key", "Key", "paper_id", "ID"),
    "title": ("title", "Title"),
    "abstract": ("abstract", "Abstract Note", "abstractNote", "summary"),
    "authors": ("authors", "author", "Author", "creators"),
    "year": ("year", "Publication Year", "date", "Date"),
    "venue": ("venue", "Publication Title", "publicationTitle", "booktitle", "journal", "proceedingsTitle"),
    "doi": ("doi", "DOI"),
    "arxiv_id": ("arxiv_id", "arxiv", "arxivId", "eprint"),
    "url": ("url", "Url", "URL", "site", "pdf", "github"),
    "keywords": ("keywords", "Manual Tags", "tags"),
    "date_added": ("date_added", "dateAdded", "Date Added"),
    "title_derived": ("title_derived",),
    "entry_type": ("entry_type", "Item Type", "itemType"),
}
_CONSUMED = {alias for aliases in FIELD_ALIASES.values() for alias in aliases}
# Large, derived or review-process values that are no bibliographic field of the paper.
_NOT_KEPT = {"bibtex", "rank", "score", "because", "terms", "status", "track"}
_YEAR_RE = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d|21\d\d)(?!\d)")


def _first(record: Mapping[str, Any], name: str) -> Any:
    for alias in FIELD_ALIASES[name]:
        value = record.get(alias)
        if value not in (None, "", []):
            return value
    return None


def _split_list(value: Any, separators: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if isinstance(item, str):  # (the common case, tested first: a Mapping test costs ~1 µs)
                items.append(item)
            elif isinstance(item, Mapping):  # Zotero-style creator objects
                name = item.get("name") or " ".join(
                    part for part in (item.get("firstName"), item.get("lastName")) if part
                )
                items.append(str(name))
            else:
                items.append(str(item))
        return [item.strip() for item in items if item and str(item).strip()]
    text = str(value)
    for separator in separators:
        if separator in text:
            return [part.strip() for part in text.split(separator) if part.strip()]
    return [text.strip()] if text.strip() else []


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "y"}
    return bool(value)


def paper_from_record(record: Mapping[str, Any], source: str, position: str) -> Paper:
    """Build a Paper from one flat record; ``position`` ("line 12", "row 3") is for messages."""
    if not isinstance(record, (dict, Mapping)):
        raise SourceError(f"{source}: {position}: expected an object with paper fields, got {type(record).__name__}")
    for name in ("title", "abstract"):
        value = _first(record, name)
        if value is not None and not isinstance(value, str):  # "title": 123 is a mistake, not a title
            raise SourceError(f"{source}: {position}: {name} must be text, not {type(value).__name__} {value!r}")
    title = str(_first(record, "title") or "").strip()
    abstract = str(_first(record, "abstract") or "").strip()
    if not title and not abstract:
        raise SourceError(f"{source}: {position}: record has neither a title nor an abstract")
    year_value = _first(record, "year")
    year_match = _YEAR_RE.search(str(year_value)) if year_value is not None else None
    url = str(_first(record, "url") or "")
    arxiv = str(_first(record, "arxiv_id") or "")
    fields = {
        str(key): str(value)
        for key, value in record.items()
        if (key not in _CONSUMED or key == "pdf") and key not in _NOT_KEPT  # the PDF link is kept beside url
        and isinstance(value, (str, int, float)) and str(value).strip()
    }
    return Paper(
        id=str(_first(record, "id") or ""),
        title=title,
        abstract=abstract,
        authors=_split_list(_first(record, "authors"), ";"),
        year=int(year_match.group(1)) if year_match else None,
        venue=str(_first(record, "venue") or "").strip(),
        doi=str(_first(record, "doi") or ""),
        arxiv_id=find_arxiv_id(arxiv, url, str(record.get("doi") or "")) or arxiv.strip(),
        url=url.strip(),
        keywords=_split_list(_first(record, "keywords"), ";,"),
        date_added=str(_first(record, "date_added")) if _first(record, "date_added") else None,
        source=source,
        title_derived=_as_bool(_first(record, "title_derived")),
        entry_type=str(_first(record, "entry_type") or ""),
        fields=fields,
    )


def record_from_paper(paper: Paper) -> dict[str, Any]:
    """The flat record written for a paper: every non-empty field, extras last."""
    record: dict[str, Any] = {"id": paper.id, "title": paper.title}
    if paper.title_derived:
        record["title_derived"] = True
    for name in ("authors", "abstract", "year", "venue", "doi", "arxiv_id", "url", "keywords", "date_added", "entry_type"):
        value = getattr(paper, name)
        if value not in (None, "", []):
            record[name] = value
    for key, value in paper.fields.items():
        record.setdefault(key, value)
    return record


def fill_missing_ids(papers: list[Paper], prefix: str) -> None:
    """Give papers without an id one derived from their identity, unique within the list."""
    seen = {paper.id for paper in papers if paper.id}
    for paper in papers:
        if paper.id:
            continue
        base = f"{prefix}-{abstract_fingerprint(paper.identity)[:10]}"
        candidate, n = base, 2
        while candidate in seen:
            candidate, n = f"{base}-{n}", n + 1
        paper.id = candidate
        seen.add(candidate)


def exact_title_match(candidates, title: str, first_author: str = ""):
    """The first of ``candidates`` (Papers) whose normalised title is ``title``'s and, when
    ``first_author`` is given and the candidate lists authors, whose first author has the same
    surname; None when there is none: a near match is no match."""
    from recommender.text import normalize_title, surname

    wanted = normalize_title(title)
    for paper in candidates:
        if not wanted or normalize_title(paper.title) != wanted:
            continue
        if first_author and paper.authors and surname(paper.authors[0]) != surname(first_author):
            continue
        return paper
    return None
