"""A fake OpenAlex API on a loopback server (pytest-httpserver), answering ``GET /works`` as the
real one does for the queries pyalex sends.

Format, from the OpenAlex API documentation (docs.openalex.org: "Work object", "Paging",
"Filter works"): ``{"meta": {"count", "per_page", "next_cursor"}, "results": [work, ...]}``; a
work carries ``id``, ``doi`` (as a https://doi.org/ URL), ``title``, ``publication_year``,
``authorships[].author.display_name``, ``primary_location.source``, ``best_oa_location`` and
the abstract as ``abstract_inverted_index`` (word -> positions). Filters as pyalex writes them:
``filter=doi:A|B`` and ``filter=primary_location.source.id:S...,publication_year:YYYY``; cursor
paging from ``cursor=*``. ``tests/data/openalex/works.json`` holds the works served.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from werkzeug.wrappers import Request, Response

from tests.conftest import DATA
from tests.fakes.fake_api import ScriptedFailures

WORKS = DATA / "openalex" / "works.json"


@dataclass
class FakeOpenAlex(ScriptedFailures):
    works: list[dict] = field(default_factory=lambda: json.loads(WORKS.read_text(encoding="utf-8")))

    def __call__(self, request: Request) -> Response:
        args = request.args.to_dict()
        failure = self.next_failure(args)
        if failure is not None:
            status, headers = failure
            return Response(json.dumps({"error": "Too many requests", "message": "slow down"}), status=status,
                            headers=headers, content_type="application/json")
        chosen = list(self.works)
        for clause in args.get("filter", "").split(","):
            key, _, value = clause.partition(":")
            if key == "doi":
                wanted = {v.lower().removeprefix("https://doi.org/") for v in value.split("|")}
                chosen = [w for w in chosen if w["doi"] and w["doi"].removeprefix("https://doi.org/") in wanted]
            elif key == "primary_location.source.id":
                chosen = [w for w in chosen if w["primary_location"]["source"]["id"].endswith("/" + value)]
            elif key == "title.search":  # full-text search; here: every word of the query in the title
                terms = value.lower().split()
                chosen = [w for w in chosen if all(t in w["title"].lower() for t in terms)]
            elif key == "publication_year":
                chosen = [w for w in chosen if w["publication_year"] == int(value)]
            elif key:
                return Response(json.dumps({"error": "Invalid query parameters error.",
                                            "message": f"{key} is not a valid field"}), status=400,
                                content_type="application/json")
        per_page = int(args.get("per-page", 25))
        start = 0 if args.get("cursor", "*") == "*" else int(args["cursor"])
        page = chosen[start:start + per_page]
        following = start + per_page
        meta = {"count": len(chosen), "per_page": per_page, "page": None,
                "next_cursor": str(following) if following < len(chosen) else None}
        return Response(json.dumps({"meta": meta, "results": page, "group_by": []}), content_type="application/json")
