"""OpenReview venues as collections, by URI, through ``openreview-py`` and OpenReview's API v2.

* ``openreview:ICLR.cc/2026/Conference``: the venue's accepted papers (notes whose
  ``content.venueid`` is the venue id);
* ``openreview:ICLR.cc/2026/Conference?include=submissions``: every submission (notes of the
  ``<venue>/-/Submission`` invitation), accepted or not.

No login is needed for public venues. Each note becomes a :class:`~recommender.Paper` with
the forum id as its id, the venue's short name ("ICLR") and year, the decision ("Poster",
"Oral"...) in ``fields["status"]``, title, abstract, authors, keywords, the forum page as url
and the PDF link in ``fields["pdf"]``. Requests go through
:class:`connectors.online.http_cache.CachedSession` (cache, ``Retry-After``, ``--offline``);
``$LITRANK_OPENREVIEW_API`` points the client at another server (the tests' loopback one).
"""
from __future__ import annotations

import os
import re
from urllib.parse import parse_qs

from connectors.errors import SourceError
from connectors.online.http_cache import CachedSession
from recommender.paper import Paper

DEFAULT_API = "https://api2.openreview.net"
SITE = "https://openreview.net"
INCLUDE = ("accepted", "submissions")


def _value(content: dict, key: str, default=None):
    """API v2 wraps every content field as ``{"value": ...}``."""
    field = (content or {}).get(key)
    return field.get("value", default) if isinstance(field, dict) else default


def paper_from_note(note, venue_id: str) -> Paper:
    """A Paper from an API v2 note of ``venue_id``."""
    content = note.content or {}
    forum = note.forum or note.id
    short_venue = venue_id.split("/", 1)[0].split(".", 1)[0]
    year_match = re.search(r"/((?:19|20)\d\d)(?:/|$)", venue_id)
    venue_text = _value(content, "venue", "") or ""
    status = venue_text.split()[-1] if re.match(rf"^{re.escape(short_venue)}\s+\d{{4}}\s+\w+$", venue_text) else ""
    pdf = _value(content, "pdf", "") or ""
    fields = {"pdf": SITE + pdf if pdf.startswith("/") else pdf, "status": status,
              "primary_area": _value(content, "primary_area", "") or "", "venue_text": venue_text}
    keywords = _value(content, "keywords", []) or []
    return Paper(id=forum, title=" ".join(str(_value(content, "title", "")).split()),
                 abstract=" ".join(str(_value(content, "abstract", "") or "").split()),
                 authors=[str(name) for name in _value(content, "authors", []) or []],
                 year=int(year_match.group(1)) if year_match else None, venue=short_venue,
                 url=f"{SITE}/forum?id={forum}", keywords=[str(k) for k in keywords] if isinstance(keywords, list) else [],
                 source="openreview", entry_type="inproceedings",
                 fields={key: value for key, value in fields.items() if value})


def _client():
    from openreview.api import OpenReviewClient

    client = OpenReviewClient(baseurl=os.environ.get("LITRANK_OPENREVIEW_API", DEFAULT_API))
    # The client's own requests.Session (urllib3 retries), replaced by one with the cache too.
    client.session = CachedSession("openreview")
    return client


def load(uri: str) -> list[Paper]:
    """The papers an ``openreview:`` URI names (see the module docstring)."""
    from openreview import OpenReviewException

    venue_id, _, query = uri[len("openreview:"):].partition("?")
    venue_id = venue_id.strip().strip("/")
    options = {key: values[-1] for key, values in parse_qs(query).items()}
    include = options.get("include", "accepted")
    if not venue_id or "/" not in venue_id:
        raise SourceError(f"{uri}: name a venue, e.g. openreview:ICLR.cc/2026/Conference")
    if include not in INCLUDE:
        raise SourceError(f"{uri}: --include takes {' or '.join(INCLUDE)}, not {include!r}")
    client = _client()
    try:
        if include == "submissions":
            notes = client.get_all_notes(invitation=f"{venue_id}/-/Submission")
        else:
            notes = client.get_all_notes(content={"venueid": venue_id})
    except OpenReviewException as exc:
        detail = exc.args[0] if exc.args else {}
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
        raise SourceError(f"openreview: {venue_id}: {message or 'the API refused the request'}") from None
    papers = [paper_from_note(note, venue_id) for note in notes]
    if not papers:
        what = "submissions" if include == "submissions" else "accepted papers"
        hint = "" if include == "submissions" else " (are decisions out? --include submissions lists every submission)"
        raise SourceError(f"openreview: no {what} for {venue_id}{hint}")
    return papers
