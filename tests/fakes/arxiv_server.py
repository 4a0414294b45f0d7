"""A fake arXiv query API on a loopback server (pytest-httpserver), answering as the real one.

The response format follows the arXiv API User's Manual, "Details of Atom Results Returned"
(info.arxiv.org/help/api/user-manual.html): an Atom 1.0 feed with ``opensearch:totalResults``,
``opensearch:startIndex`` and ``opensearch:itemsPerPage``, and per ``<entry>`` the abstract
page as ``<id>``, ``<published>``/``<updated>``, ``<title>``, ``<summary>``, ``<author><name>``,
``<arxiv:doi>``, ``<arxiv:journal_ref>``, the ``alternate`` and ``pdf`` links,
``<arxiv:primary_category>`` and ``<category>`` terms. ``tests/data/arxiv/entries.json`` holds
the entries served (real papers' metadata). Queries are answered as the API does:
``search_query=cat:X`` sorted by ``submittedDate`` descending, ``id_list=...``, paging by
``start``/``max_results``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from werkzeug.wrappers import Request, Response

from tests.conftest import DATA
from tests.fakes.fake_api import ScriptedFailures

ENTRIES = DATA / "arxiv" / "entries.json"

FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: {query}</title>
  <id>http://arxiv.org/api/fake</id>
  <updated>2026-12-01T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{total}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{start}</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{per_page}</opensearch:itemsPerPage>
{entries}</feed>
"""

ENTRY = """  <entry>
    <id>http://arxiv.org/abs/{id}v{version}</id>
    <updated>{published}</updated>
    <published>{published}</published>
    <title>{title}</title>
    <summary>{abstract}</summary>
{authors}    <arxiv:doi xmlns:arxiv="http://arxiv.org/schemas/atom">{doi}</arxiv:doi>
    <link title="doi" href="http://dx.doi.org/{doi}" rel="related"/>
    <link href="http://arxiv.org/abs/{id}v{version}" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/{id}v{version}" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="{category}" scheme="http://arxiv.org/schemas/atom"/>
    <category term="{category}" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
"""


def render(entries: list[dict], total: int, start: int, query: str) -> str:
    rendered = "".join(ENTRY.format(
        id=e["id"], version=e.get("version", 1), published=e["published"], title=escape(e["title"]),
        abstract=escape(e["abstract"]), doi=escape(e.get("doi", "")), category=e["category"],
        authors="".join(f"    <author>\n      <name>{escape(name)}</name>\n    </author>\n" for name in e["authors"]))
        for e in entries)
    return FEED.format(query=escape(query), total=total, start=start, per_page=len(entries), entries=rendered)


@dataclass
class FakeArxiv(ScriptedFailures):
    """The request handler (scripted failures: see ScriptedFailures)."""

    entries: list[dict] = field(default_factory=lambda: json.loads(ENTRIES.read_text(encoding="utf-8")))

    def __call__(self, request: Request) -> Response:
        args = request.args.to_dict()
        failure = self.next_failure(args)
        if failure is not None:
            status, headers = failure
            return Response("Rate exceeded." if status == 429 else "Service unavailable", status=status,
                            headers=headers)
        start, per_page = int(args.get("start", 0)), int(args.get("max_results", 10))
        if args.get("id_list"):
            wanted = args["id_list"].split(",")
            chosen = [e for e in self.entries if e["id"] in {w.split("v")[0] for w in wanted}]
        else:
            query = args.get("search_query", "")
            category = query[4:] if query.startswith("cat:") else None
            if category is not None:
                chosen = [e for e in self.entries if e["category"] == category]
            else:  # all:TERM, as far as these tests need it
                term = query.split(":", 1)[-1].lower()
                chosen = [e for e in self.entries if term in (e["title"] + " " + e["abstract"]).lower()]
            if args.get("sortBy") == "submittedDate":
                chosen.sort(key=lambda e: e["published"], reverse=args.get("sortOrder") != "ascending")
        page = chosen[start:start + per_page]
        return Response(render(page, len(chosen), start, args.get("search_query", args.get("id_list", ""))),
                        content_type="application/atom+xml; charset=utf-8")
