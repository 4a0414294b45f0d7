"""OpenAlex as a collection, by URI, through ``pyalex``: the general fallback for journals.

* ``openalex:source/S4306420609?year=2024``: the works a venue (an OpenAlex source) published
  in a year (``&max=N``, default 10,000);
* ``openalex:doi/10.1145/3292500.3330701,10.18653/v1/N19-1423``: works by DOI.

Each work becomes a :class:`~recommender.Paper` with its DOI as id (the OpenAlex id when it
has none), title, the abstract rebuilt from ``abstract_inverted_index``, authors, year, the
venue's name, the DOI link as url and an open-access PDF in ``fields["pdf"]`` where known.
Requests go through :class:`connectors.online.http_cache.CachedSession` (cache, ``Retry-After``,
``--offline``); ``$LITRANK_OPENALEX_API`` sends them to another server (the tests' one).
"""
from __future__ import annotations

import os
import re
from urllib.parse import parse_qs

from connectors.errors import SourceError
from connectors.files.flat_records import exact_title_match
from connectors.online.http_cache import CachedSession
from recommender.paper import Paper
from recommender.text import normalize_doi

DEFAULT_API = "https://api.openalex.org"
DEFAULT_MAX = 10000
_SOURCE_ID = re.compile(r"^S\d+$")


def _abstract(inverted: dict | None) -> str:
    if not inverted:
        return ""
    positions = sorted((position, word) for word, places in inverted.items() for position in places)
    return " ".join(word for _, word in positions)


def paper_from_work(work: dict) -> Paper:
    """A Paper from an OpenAlex work (the JSON of ``/works``)."""
    doi = normalize_doi(work.get("doi") or "")
    openalex_id = str(work.get("id") or "").rsplit("/", 1)[-1]
    location = work.get("primary_location") or {}
    source = location.get("source") or {}
    best = work.get("best_oa_location") or {}
    authors = [((authorship.get("author") or {}).get("display_name") or "").strip()
               for authorship in work.get("authorships") or []]
    fields = {"pdf": best.get("pdf_url") or "", "openalex": openalex_id}
    return Paper(id=doi or openalex_id, title=" ".join(str(work.get("title") or work.get("display_name") or "").split()),
                 abstract=_abstract(work.get("abstract_inverted_index")), authors=[a for a in authors if a],
                 year=work.get("publication_year"), venue=source.get("display_name") or "", doi=doi,
                 url=f"https://doi.org/{doi}" if doi else str(work.get("id") or ""), source="openalex",
                 entry_type="article" if work.get("type") == "article" else work.get("type") or "",
                 fields={key: value for key, value in fields.items() if value})


def load(uri: str) -> list[Paper]:
    """The papers an ``openalex:`` URI names (see the module docstring)."""
    import pyalex
    import requests

    target, _, query = uri[len("openalex:"):].partition("?")
    options = {key: values[-1] for key, values in parse_qs(query).items()}
    kind, _, value = target.partition("/")
    works = pyalex.Works()
    if kind == "doi" and value:
        dois = [normalize_doi(part) for part in value.split(",") if part.strip()]
        works = works.filter(doi="|".join(dois))
        limit = len(dois)
    elif kind == "source" and _SOURCE_ID.match(value):
        if "year" not in options or not options["year"].isdigit():
            raise SourceError(f"{uri}: a source needs ?year=YYYY, e.g. openalex:source/{value}?year=2024")
        works = works.filter(primary_location={"source": {"id": value}}, publication_year=int(options["year"]))
        limit = int(options.get("max", DEFAULT_MAX))
    else:
        raise SourceError(f"{uri}: not an OpenAlex source; use openalex:source/S...?year=YYYY or "
                          "openalex:doi/10.x/...,10.y/...")
    pages = _pages(works, 200, limit)
    try:
        papers = [paper_from_work(work) for page in pages for work in page]
    except requests.exceptions.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise SourceError(f"openalex: the API answered HTTP {status} for {uri} (after retries)") from None
    except pyalex.api.QueryError as exc:
        raise SourceError(f"openalex: {exc}") from None
    if not papers:
        raise SourceError(f"openalex: no works for {uri}")
    return papers


def _pages(works, per_page: int, limit: int):
    """Pages of ``works`` through the cache: the paginator's own requests.Session is replaced
    (pyalex 0.21 builds work URLs on api.openalex.org whatever ``config.openalex_url`` says)."""
    import pyalex

    pyalex.config.max_retries = 0  # retries are the session's (Retry-After aware)
    pages = works.paginate(per_page=per_page, n_max=limit)
    base = os.environ.get("LITRANK_OPENALEX_API", DEFAULT_API).rstrip("/")
    pages._session = CachedSession("openalex", redirect=(DEFAULT_API, base) if base != DEFAULT_API else None)
    return pages


def by_dois(dois: list[str]) -> dict[str, Paper]:
    """The works of ``dois`` that OpenAlex knows, by normalised DOI (50 per request)."""
    import pyalex

    found: dict[str, Paper] = {}
    for start in range(0, len(dois), 50):
        chunk = [normalize_doi(doi) for doi in dois[start:start + 50]]
        for page in _pages(pyalex.Works().filter(doi="|".join(chunk)), 50, len(chunk)):
            for work in page:
                paper = paper_from_work(work)
                found[paper.doi] = paper
    return found


def by_title(title: str, first_author: str = "") -> Paper | None:
    """The work whose normalised title equals ``title`` (and whose first author has the same
    surname, when one is given), or None: a near match is no match."""
    import pyalex

    if not title.strip():
        return None
    for page in _pages(pyalex.Works().search_filter(title=title), 10, 10):
        return exact_title_match((paper_from_work(work) for work in page), title, first_author)
    return None
