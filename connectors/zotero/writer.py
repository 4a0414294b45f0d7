"""Writes to a Zotero library over the Web API (or Zotero's local API), for ``litrank sync``.

One thin wrapper, :class:`ZoteroWriter`, around the pyzotero client of a
:class:`connectors.zotero.web.ZoteroLibrary`: reads go through the library (its paging,
retries and key-redaction), writes are sent here.

Why the writes do not go through pyzotero's write methods (checked in pyzotero 1.16's source):

* ``create_items`` raises ``TooManyItemsError`` above 50 objects (no chunking), makes a fresh
  ``Zotero-Write-Token`` per call (so a retry could not be recognised by the server), does not
  retry a 429 or 503 (``_post_check`` raises; a 429 it lets through surfaces as a JSON error)
  and returns the response without looking at its ``failed`` map;
* ``update_items`` chunks, but returns ``True`` whatever the response said: the ``failed`` map,
  per-object 412s, even a 429 that it did not retry;
* ``addto_collection`` / ``deletefrom_collection`` send one PATCH per item.

So every write here is one ``POST <library>/items`` (or ``/collections``) of at most 50 objects,
sent with pyzotero's own ``_write`` (its httpx client, endpoint and authentication headers,
including the local API's write headers), with a write token that is kept across retries of
the same batch. 429 and 5xx answers are retried (``MAX_ATTEMPTS``), waiting ``Retry-After`` /
``Backoff`` (or 2, 4, 8 s) through the library's injectable ``sleep``; a ``Backoff`` on a
successful answer delays the next request. Updates carry each object's ``version`` (the API
then answers a concurrent change with a per-object 412): those objects are fetched again and
their change is recomputed and sent once more. Whatever still fails is reported per object in
:class:`WriteReport` (never raised half-way), so a second run completes the job.

Through Zotero 10's local API a :class:`connectors.zotero.local_writes.LocalWriteAccess` gives
each request its server ID and local key (asking Zotero for one at the first write); a 401 (a
revoked key, or a one-write key used up) makes it ask once more before the request is resent,
and the local API's own refusals (read-only Zotero, another database) end the write with a
clear error. Its item templates are built from ``/itemTypeFields``: it has no ``/items/new``.

The API key is never part of a message: errors go through the library's redaction.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from connectors.errors import SourceError
from connectors.zotero.items import join_collection_path, split_collection_path
from connectors.zotero.web import MAX_ATTEMPTS, RETRY_STATUSES, ZoteroLibrary, _seconds, collection_paths

if TYPE_CHECKING:
    from connectors.zotero.local_writes import LocalWriteAccess

log = logging.getLogger("litrank")

BATCH_SIZE = 50  # the API's maximum of objects per write request


class WriteError(SourceError):
    """A write request failed as a whole (after retries)."""


@dataclass
class Failure:
    """One object the API did not write."""
    key: str  # the item key, or '' for an item that was to be created
    label: str  # its title, for messages
    code: int
    message: str

    def __str__(self) -> str:
        return f"{self.label or self.key or '(untitled)'}: HTTP {self.code} {self.message}".strip()


@dataclass
class WriteReport:
    """What a batched write did: the objects written (API ``data``), unchanged keys, failures."""
    written: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)

    def extend(self, other: WriteReport) -> None:
        self.written += other.written
        self.unchanged += other.unchanged
        self.failures += other.failures


def _batches(objects: list, size: int = BATCH_SIZE) -> Iterable[list]:
    for start in range(0, len(objects), size):
        yield objects[start:start + size]


class ZoteroWriter:
    """Collections and items of one library, written in batches of at most 50 objects."""

    def __init__(self, library: ZoteroLibrary, *, new_token: Callable[[], str] = lambda: uuid.uuid4().hex,
                 access: LocalWriteAccess | None = None,
                 on_written: Callable[[str, int], None] | None = None) -> None:
        self.library = library
        # Told (kind, number of objects) after each write request answered, for progress lines.
        self.on_written = on_written
        self.access = access  # the server ID and key writes to Zotero's local API need
        self.zot = library.zot
        self.source = library.source
        self._new_token = new_token
        self._pause = 0.0  # a Backoff the last answer asked for
        target = library.target
        self._prefix = f"/{target.library_type}s/{target.library_id}"

    def __repr__(self) -> str:
        return f"ZoteroWriter({self.source!r})"

    # -- reading -----------------------------------------------------------------------------
    def items(self, collection_key: str | None = None) -> list[dict[str, Any]]:
        """The ``data`` of the library's (or one collection's) top-level items, trash left out."""
        return [d for d in self.library.top_items(collection_key) if not d.get("deleted")]

    def trashed_items(self) -> list[dict[str, Any]]:
        """The ``data`` of the items in the library's trash."""
        return self.library.trashed_items()

    def item(self, key: str) -> dict[str, Any]:
        obj = self.library._request(lambda: self.zot.item(key))
        return obj.get("data", obj) if isinstance(obj, dict) else obj

    def find_collection(self, path: str) -> str | None:
        """The key of the collection at ``Parent/Child`` (exact, else case-insensitive), or None."""
        paths = collection_paths(self.library.collections())
        wanted = join_collection_path(split_collection_path(path))
        exact = [k for k, p in paths.items() if p == wanted]
        return (exact or [k for k, p in paths.items() if p.casefold() == wanted.casefold()] or [None])[0]

    def template(self, item_type: str) -> dict[str, Any]:
        """pyzotero's ``item_template`` (GET /items/new, cached by pyzotero) for ``item_type``; from
        Zotero's local API, which has no /items/new, the same shape built from its item type's
        fields and creator types."""
        from pyzotero import errors as pz

        def fetch() -> dict[str, Any] | None:
            try:
                return self.zot.item_template(item_type)
            except pz.CallDoesNotExistError:
                return None

        template = self.library._request(fetch)
        if template is not None:
            return template
        fields = self.library._request(lambda: self.zot.item_type_fields(item_type))
        creator_types = self.library._request(lambda: self.zot.item_creator_types(item_type))
        primary = creator_types[0]["creatorType"] if creator_types else "author"
        return {"itemType": item_type, "creators": [{"creatorType": primary, "firstName": "", "lastName": ""}],
                **{str(f["field"]): "" for f in fields}, "tags": [], "collections": [], "relations": {}}

    # -- collections -------------------------------------------------------------------------
    def ensure_collection(self, path: str) -> tuple[str, list[str]]:
        """The key of the collection ``Parent/Child`` (``\\/`` for a slash inside a name), creating
        it and any missing parent; also the paths of the collections created."""
        names = split_collection_path(path)
        if not names:
            raise WriteError(f"{self.source}: the collection name is empty")
        paths = collection_paths(self.library.collections())
        exact = join_collection_path(names)
        by_path = {p.casefold(): k for k, p in sorted(paths.items(), key=lambda kp: kp[1] == exact)}  # exact last: it wins
        parent: str | None = None
        created: list[str] = []
        for depth in range(1, len(names) + 1):
            sub = join_collection_path(names[:depth])
            key = by_path.get(sub.casefold())
            if key is None:
                answer = self._post("collections", [{"name": names[depth - 1], "parentCollection": parent or False}])
                if answer["failed"]:
                    failure = next(iter(answer["failed"].values()))
                    raise WriteError(f"{self.source}: cannot create the collection {sub!r}: "
                                     f"HTTP {failure.get('code')} {failure.get('message', '')}".rstrip())
                key = str(next(iter(answer["success"].values())))
                by_path[sub.casefold()] = key
                created.append(sub)
            parent = key
        return str(parent), created

    # -- items -------------------------------------------------------------------------------
    def create_items(self, items: list[dict[str, Any]], collection_key: str | None = None) -> WriteReport:
        """Create ``items`` (template-shaped ``data``), in ``collection_key`` if given, 50 a request.

        A 412 for a whole batch (its write token was already used: an earlier attempt went
        through although its answer was lost) is healed by refetching the library and sending
        again, with a new token, only the items that are not there yet."""
        report = WriteReport()
        for batch in _batches([dict(item) for item in items]):
            if collection_key:
                for item in batch:
                    item["collections"] = sorted({*(item.get("collections") or []), collection_key})
            try:
                answer = self._post("items", batch)
            except _PreconditionFailed:
                present = {self._fingerprint(d): d for d in self.items()}
                report.written += [present[self._fingerprint(i)] for i in batch if self._fingerprint(i) in present]
                batch = [i for i in batch if self._fingerprint(i) not in present]
                if not batch:
                    continue
                answer = self._post("items", batch, retry_precondition=False)
            report.extend(self._report(answer, batch))
        return report

    def update_items(self, items: list[dict[str, Any]],
                     change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> WriteReport:
        """Apply ``change(data)`` (the fields to set, or None for nothing) to each item's current
        ``data``, with a version check per object; an object that changed meanwhile (412) is
        fetched again and its change recomputed and sent once more."""
        report = WriteReport()
        patches = [(data, patch) for data in items if (patch := change(data))]
        for batch in _batches(patches):
            objects = [{**patch, "key": data["key"], "version": data["version"]} for data, patch in batch]
            try:
                first = self._report(self._post("items", objects), objects)
            except _PreconditionFailed:  # the whole request: refetch every object of the batch
                first = WriteReport(failures=[Failure(str(o["key"]), "", 412, "") for o in objects])
            conflicted = {f.key for f in first.failures if f.code == 412}
            first.failures = [f for f in first.failures if f.code != 412]
            report.extend(first)
            if not conflicted:
                continue
            retry = []
            for key in sorted(conflicted):
                fresh = self.item(key)
                patch = change(fresh)
                if patch:
                    retry.append({**patch, "key": key, "version": fresh["version"]})
            if retry:
                report.extend(self._report(self._post("items", retry, retry_precondition=False), retry))
        return report

    def add_to_collection(self, items: list[dict[str, Any]], collection_key: str,
                          extra: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda data: None) -> WriteReport:
        """Add existing items to a collection (and set ``extra(data)`` fields on them)."""
        def change(data: dict[str, Any]) -> dict[str, Any] | None:
            patch = dict(extra(data) or {})
            collections = list(data.get("collections") or [])
            if collection_key not in collections:
                patch["collections"] = collections + [collection_key]
            return patch or None
        return self.update_items(items, change)

    def remove_from_collection(self, items: list[dict[str, Any]], collection_key: str,
                               new_extra: Callable[[dict[str, Any]], str] | None = None) -> WriteReport:
        """Take items out of a collection; they stay in the library. ``new_extra`` rewrites Extra."""
        def change(data: dict[str, Any]) -> dict[str, Any] | None:
            collections = list(data.get("collections") or [])
            if collection_key not in collections:
                return None
            update: dict[str, Any] = {"collections": [c for c in collections if c != collection_key]}
            if new_extra is not None:
                update["extra"] = new_extra(data)
            return update
        return self.update_items(items, change)

    # -- the write request -------------------------------------------------------------------
    @staticmethod
    def _fingerprint(data: dict[str, Any]) -> tuple[str, ...]:
        return tuple(str(data.get(f) or "").strip().casefold() for f in ("itemType", "title", "DOI", "url"))

    def _report(self, answer: dict[str, Any], sent: list[dict[str, Any]]) -> WriteReport:
        report = WriteReport()
        for index, obj in (answer.get("successful") or {}).items():
            report.written.append(obj.get("data", obj) if isinstance(obj, dict) else {"key": obj})
        report.unchanged += [str(key) for key in (answer.get("unchanged") or {}).values()]
        for index, failure in (answer.get("failed") or {}).items():
            sent_obj = sent[int(index)] if str(index).isdigit() and int(index) < len(sent) else {}
            report.failures.append(Failure(str(failure.get("key") or sent_obj.get("key") or ""),
                                           str(sent_obj.get("title") or ""), int(failure.get("code") or 0),
                                           self.library.redact(str(failure.get("message") or ""))))
        return report

    def _post(self, kind: str, objects: list[dict[str, Any]], *, retry_precondition: bool = True) -> dict[str, Any]:
        """POST at most 50 objects to ``<library>/<kind>``; the parsed answer. One write token per
        batch, reused by its retries (429, 5xx, transport errors)."""
        if len(objects) > BATCH_SIZE:
            raise ValueError(f"at most {BATCH_SIZE} objects per write request")
        url = f"{self.zot.endpoint}{self._prefix}/{kind}"
        headers = {"Zotero-Write-Token": self._new_token(), "Content-Type": "application/json"}
        failure: BaseException | None = None
        status: int | None = None
        reauthorized = False
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if self.access is not None:
                self.access.ensure_key()
            if self._pause:
                pause, self._pause = self._pause, 0.0
                self.library._wait(pause)
            try:
                response = self.zot._write("POST", url, json=objects, headers=headers)
            except Exception as exc:  # transport: retried with the same token
                failure, status = exc, None
                if attempt < MAX_ATTEMPTS:
                    self.library._wait(2.0 ** attempt)
                    continue
                break
            status = response.status_code
            delay = _seconds(response.headers.get("Retry-After") or response.headers.get("Backoff"))
            if 200 <= status < 300:
                if delay:
                    self._pause = delay
                try:
                    answer = response.json()
                except ValueError as exc:
                    failure = exc
                    break
                if not isinstance(answer, dict):
                    failure = ValueError("not a JSON object")
                    break
                if self.access is not None:
                    self.access.written()
                if self.on_written is not None:
                    self.on_written(kind, len(objects))
                return answer
            if self.access is not None:
                if status == 401 and not reauthorized:  # revoked, or a one-write key used up
                    reauthorized = True
                    self.access.key_rejected()
                    continue
                self.access.raise_for_refusal(status, response.text)
            if status == 412 and retry_precondition and kind == "items":
                raise _PreconditionFailed()
            if status in RETRY_STATUSES and attempt < MAX_ATTEMPTS:
                self.library._wait(delay if delay is not None else 2.0 ** attempt)
                continue
            failure = WriteError(f"HTTP {status}")
            break
        detail = self.library.redact(str(failure))
        log.debug("%s: write failed: %s", self.source, detail[:500])
        if status == 413:
            message = "the Zotero API refused a write of too many objects (HTTP 413)"
        elif status == 412:
            message = "the library changed during the write (HTTP 412); run again"
        else:
            message = self.library._message(failure or WriteError("failed"), status)
        raise WriteError(f"{self.source}: {message}")


class _PreconditionFailed(Exception):
    """A whole write request answered 412 (its write token was used, or the library changed)."""
