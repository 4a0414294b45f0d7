"""Zotero item JSON (the Web API's ``data`` object) to :class:`Paper`, shared by every Zotero reader.

The local-database reader builds the same ``data`` dictionaries from ``zotero.sqlite``, so
all readers go through :func:`paper_from_item` and yield identical records for the same
library. Field names are Zotero's (``itemType``, ``abstractNote``, ``publicationTitle``...).
"""
from __future__ import annotations

import re
from typing import Any, Hashable, Mapping, Sequence, TypeVar
from urllib.parse import unquote

from connectors.errors import SourceError
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


# In a Zotero URI's query only "&collection=" or "&library=" starts another parameter: an "&" inside a
# collection name ("Theory & Methods") belongs to the name.
_NEXT_PARAMETER = re.compile(r"&(?=(?:collection|library)=)")
Key = TypeVar("Key", bound=Hashable)


def query_parameters(query: str) -> list[tuple[str, str]]:
    """``(name, value)`` pairs of a Zotero URI's query, percent-decoded (``+`` is kept, as Zotero
    keeps it in names); ``&`` in a value is part of it."""
    pairs = []
    for part in filter(None, _NEXT_PARAMETER.split(query)):
        name, _, value = part.partition("=")
        pairs.append((unquote(name), unquote(value)))
    return pairs


def join_collection_path(names: Sequence[str]) -> str:
    """Collection names from the library root as one path, "Parent/Child". A ``/`` inside a
    name is written ``\\/`` and a backslash ``\\\\``, so that "I/O" stays one collection."""
    return "/".join(name.replace("\\", "\\\\").replace("/", "\\/") for name in names)


def split_collection_path(path: str) -> list[str]:
    """The names in a collection path (the inverse of :func:`join_collection_path`): ``/``
    separates names, ``\\/`` is a slash in a name, ``\\\\`` a backslash (any other backslash is
    itself); names are stripped of surrounding spaces and empty ones dropped."""
    names, current, index = [], [], 0
    while index < len(path):
        char = path[index]
        if char == "\\" and path[index + 1:index + 2] in ("/", "\\"):  # other backslashes are literal
            index += 1
            current.append(path[index])
        elif char == "/":
            names.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    names.append("".join(current))
    return [name.strip() for name in names if name.strip()]


def select_collections(paths: Mapping[Key, str], wanted: str, where: str) -> list[Key]:
    """The collections ``wanted`` names, with all their subcollections, the same way for every reader.

    ``paths`` maps each collection to its path from the library root (:func:`join_collection_path`).
    ``wanted`` is a path ("Reading/ML"; exact, else case-insensitive; ``\\/`` for a slash inside
    a name) or the bare name of one collection anywhere in the tree ("ML", or "I/O" as typed),
    when only one has it.
    """
    names = {k: tuple(split_collection_path(p)) for k, p in paths.items()}
    target = tuple(split_collection_path(wanted))
    folded = tuple(n.casefold() for n in target)
    roots = ([k for k, n in names.items() if n == target]
             or [k for k, n in names.items() if tuple(x.casefold() for x in n) == folded])
    if not roots:
        # A bare name: one name escaped or not, or the whole text typed as it is ("I/O").
        bare = {wanted.strip().casefold(), *([folded[0]] if len(folded) == 1 else [])}
        named = [k for k, n in names.items() if n and n[-1].casefold() in bare]
        if len(named) > 1:
            raise SourceError(f"{where}: several collections are named {wanted!r} "
                              f"({'; '.join(sorted((paths[k] for k in named), key=str.casefold))}); give the full path")
        roots = named
    if not roots:
        known = sorted(paths.values(), key=str.casefold)
        listed = "; ".join(known[:25]) + ("; ..." if len(known) > 25 else "")
        slash = " (a / inside a name is written \\/)" if any("\\/" in p for p in known) else ""
        raise SourceError(f"{where}: no collection {wanted!r} in this library"
                          + (f" (its collections: {listed}){slash}" if known else " (it has no collections)"))
    chosen = {names[k] for k in roots}
    return sorted({k for k, n in names.items() if any(n[:len(root)] == root for root in chosen)},
                  key=lambda k: paths[k])


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
