"""arXiv as a collection, by URI, through the ``arxiv`` package (4.x) and arXiv's query API.

* ``arxiv:cs.LG``: the newest submissions of a category (``?since=2026-11-25`` or
  ``?days=7``; without either, the last 7 days), newest first;
* ``arxiv:search?query=all:diffusion AND cat:cs.LG``: an API search (``&max=N``, default 500);
* ``arxiv:2501.01234,2502.04321``: papers by id (versions are dropped).

Each result becomes a :class:`~recommender.Paper` with the arXiv id (no version) as its id,
venue "arXiv", the year of first submission, the abstract, authors, DOI where given, the
abstract page as url and the PDF link in ``fields["pdf"]``. Requests go through
:class:`connectors.online.http_cache.CachedSession` (cache, ``Retry-After``, ``--offline``), at most one
every 3 seconds as arXiv's terms ask. ``$LITRANK_ARXIV_API`` points the client at another
endpoint (the tests' loopback server).
"""
from __future__ import annotations

import datetime as dt
import os
import re
from urllib.parse import parse_qs, unquote_plus

from connectors.errors import SourceError
from connectors.online.http_cache import CachedSession
from recommender.paper import Paper

DEFAULT_API = "https://export.arxiv.org/api/query"
DEFAULT_DAYS = 7
DEFAULT_SEARCH_RESULTS = 500
MAX_CATEGORY_RESULTS = 10000
_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")
_CATEGORY = re.compile(r"^[a-z-]+(\.[A-Za-z-]+)?$")


def _options(uri: str) -> tuple[str, dict[str, str]]:
    body = uri[len("arxiv:"):]
    target, _, query = body.partition("?")
    options = {key: values[-1] for key, values in parse_qs(query, keep_blank_values=True).items()}
    return target, options


def _since(options: dict[str, str], today: dt.date | None = None) -> dt.date:
    today = today or dt.datetime.now(dt.timezone.utc).date()
    if "since" in options:
        try:
            return dt.date.fromisoformat(options["since"])
        except ValueError:
            raise SourceError(f"arxiv: --since wants a date like 2026-11-25, not {options['since']!r}") from None
    try:
        days = int(options.get("days", DEFAULT_DAYS))
    except ValueError:
        raise SourceError(f"arxiv: --days wants a whole number, not {options['days']!r}") from None
    if days < 1:
        raise SourceError("arxiv: --days must be at least 1")
    return today - dt.timedelta(days=days)


def _client():
    import arxiv

    client = arxiv.Client(page_size=100, delay_seconds=float(os.environ.get("LITRANK_ARXIV_DELAY", 3.0)),
                          num_retries=1)  # HTTP retries are the session's; this one covers an empty page
    client.query_url_format = os.environ.get("LITRANK_ARXIV_API", DEFAULT_API) + "?{}"
    # The client's own requests.Session, replaced by one with the cache and Retry-After.
    client._session = CachedSession("arxiv")
    return client


def paper_from_result(result) -> Paper:
    """A Paper from an ``arxiv.Result``."""
    short_id = result.get_short_id()
    arxiv_id = re.sub(r"v\d+$", "", short_id)
    published = result.published
    return Paper(id=arxiv_id, title=" ".join(result.title.split()),
                 abstract=" ".join(result.summary.split()), authors=[author.name for author in result.authors],
                 year=published.year if published and published.year > 1 else None, venue="arXiv",
                 doi=(result.doi or "").lower(), arxiv_id=arxiv_id, url=f"https://arxiv.org/abs/{arxiv_id}",
                 keywords=list(result.categories), date_added=published.isoformat() if published else None,
                 source="arxiv", entry_type="article",
                 fields={key: value for key, value in {"pdf": result.pdf_url or "",
                                                        "journal": result.journal_ref or ""}.items() if value})


def _run(search, client, stop_before: dt.date | None = None) -> list[Paper]:
    import arxiv

    papers = []
    try:
        for result in client.results(search):
            if stop_before is not None and result.published.date() < stop_before:
                break  # newest first: everything further is older
            papers.append(paper_from_result(result))
    except arxiv.HTTPError as exc:
        raise SourceError(f"arxiv: the API answered HTTP {exc.status} (after retries); try again later") from None
    except arxiv.UnexpectedEmptyPageError:
        raise SourceError("arxiv: the API returned an empty page in the middle of the results; try again "
                          "later") from None
    return papers


def load(uri: str) -> list[Paper]:
    """The papers an ``arxiv:`` URI names (see the module docstring)."""
    import arxiv

    target, options = _options(uri)
    client = _client()
    if target == "search":
        query = unquote_plus(options.get("query", "")).strip()
        if not query:
            raise SourceError("arxiv:search needs ?query=..., e.g. arxiv:search?query=all:diffusion")
        limit = int(options.get("max", DEFAULT_SEARCH_RESULTS))
        return _run(arxiv.Search(query=query, max_results=limit), client)
    ids = [part.strip() for part in target.split(",") if part.strip()]
    if ids and all(_ID.match(part) for part in ids):
        return _run(arxiv.Search(id_list=ids, max_results=len(ids)), client)
    if len(ids) == 1 and _CATEGORY.match(ids[0]):
        since = _since(options)
        search = arxiv.Search(query=f"cat:{ids[0]}", max_results=MAX_CATEGORY_RESULTS,
                              sort_by=arxiv.SortCriterion.SubmittedDate, sort_order=arxiv.SortOrder.Descending)
        return _run(search, client, stop_before=since)
    raise SourceError(f"{uri}: not an arXiv source; use arxiv:cs.LG (a category), "
                      "arxiv:search?query=... or arxiv:2501.01234,2502.04321")
