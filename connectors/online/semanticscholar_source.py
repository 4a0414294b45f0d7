"""Semantic Scholar's Graph API, for abstracts that arXiv and OpenAlex do not have.

Two lookups, both through :class:`connectors.online.http_cache.CachedSession` (cache, ``Retry-After``,
``--offline``): a paper by DOI (``GET /graph/v1/paper/DOI:<doi>``) and the best title match
(``GET /graph/v1/paper/search/match?query=<title>``), the latter accepted only when the
normalised titles are equal and the first authors share a surname. ``$LITRANK_S2_API`` points
them at another server (the tests' loopback one); ``$SEMANTIC_SCHOLAR_API_KEY``, when set, is
sent as ``x-api-key`` (and never printed).
"""
from __future__ import annotations

import os
from urllib.parse import quote

from connectors.errors import SourceError
from connectors.files.flat_records import exact_title_match
from connectors.online.http_cache import CachedSession
from recommender.paper import Paper
from recommender.text import normalize_doi

DEFAULT_API = "https://api.semanticscholar.org"
FIELDS = "title,abstract,authors,year,externalIds,venue"


def _paper(record: dict) -> Paper:
    ids = record.get("externalIds") or {}
    return Paper(id=str(record.get("paperId") or ""), title=" ".join(str(record.get("title") or "").split()),
                 abstract=" ".join(str(record.get("abstract") or "").split()),
                 authors=[a.get("name", "") for a in record.get("authors") or [] if a.get("name")],
                 year=record.get("year"), venue=record.get("venue") or "", doi=normalize_doi(ids.get("DOI") or ""),
                 arxiv_id=ids.get("ArXiv") or "", source="semanticscholar")


def _get(session: CachedSession, path: str) -> dict | None:
    base = os.environ.get("LITRANK_S2_API", DEFAULT_API).rstrip("/")
    headers = {"x-api-key": os.environ["SEMANTIC_SCHOLAR_API_KEY"]} if os.environ.get("SEMANTIC_SCHOLAR_API_KEY") else {}
    response = session.get(f"{base}{path}", headers=headers, timeout=30)
    if response.status_code == 404:
        return None
    if response.status_code != 200:
        raise SourceError(f"semanticscholar: the API answered HTTP {response.status_code} (after retries); "
                          "try again later")
    try:
        return response.json()
    except ValueError:
        raise SourceError("semanticscholar: the API answered with something that is not JSON") from None


def by_doi(doi: str, session: CachedSession | None = None) -> Paper | None:
    """The paper with this DOI, or None when Semantic Scholar does not know it."""
    record = _get(session or CachedSession("semanticscholar"), f"/graph/v1/paper/DOI:{quote(normalize_doi(doi), safe='/')}"
                  f"?fields={FIELDS}")
    return _paper(record) if record else None


def by_title(title: str, first_author: str = "", session: CachedSession | None = None) -> Paper | None:
    """The best title match if its normalised title is ``title``'s (and the first authors share a
    surname, when one is given), else None."""
    if not title.strip():
        return None
    record = _get(session or CachedSession("semanticscholar"),
                  f"/graph/v1/paper/search/match?query={quote(title)}&fields={FIELDS}")
    return exact_title_match((_paper(match) for match in (record or {}).get("data") or []), title, first_author)
