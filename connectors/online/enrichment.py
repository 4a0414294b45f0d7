"""Abstracts for library papers that have none, from where the papers are published.

In order, each paper without an abstract is looked up
1. on arXiv, by its arXiv id (100 ids a request);
2. on OpenAlex, by its DOI (50 a request), then on Semantic Scholar (one a request);
3. on OpenAlex, then Semantic Scholar, by its title, accepted only when the normalised titles
   are equal and the first authors share a surname (one request a paper and service).
Nothing a user wrote is replaced: only papers with an empty abstract are looked up, and the
caller writes only fields that are absent. Requests are cached (see :mod:`connectors.online.http_cache`),
so a second run asks nothing.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Callable, Sequence

from connectors.errors import SourceError
from recommender.paper import Paper

log = logging.getLogger("litrank")
ARXIV_BATCH = 100


@dataclass(frozen=True)
class Found:
    """An abstract found for a paper, and where."""

    abstract: str
    source: str  # "arXiv", "OpenAlex (DOI)", "OpenAlex (title)"


def find_abstracts(papers: Sequence[Paper], progress: Callable[[int, int], None] | None = None) -> dict[str, Found]:
    """Abstracts for the papers of ``papers`` whose abstract is empty, by paper id."""
    from connectors.online import arxiv_source, openalex_source, semanticscholar_source
    from connectors.online.http_cache import CachedSession, OfflineError

    missing = [paper for paper in papers if not paper.abstract.strip()]
    found: dict[str, Found] = {}
    not_cached: set[str] = set()  # offline, and a lookup the cache cannot answer

    def cached(ids: Sequence[str], lookup, *args):
        """``lookup(*args)``; offline with no cached answer: None, the papers ``ids`` noted."""
        try:
            return lookup(*args)
        except OfflineError:
            not_cached.update(ids)
            return None

    with_arxiv = [paper for paper in missing if paper.arxiv_id]
    for start in range(0, len(with_arxiv), ARXIV_BATCH):
        chunk = with_arxiv[start:start + ARXIV_BATCH]
        loaded = cached([p.id for p in chunk], arxiv_source.load, "arxiv:" + ",".join(p.arxiv_id for p in chunk))
        results = {p.arxiv_id: p for p in loaded or ()}
        for paper in chunk:
            if results.get(paper.arxiv_id) and results[paper.arxiv_id].abstract:
                found[paper.id] = Found(results[paper.arxiv_id].abstract, "arXiv")
    with_doi = [paper for paper in missing if paper.doi and paper.id not in found]
    if with_doi:
        works = cached([p.id for p in with_doi], _openalex, openalex_source.by_dois, [p.doi for p in with_doi]) or {}
        for paper in with_doi:
            work = works.get(paper.doi)
            if work is not None and work.abstract:
                found[paper.id] = Found(work.abstract, "OpenAlex (DOI)")
    s2 = CachedSession("semanticscholar")
    for paper in [paper for paper in with_doi if paper.id not in found]:
        record = cached([paper.id], semanticscholar_source.by_doi, paper.doi, s2)
        if record is not None and record.abstract:
            found[paper.id] = Found(record.abstract, "Semantic Scholar (DOI)")
    by_title = [paper for paper in missing if paper.id not in found and paper.title.strip() and not paper.title_derived]
    for done, paper in enumerate(by_title, start=1):
        first_author = paper.authors[0] if paper.authors else ""
        work = cached([paper.id], _openalex, openalex_source.by_title, paper.title, first_author)
        if work is not None and work.abstract:
            found[paper.id] = Found(work.abstract, "OpenAlex (title)")
        else:
            record = cached([paper.id], semanticscholar_source.by_title, paper.title, first_author, s2)
            if record is not None and record.abstract:
                found[paper.id] = Found(record.abstract, "Semantic Scholar (title)")
        if progress:
            progress(done, len(by_title))
    log.info("found abstracts for %d of %d papers without one", len(found), len(missing))
    unanswered = not_cached - set(found)
    if unanswered:
        log.warning("offline: %d paper%s could not be looked up (the cache holds no answer for them); run without "
                    "--offline to fetch them", len(unanswered), "" if len(unanswered) == 1 else "s")
    return found


def _openalex(lookup, *args):
    """An OpenAlex lookup, its HTTP and query errors as SourceError."""
    import pyalex
    import requests

    try:
        return lookup(*args)
    except requests.exceptions.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise SourceError(f"openalex: the API answered HTTP {status} (after retries); try again later") from None
    except pyalex.api.QueryError as exc:
        raise SourceError(f"openalex: {exc}") from None


def with_abstracts(papers: Sequence[Paper], found: dict[str, Found]) -> list[Paper]:
    """Copies of ``papers`` with the found abstracts filled in (and ``fields["abstract_source"]``)."""
    return [dataclasses.replace(paper, abstract=found[paper.id].abstract,
                                fields={**paper.fields, "abstract_source": found[paper.id].source})
            if paper.id in found else paper for paper in papers]
