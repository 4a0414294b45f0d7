"""A fake Semantic Scholar Graph API on a loopback server (pytest-httpserver).

Format, from the Graph API documentation (api.semanticscholar.org/api-docs/graph): ``GET
/graph/v1/paper/DOI:<doi>?fields=...`` answers the paper (``paperId``, ``externalIds``,
``title``, ``abstract``, ``year``, ``venue``, ``authors[].name``) or 404 ``{"error": "Paper with
id ... not found"}``; ``GET /graph/v1/paper/search/match?query=<title>`` answers ``{"data":
[paper + "matchScore"]}`` or 404 ``{"error": "Title match not found"}``.
``tests/data/semanticscholar/papers.json`` holds the papers served.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from werkzeug.wrappers import Request, Response

from tests.conftest import DATA

PAPERS = DATA / "semanticscholar" / "papers.json"


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@dataclass
class FakeSemanticScholar:
    papers: list[dict] = field(default_factory=lambda: json.loads(PAPERS.read_text(encoding="utf-8")))
    requests: list[str] = field(default_factory=list)

    def __call__(self, request: Request) -> Response:
        self.requests.append(request.full_path)
        path = request.path
        if path == "/graph/v1/paper/search/match":
            query = _words(request.args.get("query", ""))
            for paper in self.papers:
                if _words(paper["title"]) == query:
                    return Response(json.dumps({"data": [{**paper, "matchScore": 180.5}]}),
                                    content_type="application/json")
            return Response(json.dumps({"error": "Title match not found"}), status=404, content_type="application/json")
        if path.startswith("/graph/v1/paper/DOI:"):
            doi = path[len("/graph/v1/paper/DOI:"):].lower()
            for paper in self.papers:
                if paper["externalIds"].get("DOI", "").lower() == doi:
                    return Response(json.dumps(paper), content_type="application/json")
            return Response(json.dumps({"error": f"Paper with id DOI:{doi} not found"}), status=404,
                            content_type="application/json")
        return Response(json.dumps({"error": "Not found"}), status=404, content_type="application/json")
