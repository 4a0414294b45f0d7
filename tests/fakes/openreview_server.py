"""A fake OpenReview API v2 on a loopback server (pytest-httpserver), answering ``GET /notes`` as
the real one does for the queries openreview-py's ``get_all_notes`` sends.

Format, from OpenReview's API v2 (api2.openreview.net, the ``/notes`` endpoint as documented at
docs.openreview.net, "Getting submissions/accepted papers" with API v2) and openreview-py 2.x's
``Note.from_json``: ``{"notes": [...], "count": N}``, every content field wrapped as
``{"value": ...}`` (``content.title.value``, ``content.authors.value``...), accepted papers found
by ``content.venueid=<venue id>``, all submissions by ``invitation=<venue id>/-/Submission``;
pages by ``sort=id``, ``limit`` and ``after=<last id>`` (the first page with ``count=true``).
``tests/data/openreview/notes.json`` holds the notes served (a venue's real note shape).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from werkzeug.wrappers import Request, Response

from tests.conftest import DATA
from tests.fakes.fake_api import ScriptedFailures

NOTES = DATA / "openreview" / "notes.json"


@dataclass
class FakeOpenReview(ScriptedFailures):
    notes: list[dict] = field(default_factory=lambda: json.loads(NOTES.read_text(encoding="utf-8")))
    page_size: int | None = None  # a smaller page than the client asks for, to exercise paging

    def __call__(self, request: Request) -> Response:
        args = request.args.to_dict()
        failure = self.next_failure(args)
        if failure is not None:
            status, headers = failure
            body = {"name": "RateLimitError" if status == 429 else "Error", "message": "Too many requests"}
            return Response(json.dumps(body), status=status, headers=headers, content_type="application/json")
        if "invitation" in args:
            chosen = [n for n in self.notes if args["invitation"] in n["invitations"]]
        elif "content.venueid" in args:
            chosen = [n for n in self.notes if n["content"]["venueid"]["value"] == args["content.venueid"]]
        else:
            return Response(json.dumps({"name": "ValidationError", "message": "Missing query"}), status=400,
                            content_type="application/json")
        chosen.sort(key=lambda n: n["id"])
        if "after" in args:
            chosen_after = [n for n in chosen if n["id"] > args["after"]]
        else:
            chosen_after = chosen
        limit = min(int(args.get("limit", 1000)), self.page_size or 1000)
        body = {"notes": chosen_after[:limit]}
        if args.get("count") == "true":
            body["count"] = len(chosen)
        return Response(json.dumps(body), content_type="application/json; charset=utf-8")
