"""The write side of the fake Zotero API of tests/zotero_server.py: a mixin of FakeZoteroAPI,
enabled by ``FakeZoteroAPI(writes=True)``.

Implemented: the WRITE side (Web API v3 "write requests")
    POST <lib>/items and <lib>/collections: a JSON array of at most 50 objects (more -> 413,
    not an array -> 400). An object without ``key`` is created (new key, version = the new
    library version); one with a ``key`` of an existing object is updated with PATCH semantics
    (its ``version``, when given, must equal the object's -> else that object fails with 412).
    ``Zotero-Write-Token``: a token already used by a successful request -> 412 (as the docs
    say: "If a request with the same write token has already been processed, 412"); a failed
    request does not use it up. ``If-Unmodified-Since-Version`` on the request -> 412 when the
    library version is greater (the dataserver compares with ``>``). The answer is ``{"successful": {"0": {...}}, "success": {"0":
    "KEY"}, "unchanged": {}, "failed": {"1": {"key": ..., "code": 400, "message": ...}}}`` with
    ``Last-Modified-Version``; each object written gets a version of its own (the library version
    goes up once per object, as in the dataserver).
    Per object: missing/unknown itemType -> 400, an unknown collection -> 409, unchanged data
    -> "unchanged".
    PATCH/PUT <lib>/items/<key> (and collections/<key>): ``If-Unmodified-Since-Version`` (or
    the body's ``version``) must equal the object's version -> else 412; no precondition ->
    428; answer 204 with the new ``Last-Modified-Version``.
    DELETE <lib>/items?itemKey=K1,K2 (and collections?collectionKey=): at most 50 keys (more ->
    413, none -> 400), ``If-Unmodified-Since-Version`` required (428) and compared with the
    library's version (412 when the library is newer); unknown keys are skipped; 204 with the new
    ``Last-Modified-Version``. DELETE <lib>/items/<key> (collections/<key>): 404 when unknown,
    428 without the header, 412 when the object is newer than the given version, else 204. As
    in Zotero (``eraseTx``), erasing an item erases its child items, and erasing a collection its
    subcollections, taking them out of their items' ``collections`` (the items stay, with the
    new version). The library version goes up once per request. (Web API docs "Deleting Multiple Items", "Deleting an
    Item"; Zotero 10's ``deleteMultipleObjects``/``deleteSingleObject`` answer the same.)
    GET /items/new?itemType=T (not under a library, as on api.zotero.org): an item template;
    GET /itemTypeFields?itemType=T and /itemTypeCreatorTypes?itemType=T (in both modes): its fields
    and creator types, localized (en-US). The item types are those of TEMPLATE_FIELDS.
    Fault injection for writes: ``inject(..., method="POST")`` limits a fault to one method
    (e.g. a 412 on the next write, a 429 with Retry-After); :attr:`FakeZoteroAPI.fail_second_half`
    > 0 makes that many next item POSTs fail the second half of their objects (code 500) while
    the first half is written.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from werkzeug import Request, Response

if TYPE_CHECKING:
    from tests.fakes.zotero_server import Library

MAX_WRITE_OBJECTS = 50  # per POST, as on api.zotero.org
_KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"  # Zotero's key alphabet
# Item templates of GET /items/new, as the real API returns them (abridged to the common fields).
_COMMON_FIELDS = ("title", "abstractNote", "date", "shortTitle", "language", "DOI", "url", "accessDate",
                  "archive", "archiveLocation", "libraryCatalog", "callNumber", "rights", "extra")
TEMPLATE_FIELDS = {
    "conferencePaper": ("proceedingsTitle", "conferenceName", "place", "publisher", "volume", "pages", "series",
                        "ISBN"),
    "journalArticle": ("publicationTitle", "volume", "issue", "pages", "series", "journalAbbreviation", "ISSN"),
    "preprint": ("genre", "repository", "archiveID", "place", "series", "number"),
    "book": ("series", "volume", "place", "publisher", "numPages", "ISBN"),
}
CREATOR_TYPES = {  # GET /itemTypeCreatorTypes: the primary type first, then by localized name
    "conferencePaper": ("author", "contributor", "editor", "reviewedAuthor", "seriesEditor", "translator"),
    "journalArticle": ("author", "contributor", "editor", "reviewedAuthor", "translator"),
    "preprint": ("author", "contributor", "editor", "reviewedAuthor", "translator"),
    "book": ("author", "contributor", "editor", "seriesEditor", "translator"),
}
_LOCALIZED = {"abstractNote": "Abstract", "accessDate": "Accessed", "archiveLocation": "Loc. in Archive",
              "url": "URL", "numPages": "# of Pages", "publicationTitle": "Publication",
              "journalAbbreviation": "Journal Abbr"}  # the others: "proceedingsTitle" -> "Proceedings Title"

class WriteSide:
    """POST/PATCH/PUT of items and collections, item templates and type metadata. Uses the
    fake's ``_text``/``_json``/``_common`` answers, ``_key_counter`` and ``fail_second_half``."""

    def _template(self, path: str, params: dict[str, str]) -> Response:
        item_type = params.get("itemType", "")
        if item_type not in TEMPLATE_FIELDS:
            return self._text(400, f"Invalid item type '{item_type}'")
        fields = ("title", *TEMPLATE_FIELDS[item_type], *(f for f in _COMMON_FIELDS if f != "title"))
        if path != "/items/new":
            names, kind = (fields, "field") if path == "/itemTypeFields" else (CREATOR_TYPES[item_type], "creatorType")
            return self._json([{kind: name, "localized": _LOCALIZED.get(name) or re.sub(
                r"(?<=[a-z])(?=[A-Z])", " ", name[0].upper() + name[1:])} for name in names])
        template: dict[str, Any] = {"itemType": item_type, "title": "",
                                    "creators": [{"creatorType": "author", "firstName": "", "lastName": ""}]}
        template.update({name: "" for name in fields})
        template.update(tags=[], collections=[], relations={})
        return self._json(template)

    def _new_key(self, library: Library) -> str:
        while True:
            self._key_counter += 1
            n, key = self._key_counter, ""
            for _ in range(8):
                n, digit = divmod(n, len(_KEY_CHARS))
                key = _KEY_CHARS[digit] + key
            if key not in library.items and key not in library.collections:
                return key

    def _precondition(self, request: Request, library: Library) -> Response | None:
        expected = request.headers.get("If-Unmodified-Since-Version")
        # The dataserver refuses when the library changed after the given version (library > given).
        if expected is not None and (not expected.isdigit() or library.version > int(expected)):
            return self._text(412, f"Library has been modified since specified version (expected {expected}, "
                                   f"found {library.version})", {"Last-Modified-Version": str(library.version)})
        return None

    def _post_objects(self, request: Request, library: Library, below: str, params: dict[str, str]) -> Response:
        kind = "items" if below.startswith("/items") else "collections"
        token = request.headers.get("Zotero-Write-Token")
        if token and token in library.write_tokens:
            return self._text(412, "Write token already used")
        failed_precondition = self._precondition(request, library)
        if failed_precondition:
            return failed_precondition
        try:
            objects = json.loads(request.get_data(as_text=True) or "null")
        except ValueError:
            return self._text(400, "Invalid JSON")
        if not isinstance(objects, list):
            return self._text(400, "Uploaded data must be a JSON array")
        if len(objects) > MAX_WRITE_OBJECTS:
            return self._text(413, f"Only {MAX_WRITE_OBJECTS} objects can be submitted at a time")
        doomed = len(objects) // 2 if kind == "items" and self.fail_second_half > 0 else len(objects)
        if kind == "items" and self.fail_second_half > 0:
            self.fail_second_half -= 1
        store = library.items if kind == "items" else library.collections
        result: dict[str, dict] = {"successful": {}, "success": {}, "unchanged": {}, "failed": {}}
        for index, data in enumerate(objects):
            slot = str(index)
            key = data.get("key") if isinstance(data, dict) else None
            error = self._invalid(kind, library, data, store) if index < doomed else (500, "Internal error (injected)")
            if error:
                result["failed"][slot] = {"key": key or "", "code": error[0], "message": error[1]}
                continue
            data = {k: v for k, v in data.items() if k not in ("version",)}
            if key in store:
                current = store[key]
                merged = {**current["data"], **data}
                if merged == current["data"]:
                    result["unchanged"][slot] = key
                    continue
                new_version = library.version = library.version + 1  # the dataserver: one version per object
                current["data"] = merged
                current["version"] = merged["version"] = new_version
                obj = current
            else:
                key = key or self._new_key(library)
                new_version = library.version = library.version + 1
                data.update(key=key, version=new_version)
                if kind == "items":
                    data.setdefault("dateAdded", "2026-12-02T12:00:00Z")
                    data.setdefault("dateModified", "2026-12-02T12:00:00Z")
                    data.setdefault("tags", [])
                    data.setdefault("collections", [])
                    data.setdefault("relations", {})
                else:
                    data.setdefault("parentCollection", False)
                    data.setdefault("relations", {})
                obj = library.add(kind, {"key": key, "version": new_version, "meta": {}, "data": data})
            result["successful"][slot] = obj
            result["success"][slot] = key
        if token:
            library.write_tokens.add(token)
        return self._json(result, {"Last-Modified-Version": str(library.version)})

    def _invalid(self, kind: str, library: Library, data: Any, store: dict) -> tuple[int, str] | None:
        if not isinstance(data, dict):
            return 400, "Object must be a JSON object"
        key = data.get("key")
        if key is not None and key not in store:
            return 404, f"{kind[:-1].capitalize()} {key} not found"
        if key in store and "version" in data and int(data["version"]) != int(store[key]["version"]):
            return 412, f"{kind[:-1].capitalize()} has been modified since specified version (expected " \
                        f"{data['version']}, found {store[key]['version']})"
        if kind == "items":
            item_type = data.get("itemType") or (store[key]["data"].get("itemType") if key in store else None)
            if item_type is None:
                return 400, "'itemType' property not provided"
            if key not in store and item_type not in TEMPLATE_FIELDS:
                return 400, f"'{item_type}' is not a valid itemType"
            missing = [c for c in data.get("collections") or () if c not in library.collections]
            if missing:
                return 409, f"Collection {missing[0]} not found"
        elif key not in store and not data.get("name"):
            return 400, "Collection name not provided"
        return None

    def _patch_object(self, request: Request, library: Library, below: str, params: dict[str, str],
                      item: str | None = None, collection: str | None = None) -> Response:
        store, key = (library.items, item) if item else (library.collections, collection)
        if key not in store:
            return self._text(404, "Not found")
        try:
            data = json.loads(request.get_data(as_text=True) or "null")
        except ValueError:
            return self._text(400, "Invalid JSON")
        if not isinstance(data, dict):
            return self._text(400, "Uploaded data must be a JSON object")
        expected = request.headers.get("If-Unmodified-Since-Version", data.get("version"))
        if expected is None:
            return self._text(428, "If-Unmodified-Since-Version not provided")
        if str(expected) != str(store[key]["version"]):
            return self._text(412, f"Object has been modified since specified version (expected {expected}, "
                                   f"found {store[key]['version']})")
        data = {k: v for k, v in data.items() if k != "version"}
        current = store[key]
        merged = {**current["data"], **data} if request.method == "PATCH" else {**data, "key": key}
        if merged != current["data"]:
            library.version += 1
            current["data"] = merged
            current["version"] = merged["version"] = library.version
        return Response(status=204, headers={**self._common(), "Last-Modified-Version": str(library.version)})

    def _delete_objects(self, request: Request, library: Library, below: str, params: dict[str, str]) -> Response:
        kind, parameter = ("items", "itemKey") if below.startswith("/items") else ("collections", "collectionKey")
        if request.headers.get("If-Unmodified-Since-Version") is None:
            return self._text(428, "If-Unmodified-Since-Version not provided")
        failed_precondition = self._precondition(request, library)
        if failed_precondition:
            return failed_precondition
        keys = [key.strip() for key in params.get(parameter, "").split(",") if key.strip()]
        if not keys:
            return self._text(400, f"'{parameter}' not provided")
        if len(keys) > MAX_WRITE_OBJECTS:
            return self._text(413, f"Cannot delete more than {MAX_WRITE_OBJECTS} objects at a time")
        return self._erase(library, kind, keys)

    def _delete_object(self, request: Request, library: Library, below: str, params: dict[str, str],
                       item: str | None = None, collection: str | None = None) -> Response:
        kind, key = ("items", item) if item else ("collections", collection)
        store = library.items if item else library.collections
        if key not in store:
            return self._text(404, "Not found")
        expected = request.headers.get("If-Unmodified-Since-Version")
        if expected is None:
            return self._text(428, "If-Unmodified-Since-Version not provided")
        if not expected.isdigit():
            return self._text(400, "Invalid If-Unmodified-Since-Version value")
        if store[key]["version"] > int(expected):
            return self._text(412, f"Object has been modified since specified version (expected {expected}, "
                                   f"found {store[key]['version']})")
        return self._erase(library, kind, [key])

    def _erase(self, library: Library, kind: str, keys: list[str]) -> Response:
        store = library.items if kind == "items" else library.collections
        doomed = [key for key in keys if key in store]
        library.version += 1
        while doomed:
            key = doomed.pop()
            if store.pop(key, None) is None:
                continue
            if kind == "items":  # its notes and attachments go with it
                doomed += [k for k, o in store.items() if o["data"].get("parentItem") == key]
            else:  # subcollections go too; the items stay, out of the collection
                doomed += [k for k, o in store.items() if o["data"].get("parentCollection") == key]
                for obj in library.items.values():
                    if key in obj["data"].get("collections", []):
                        obj["data"]["collections"] = [c for c in obj["data"]["collections"] if c != key]
                        obj["version"] = obj["data"]["version"] = library.version
        return Response(status=204, headers={**self._common(), "Last-Modified-Version": str(library.version)})
