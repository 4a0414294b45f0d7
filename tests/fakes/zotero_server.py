"""A fake Zotero API v3 on a real loopback HTTP server (pytest-httpserver), for tests of the
pyzotero-based readers. It serves the Web API (``https://api.zotero.org`` layout) or, with
``local=True``, Zotero 7's local API (everything under ``/api``, no authentication).

Implemented: the READ side pyzotero uses
    GET <lib>/items, <lib>/items/top, <lib>/items/trash, <lib>/items/<key>,
        <lib>/collections, <lib>/collections/top, <lib>/collections/<key>,
        <lib>/collections/<key>/collections, <lib>/collections/<key>/items[/top]
    where <lib> is /users/<id> or /groups/<id>.
    Query: start, limit (default 25, capped at ``max_limit``: 100 as on api.zotero.org),
    sort (dateAdded, dateModified, title, name) and direction, includeTrashed (trash left
    out by default, as in the real API), itemType (``book``, ``-note``, ``a || b``), since,
    format=json (any other format -> 400); locale and v are accepted and ignored.
    Response headers: Zotero-API-Version: 3, Total-Results, Last-Modified-Version, and
    Link with rel="first"/"prev"/"next"/"last" (absolute URLs that keep the request's other
    parameters, as the real API does) and rel="alternate". If-Modified-Since-Version -> 304.
    Auth (Web API): the key may come as ``Zotero-API-Key: K``, ``Authorization: Bearer K``
    (what pyzotero sends) or ``?key=K``. A wrong key -> 403 "Invalid key"; no key on a
    library that is not public -> 403 "Forbidden"; unknown library -> 404.
    Local API: /api/users/0 is the local user's library, another user id -> 400, a disabled
    local API -> 403 (as when "Allow other applications..." is off); Zotero-Server-ID header.
    Fault injection: :meth:`FakeZoteroAPI.inject` answers matching requests with e.g. a 429
    and ``Retry-After: 1``, a 503, or adds ``Backoff`` to a normal answer.
    Every request is recorded in :attr:`FakeZoteroAPI.requests`.

With ``FakeZoteroAPI(writes=True)`` (otherwise writes answer 501): the WRITE side of
tests/zotero_server_writes.py (POST/PATCH/PUT/DELETE items and collections, templates). Zotero 10's
local API, which takes writes, is tests/zotero_desktop.py.

An unknown collection key -> 404 on the Web API, 400 on the local API (as Zotero answers).
GET /keys/current (Web API only) answers the key's access as documented, ``write`` from
:attr:`key_writes`; with ``key_writes = False`` every write -> 403 "Write access denied" (as the
Web API answers a read-only key).
Not implemented: searching (q, tag), /deleted, format=keys/versions/atom/bib/bibtex, include=,
/keys/<key>, /groups, /searches, /tags, files.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import DATA
from tests.fakes.zotero_server_writes import WriteSide

FIXTURES = DATA / "zotero-api"
ROUTES = [  # (method, path below the library prefix, handler method name)
    ("GET", r"/items", "_items"),
    ("GET", r"/items/top", "_items"),
    ("GET", r"/items/trash", "_items"),
    ("GET", r"/items/(?P<item>[A-Z0-9]{8})", "_item"),
    ("GET", r"/collections", "_collections"),
    ("GET", r"/collections/top", "_collections"),
    ("GET", r"/collections/(?P<collection>[A-Z0-9]{8})", "_collection"),
    ("GET", r"/collections/(?P<collection>[A-Z0-9]{8})/collections", "_collections"),
    ("GET", r"/collections/(?P<collection>[A-Z0-9]{8})/items", "_items"),
    ("GET", r"/collections/(?P<collection>[A-Z0-9]{8})/items/top", "_items"),
    ("POST", r"/items/?", "_post_objects"),
    ("POST", r"/collections/?", "_post_objects"),
    ("PATCH", r"/items/(?P<item>[A-Z0-9]{8})", "_patch_object"),
    ("PUT", r"/items/(?P<item>[A-Z0-9]{8})", "_patch_object"),
    ("PATCH", r"/collections/(?P<collection>[A-Z0-9]{8})", "_patch_object"),
    ("PUT", r"/collections/(?P<collection>[A-Z0-9]{8})", "_patch_object"),
    ("DELETE", r"/items/?", "_delete_objects"),
    ("DELETE", r"/collections/?", "_delete_objects"),
    ("DELETE", r"/items/(?P<item>[A-Z0-9]{8})", "_delete_object"),
    ("DELETE", r"/collections/(?P<collection>[A-Z0-9]{8})", "_delete_object"),
]
_LIBRARY_RE = re.compile(r"/(users|groups)/(\d+)(/.*)?\Z")


def recorded(name: str) -> Any:
    """A recorded API response from tests/data/zotero-api (see its README)."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@dataclass
class Library:
    """One library: API objects (``key``, ``version``, ``library``, ``links``, ``meta``, ``data``) by key."""

    kind: str  # "users" or "groups"
    id: int
    name: str
    items: dict[str, dict] = field(default_factory=dict)
    collections: dict[str, dict] = field(default_factory=dict)
    version: int = 1
    public: bool = False
    write_tokens: set[str] = field(default_factory=set)

    def block(self) -> dict:
        return {"type": self.kind[:-1], "id": self.id, "name": self.name,
                "links": {"alternate": {"href": f"https://www.zotero.org/{self.kind}/{self.id}", "type": "text/html"}}}

    def add(self, kind: str, obj: dict) -> dict:
        """Add an API object (or a bare ``data`` dict) as an item or collection of this library."""
        obj = copy.deepcopy(obj if "data" in obj else {"key": obj["key"], "version": obj.get("version", 1),
                                                      "meta": {}, "data": obj})
        obj["library"] = self.block()
        obj["links"] = {"self": {"href": f"https://api.zotero.org/{self.kind}/{self.id}/{kind}/{obj['key']}",
                                 "type": "application/json"}}
        (self.items if kind == "items" else self.collections)[obj["key"]] = obj
        self.version = max(self.version, int(obj.get("version") or 0))
        return obj


def sample_library(kind: str = "users", library_id: int = 475425, *, public: bool = False) -> Library:
    """The recorded "Z public library" (20 items, 15 collections), plus synthetic objects that the
    recording lacks: a standalone note, a standalone PDF, a child attachment (of PQKBRC33), a
    trashed article, and an article (SFILM001) only in the subcollection "Non-English items/sherlock films".
    """
    library = Library(kind, library_id, "Z public library", public=public)
    for obj in recorded("collections_doc.json"):
        library.add("collections", obj)
    for obj in recorded("items_doc.json"):
        library.add("items", obj)
    child = recorded("attachments_doc.json")
    child["data"]["parentItem"] = "PQKBRC33"
    library.add("items", child)
    standalone = copy.deepcopy(child)
    standalone["key"] = standalone["data"]["key"] = "PDF00001"
    del standalone["data"]["parentItem"]
    standalone["data"].update(title="Scanned chapter.pdf", contentType="application/pdf")
    library.add("items", standalone)
    library.add("items", {"key": "NOTE0001", "version": 3, "itemType": "note", "note": "<p>Read before Friday</p>",
                          "tags": [], "collections": ["9KH9TNSJ"], "relations": {},
                          "dateAdded": "2011-02-03T10:00:00Z", "dateModified": "2011-02-03T10:00:00Z"})
    library.add("items", {"key": "TRASH001", "version": 4, "itemType": "journalArticle", "deleted": 1,
                          "title": "A Trashed Article", "creators": [{"creatorType": "author", "firstName": "Ann",
                                                                       "lastName": "Trash"}],
                          "date": "2010", "tags": [], "collections": ["9KH9TNSJ"], "relations": {},
                          "dateAdded": "2011-02-04T10:00:00Z", "dateModified": "2011-02-04T10:00:00Z"})
    library.add("items", {"key": "SFILM001", "version": 5, "itemType": "journalArticle",
                          "title": "Sherlock Holmes on Screen: A Century of Adaptations",
                          "creators": [{"creatorType": "author", "firstName": "Alan", "lastName": "Barnes"},
                                       {"creatorType": "editor", "firstName": "Erin", "lastName": "Ed"}],
                          "abstractNote": "Surveys film adaptations of the Sherlock Holmes stories.",
                          "publicationTitle": "Journal of Film Studies", "date": "2002-03", "DOI": "10.1234/SHERLOCK.2002",
                          "tags": [{"tag": "film"}], "collections": ["TVPC4XK4"], "relations": {},
                          "dateAdded": "2011-02-05T10:00:00Z", "dateModified": "2011-02-05T10:00:00Z"})
    return library


@dataclass
class Fault:
    status: int | None  # None: answer normally but add ``headers``
    headers: dict[str, str]
    body: str
    times: int
    path: str | None  # regular expression searched in the path below the library prefix
    start: int | None
    method: str | None = None  # only requests with this method


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the /api prefix of the local API
    params: dict[str, str]
    headers: dict[str, str]


class FakeZoteroAPI(WriteSide):
    """The fake server. Use as a context manager; :attr:`url` is the endpoint to give pyzotero."""

    def __init__(self, *, api_key: str | None = None, local: bool = False, local_enabled: bool = True,
                 max_limit: int = 100, server_id: str | None = "fake-server-1", writes: bool = False) -> None:
        self.local, self.server_id, self.writes = local, server_id, writes
        self._settings = {"api_key": api_key, "local_enabled": local_enabled, "max_limit": max_limit}
        self.server = HTTPServer(host="127.0.0.1", port=0)
        self.server.expect_request(re.compile(r".*")).respond_with_handler(self._handle)
        self.reset()

    def reset(self) -> None:
        """Forget libraries, faults and requests and undo changes to the settings, so that one
        running server can serve many tests (starting and stopping one takes half a second)."""
        self.api_key: str | None = self._settings["api_key"]
        self.local_enabled: bool = self._settings["local_enabled"]
        self.max_limit: int = self._settings["max_limit"]
        self.libraries: dict[tuple[str, int], Library] = {}
        self.faults: list[Fault] = []
        self.requests: list[RecordedRequest] = []
        self.fail_second_half = 0  # item POSTs whose second half of objects fail (code 500)
        self.key_writes = True  # whether the API key may write (GET /keys/current says; writes get 403)
        self._key_counter = 0
        self.server.clear_log()

    def __enter__(self) -> FakeZoteroAPI:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url_for("/api" if self.local else "/").rstrip("/")

    def add_library(self, library: Library) -> Library:
        self.libraries[(library.kind, library.id)] = library
        return library

    def inject(self, status: int | None, headers: dict[str, str] | None = None, *, times: int = 1,
               path: str | None = None, start: int | None = None, body: str = "", method: str | None = None) -> None:
        """Answer the next ``times`` matching requests with ``status`` (and ``headers``, ``body``)."""
        default = {429: "Too Many Requests", 503: "Service Unavailable",
                   412: "Library has been modified since specified version"}.get(status or 0, "Error")
        self.faults.append(Fault(status, dict(headers or {}), body or default, times, path, start, method))

    def calls(self, path_pattern: str) -> list[RecordedRequest]:
        """The recorded requests whose path fully matches ``path_pattern``."""
        return [r for r in self.requests if re.fullmatch(path_pattern, r.path)]

    # -- dispatch ----------------------------------------------------------------------------
    def _handle(self, request: Request) -> Response:
        path = request.path
        if self.local:
            if not (path == "/api" or path.startswith("/api/")):
                return self._text(404, "Not Found")
            path = path[len("/api"):] or "/"
        params = {k: v for k, v in request.args.items()}
        self.requests.append(RecordedRequest(request.method, path, params, dict(request.headers)))
        match = _LIBRARY_RE.match(path)
        below = (match.group(3) or "") if match else path
        fault = self._fault(below, params, request.method)
        if fault and fault.status is not None:
            return self._text(fault.status, fault.body, fault.headers)
        response = self._serve(request, path, params, match)
        if fault:
            response.headers.update(fault.headers)
        return response

    def _fault(self, below: str, params: dict[str, str], method: str = "GET") -> Fault | None:
        for fault in self.faults:
            if fault.method is not None and fault.method != method:
                continue
            if fault.path is not None and not re.search(fault.path, below):
                continue
            if fault.start is not None and int(params.get("start", 0)) != fault.start:
                continue
            fault.times -= 1
            if fault.times <= 0:
                self.faults.remove(fault)
            return fault
        return None

    def _serve(self, request: Request, path: str, params: dict[str, str], match: re.Match | None) -> Response:
        if self.local and not self.local_enabled:
            return self._text(403, "Local API is not enabled")
        if self.local and path == "/":
            return self._text(200, "Nothing to see here.")
        if request.method == "GET" and path.rstrip("/") in ("/items/new", "/itemTypeFields", "/itemTypeCreatorTypes"):
            return self._template(path.rstrip("/"), params)
        if not self.local and request.method == "GET" and path == "/keys/current":
            return self._key_info(request, params)
        if not self.local and request.method != "GET" and not self.key_writes and match:
            return self._text(403, "Write access denied")
        if request.method != "GET" and not self.writes:
            return self._text(501, f"{request.method} is not implemented by the fake Zotero API (reads only; "
                                   "pass writes=True)")
        if request.method not in ("GET", "POST", "PATCH", "PUT", "DELETE"):
            return self._text(501, f"{request.method} is not implemented by the fake Zotero API")
        if not match:
            return self._text(404, "Not found")
        kind, library_id = match.group(1), int(match.group(2))
        if self.local and kind == "users":
            users = [lib for (k, _), lib in self.libraries.items() if k == "users"]
            if library_id != 0 and all(lib.id != library_id for lib in users):
                return self._text(400, "Only the local user's library is available (use user ID 0)")
            library = users[0] if users else None
        else:
            library = self.libraries.get((kind, library_id))
            # The local API serves group libraries too, and its reads need no key.
            denied = None if self.local else self._denied(request, params, library)
            if denied:
                return denied
        if library is None:
            return self._text(404, "Not found")
        if params.get("format", "json") != "json":
            return self._text(400, f"format={params['format']} is not supported by the fake Zotero API")
        since = request.headers.get("If-Modified-Since-Version")
        if since and request.method == "GET" and since.isdigit() and int(since) >= library.version:
            return Response(status=304, headers={**self._common(), "Last-Modified-Version": str(library.version)})
        below = match.group(3) or "/"
        for method, pattern, handler in ROUTES:
            route = re.fullmatch(pattern, below)
            if route and method == request.method:
                return getattr(self, handler)(request, library, below, params, **route.groupdict())
        return self._text(404, "Not found")

    def _denied(self, request: Request, params: dict[str, str], library: Library | None) -> Response | None:
        key = request.headers.get("Zotero-API-Key") or params.get("key")
        authorization = request.headers.get("Authorization", "")
        if not key and authorization.startswith("Bearer "):
            key = authorization[len("Bearer "):]
        if key and key != self.api_key:
            return self._text(403, "Invalid key")
        if not key and not (library and library.public):
            return self._text(403, "Forbidden")
        return None

    def _unknown_collection(self, key: str) -> Response:
        # The Web API answers 404; Zotero's local API answers 400 for a collection it does not know.
        if self.local:
            return self._text(400, f"Collection {key} not found")
        return self._text(404, "Collection not found")

    def _key_info(self, request: Request, params: dict[str, str]) -> Response:
        """``GET /keys/current``, as the Web API documents it: the key (from its header) and its
        access, ``{"user": {"library", "files", "notes", "write"}, "groups": {"all": {...}}}``."""
        denied = self._denied(request, params, None)
        if denied:
            return denied
        users = [lib.id for (kind, _), lib in self.libraries.items() if kind == "users"]
        body = {"key": self.api_key, "userID": users[0] if users else 0, "username": "fake-user",
                "access": {"user": {"library": True, "files": True, "notes": True, "write": self.key_writes},
                           "groups": {"all": {"library": True, "write": self.key_writes}}}}
        return Response(json.dumps(body), status=200, headers=self._common(), content_type="application/json")

    # -- handlers ----------------------------------------------------------------------------
    def _items(self, request: Request, library: Library, below: str, params: dict[str, str],
               collection: str | None = None) -> Response:
        if collection and collection not in library.collections:
            return self._unknown_collection(collection)
        trash = below.endswith("/trash")
        objects = [o for o in library.items.values()
                   if (bool(o["data"].get("deleted")) == trash or (params.get("includeTrashed") == "1" and not trash))
                   and (not below.endswith("/top") or not o["data"].get("parentItem"))
                   and (collection is None or collection in (o["data"].get("collections") or ()))]
        if "itemType" in params:
            wanted = params["itemType"]
            if wanted.startswith("-"):
                objects = [o for o in objects if o["data"]["itemType"] != wanted[1:]]
            else:
                types = {t.strip() for t in wanted.split("||")}
                objects = [o for o in objects if o["data"]["itemType"] in types]
        return self._page(request, library, objects, params, "dateModified")

    def _item(self, request: Request, library: Library, below: str, params: dict[str, str], item: str) -> Response:
        if item not in library.items:
            return self._text(404, "Item not found")
        return self._json(library.items[item], {"Last-Modified-Version": str(library.items[item]["version"])})

    def _collections(self, request: Request, library: Library, below: str, params: dict[str, str],
                     collection: str | None = None) -> Response:
        if collection and collection not in library.collections:
            return self._unknown_collection(collection)
        objects = [o for o in library.collections.values() if not o["data"].get("deleted")]
        if collection:
            objects = [o for o in objects if o["data"].get("parentCollection") == collection]
        elif below.endswith("/top"):
            objects = [o for o in objects if not o["data"].get("parentCollection")]
        return self._page(request, library, objects, params, None)

    def _collection(self, request: Request, library: Library, below: str, params: dict[str, str],
                    collection: str) -> Response:
        if collection not in library.collections:
            return self._unknown_collection(collection)
        return self._json(library.collections[collection])

    # -- responses ---------------------------------------------------------------------------
    def _page(self, request: Request, library: Library, objects: list[dict], params: dict[str, str],
              default_sort: str | None) -> Response:
        try:
            start = int(params.get("start", 0))
            limit = min(int(params.get("limit", 25)), self.max_limit)
            since = int(params.get("since", 0))
        except ValueError:
            return self._text(400, "Invalid start, limit or since")
        if start < 0 or limit < 1:
            return self._text(400, "Invalid start or limit")
        objects = [o for o in objects if int(o.get("version") or 0) > since]
        sort = params.get("sort", default_sort)
        if sort:
            field_name = {"name": "name", "title": "title"}.get(sort, sort)
            descending = params.get("direction", "desc" if sort.startswith("date") else "asc") == "desc"
            objects = sorted(objects, key=lambda o: str(o["data"].get(field_name) or ""), reverse=descending)
        total = len(objects)
        base = request.base_url
        others = [(k, v) for k, v in request.args.items(multi=True) if k != "start"]

        def link(at: int, rel: str) -> str:
            query = urlencode(others + ([("start", str(at))] if at else []))
            return f'<{base}{"?" + query if query else ""}>; rel="{rel}"'

        links = []
        if start > 0:
            links += [link(0, "first"), link(max(0, start - limit), "prev")]
        if start + limit < total:
            links.append(link(start + limit, "next"))
        if total > limit:
            links.append(link((total - 1) // limit * limit, "last"))
        links.append(f'<https://www.zotero.org/{library.kind}/{library.id}/items>; rel="alternate"')
        return self._json(objects[start:start + limit], {
            "Total-Results": str(total), "Last-Modified-Version": str(library.version), "Link": ", ".join(links)})

    def _json(self, body: Any, headers: dict[str, str] | None = None) -> Response:
        return Response(json.dumps(body), 200, {**self._common(), **(headers or {})}, content_type="application/json")

    def _text(self, status: int, text: str, headers: dict[str, str] | None = None) -> Response:
        return Response(text, status, {**self._common(), **(headers or {})}, content_type="text/plain")

    def _common(self) -> dict[str, str]:
        headers = {"Zotero-API-Version": "3"}
        if self.local and self.server_id:  # None: Zotero 7-9, which send no server ID
            headers["Zotero-Server-ID"] = self.server_id
        return headers
