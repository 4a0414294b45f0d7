"""Zotero item JSON (the Web API's ``data`` object) to :class:`Paper`, shared by every Zotero reader.

The local-database reader builds the same ``data`` dictionaries from ``zotero.sqlite``, so
all readers go through :func:`paper_from_item` and yield identical records for the same
library. Field names are Zotero's (``itemType``, ``abstractNote``, ``publicationTitle``...).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from recommender.feedback import LITRANK_TAG, TRASHED
from recommender.paper import Paper
from recommender.text import find_arxiv_id

# Item types that are not papers of the library: they are attached to or annotate one.
NON_PAPER_TYPES = frozenset({"attachment", "note", "annotation"})
# Where each item type keeps its venue, in order of preference.
VENUE_FIELDS = ("proceedingsTitle", "publicationTitle", "conferenceName", "bookTitle", "repository",
                "websiteTitle", "university", "institution", "publisher", "blogTitle", "forumTitle",
                "programmingLanguage")
# Fields mapped to Paper attributes; every other non-empty string field goes to Paper.fields.
_MAPPED = {"key", "version", "itemType", "title", "creators", "abstractNote", "date", "DOI", "url", "extra",
           "tags", "collections", "relations", "dateAdded", "dateModified", "archiveID", "deleted", *VENUE_FIELDS}

_YEAR_RE = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d|21\d\d)(?!\d)")
_EXTRA_DOI_RE = re.compile(r"^DOI:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def is_litrank_item_data(data: Mapping[str, Any]) -> bool:
    """True for the ``data`` of an item litrank created (tagged ``litrank``)."""
    return any(str(tag.get("tag", "")).lower() == LITRANK_TAG for tag in data.get("tags") or ())


def creator_name(creator: Mapping[str, Any]) -> str:
    """ "First Last" for a two-field creator, the single ``name`` otherwise."""
    if creator.get("name"):
        return str(creator["name"]).strip()
    return " ".join(part for part in (str(creator.get("firstName") or "").strip(),
                                      str(creator.get("lastName") or "").strip()) if part)


def paper_from_item(data: Mapping[str, Any], source: str, collection_paths: Sequence[str] = ()) -> Paper | None:
    """The Paper of one Zotero item's ``data``; None for attachments, notes and annotations.

    ``collection_paths`` are the item's collections as slash-joined paths from the library
    root ("Reading/ML"), kept in ``fields["collections"]`` (one per line).
    """
    item_type = str(data.get("itemType") or "")
    if item_type in NON_PAPER_TYPES:
        return None
    authors = [creator_name(c) for c in data.get("creators") or [] if c.get("creatorType", "author") == "author"]
    if not authors:  # editors, presenters... when no author is listed
        authors = [creator_name(c) for c in data.get("creators") or []]
    date = str(data.get("date") or "")
    year_match = _YEAR_RE.search(date)
    extra = str(data.get("extra") or "")
    url = str(data.get("url") or "")
    doi = str(data.get("DOI") or "") or next(iter(_EXTRA_DOI_RE.findall(extra)), "")
    venue = next((str(data[f]).strip() for f in VENUE_FIELDS if str(data.get(f) or "").strip()), "")
    fields = {name: str(value) for name, value in data.items()  # bools (inPublications) are flags, not fields
              if name not in _MAPPED and isinstance(value, (str, int, float)) and not isinstance(value, bool)
              and str(value).strip()}
    if extra.strip():
        fields["extra"] = extra
    if collection_paths:
        fields["collections"] = "\n".join(sorted(collection_paths))
    if data.get("deleted"):  # 1 or true in the API's JSON
        fields[TRASHED] = "true"
    return Paper(
        id=str(data.get("key") or ""),
        title=str(data.get("title") or "").strip(),
        abstract=str(data.get("abstractNote") or "").strip(),
        authors=[a for a in authors if a],
        year=int(year_match.group(1)) if year_match else None,
        venue=venue,
        doi=doi,
        arxiv_id=find_arxiv_id(str(data.get("archiveID") or ""), url, extra, doi,
                               str(data.get("publicationTitle") or ""), str(data.get("repository") or "")),
        url=url,
        # Sorted: the API returns tags in no promised order, the database in its own.
        keywords=sorted({str(tag.get("tag")) for tag in data.get("tags") or [] if tag.get("tag")}),
        date_added=str(data.get("dateAdded") or "") or None,
        source=source,
        entry_type=item_type,
        fields=fields,
    )
