"""Zotero libraries over HTTP, read with pyzotero: the Web API (``zotero:user/<id>``,
``zotero:group/<id>``) and the running Zotero's local API (``zotero:local-api``, Zotero 7 or
newer), each optionally with ``?collection=Parent/Child`` (that collection and its subcollections).

Top-level items are read 100 a page, following ``Link: rel="next"``; attachments and notes are
skipped and every item goes through :func:`connectors.zotero.items.paper_from_item`, as in the
local-database reader. The API leaves the trash out; items marked ``deleted`` are skipped too.

The Web API key comes from ``$ZOTERO_API_KEY``, else from ``config.ini`` in
``$LITRANK_CONFIG_DIR`` (default ``platformdirs.user_config_dir("litrank")``)::

    [zotero]
    api_key = <the key created at https://www.zotero.org/settings/keys>

Without a key the library is read as a public one. The key is never part of a message, log
line, repr or ``Paper.source``. ``$LITRANK_ZOTERO_API_URL`` replaces ``https://api.zotero.org``
(scheme, host, port) and ``$LITRANK_ZOTERO_LOCAL_API`` replaces ``http://127.0.0.1:23119/api``
(keep the one-segment path: pyzotero strips it from the local API's ``next`` links).

pyzotero retries a 429 itself (3 attempts, waiting ``Retry-After``), honours ``Backoff`` and
raises on 5xx. This wrapper retries 429 and 5xx (``MAX_ATTEMPTS`` per page, waiting
``Retry-After`` or 2, 4, 8 s), makes every wait through an injectable ``sleep``, and fails
instead of waiting more than ``max_wait`` seconds.
"""
from __future__ import annotations

import configparser
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from connectors.errors import SourceError
from connectors.zotero.items import (
    is_litrank_item_data,
    join_collection_path,
    paper_from_item,
    query_parameters,
    select_collections,
)
from recommender.paper import Paper

log = logging.getLogger("litrank")

API_KEY_ENV = "ZOTERO_API_KEY"
API_URL_ENV = "LITRANK_ZOTERO_API_URL"
LOCAL_API_ENV = "LITRANK_ZOTERO_LOCAL_API"
CONFIG_DIR_ENV = "LITRANK_CONFIG_DIR"
WEB_API_URL = "https://api.zotero.org"
LOCAL_API_URL = "http://127.0.0.1:23119/api"
KEYS_PAGE = "https://www.zotero.org/settings/keys"
LOCAL_API_HINT = ("start Zotero 7 and enable 'Allow other applications on this computer to communicate "
                  "with Zotero' (Settings → Advanced)")
PAGE_SIZE = 100  # the API's largest ``limit``
MAX_ATTEMPTS = 4  # per request, for 409, 429 and 5xx responses
MAX_WAIT = 120.0  # seconds; a longer Backoff / Retry-After fails the load
# 409 is "the target library is locked" (another write or a sync holds it): it passes, like 429/503.
RETRY_STATUSES = frozenset({409, 429, 500, 502, 503, 504})
_TRANSPORT_MODULES = ("httpx2", "httpx", "httpcore2", "httpcore", "requests", "urllib3")  # pyzotero's HTTP stacks
# zotero:user/<id> and zotero:group/<id>, also spelt zotero:web/users/<id> and zotero:web/groups/<id>
# (the API's own paths, like zotero:local-api/groups/<id>).
_URI_RE = re.compile(r"zotero:(?:(?P<kind>user|group)/(?P<id>\d+)|web/(?P<web_kind>user|group)s/(?P<web_id>\d+)"
                     r"|(?P<local>local-api)(?:/groups/(?P<local_group>\d+))?)\Z")
_KEY_RE = re.compile(r"[!-~]+\Z")  # printable ASCII, no spaces: anything else could not be sent in a header
_SECRET_RES = (re.compile(r"(?i)(bearer\s+)\S+"), re.compile(r"(?i)(zotero-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',&]+"),
               re.compile(r"(?i)([?&]key=)[^&\s]+"), re.compile(r"(?i)(/keys/)[^/?\s]+"))


@dataclass(frozen=True)
class Target:
    """What a ``zotero:`` URI names; ``source`` is the URI shown in messages and papers."""
    library_type: str  # "user" or "group"
    library_id: int
    local: bool
    collection: str | None
    source: str


def parse_uri(uri: str) -> Target:
    """Parse ``zotero:user/<id>``, ``zotero:group/<id>`` (or ``zotero:web/users/<id>``,
    ``zotero:web/groups/<id>``) or ``zotero:local-api[/groups/<id>]``, each with an
    optional ``?collection=Path/To`` (percent-encoding is decoded; ``+`` is kept)."""
    target, _, query = uri.partition("?")
    match = _URI_RE.match(target)
    if not match:
        raise SourceError(f"{target}: not a Zotero API source; use zotero:user/<id>, zotero:group/<id> or "
                          "zotero:local-api (zotero:local-api/groups/<id>), optionally followed by ?collection=Path/To")
    collection = None
    for name, value in query_parameters(query):
        collection = value.strip().strip("/").strip()
        if name != "collection" or not collection:  # the name is not echoed: it might be a secret
            raise SourceError(f"{target}: unsupported query in the Zotero URI; the only option is ?collection=Path/To")
    source = target + (f"?collection={collection}" if collection else "")
    if match["local"]:
        if match["local_group"]:  # a group library through the local API: /api/groups/<id>
            return Target("group", int(match["local_group"]), True, collection, source)
        return Target("user", 0, True, collection, source)
    return Target(match["kind"] or match["web_kind"], int(match["id"] or match["web_id"]), False, collection, source)


def config_path() -> Path:
    """``config.ini`` in ``$LITRANK_CONFIG_DIR``, else in the user configuration directory."""
    directory = os.environ.get(CONFIG_DIR_ENV)
    if not directory:
        import platformdirs

        directory = platformdirs.user_config_dir("litrank")
    return Path(directory).expanduser() / "config.ini"


def find_api_key() -> str | None:
    """The Zotero API key from ``$ZOTERO_API_KEY``, else from ``config.ini``; None if neither has one."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    if key:
        return key
    path = config_path()
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError) as exc:  # their text may quote the key's line
        raise SourceError(f"{path}: cannot read the litrank configuration ({type(exc).__name__})") from None
    key = parser.get("zotero", "api_key", fallback="").strip().strip("\"'")
    if key and os.name == "posix" and path.stat().st_mode & 0o077:
        log.warning("%s holds your Zotero API key and other users can read it; run: chmod 600 '%s'", path, path)
    return key or None


def collection_paths(collections: list[dict[str, Any]]) -> dict[str, str]:
    """Collection key -> "Parent/Child" path (:func:`~connectors.zotero.items.join_collection_path`),
    from the API's collection ``data`` objects."""
    by_key = {str(c["key"]): c for c in collections if not c.get("deleted")}
    paths: dict[str, str] = {}

    def path(key: str, seen: frozenset[str]) -> str:
        if key not in paths:
            data = by_key[key]
            name = join_collection_path([str(data.get("name") or key)])
            parent = data.get("parentCollection") or None
            paths[key] = (f"{path(parent, seen | {key})}/{name}"
                          if parent in by_key and parent not in seen else name)
        return paths[key]

    for key in by_key:
        path(key, frozenset())
    return paths


def _redact(text: str, *secrets: str | None) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<redacted>")
    for pattern in _SECRET_RES:
        text = pattern.sub(r"\1<redacted>", text)
    return text


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def client_for(uri: str, api_key: str | None = None, *, endpoint: str | None = None,
               sleep: Callable[[float], Any] = time.sleep, max_wait: float = MAX_WAIT) -> ZoteroLibrary:
    """One :class:`ZoteroLibrary` (one pyzotero client) for the library ``uri`` names.

    ``api_key`` defaults to :func:`find_api_key`; ``endpoint`` to ``$LITRANK_ZOTERO_API_URL`` /
    ``$LITRANK_ZOTERO_LOCAL_API``, else Zotero's own; ``sleep`` is called for every wait.
    """
    from pyzotero import zotero

    target = parse_uri(uri)
    if target.local:
        api_key = None
        endpoint = endpoint or os.environ.get(LOCAL_API_ENV) or LOCAL_API_URL
    else:
        api_key = (api_key if api_key is not None else find_api_key() or "").strip() or None
        endpoint = endpoint or os.environ.get(API_URL_ENV) or WEB_API_URL
        if api_key and not _KEY_RE.match(api_key):
            raise SourceError(f"{target.source}: the Zotero API key contains spaces or characters a key cannot "
                              f"have; copy it again from {KEYS_PAGE}")
    zot = zotero.Zotero(target.library_id, target.library_type, api_key, local=target.local)
    zot.endpoint = endpoint.rstrip("/")
    return ZoteroLibrary(zot, target, api_key, sleep=sleep, max_wait=max_wait)


class ZoteroLibrary:
    """A thin wrapper around one ``pyzotero.zotero.Zotero`` client: paging, waits, errors."""

    def __init__(self, zot: Any, target: Target, api_key: str | None, *,
                 sleep: Callable[[float], Any] = time.sleep, max_wait: float = MAX_WAIT) -> None:
        self.zot = zot
        self.target = target
        self.source = target.source
        self._secrets = [api_key] if api_key else []  # only to redact them; pyzotero sends the key as a header
        self._sleep = sleep
        self.max_wait = max_wait
        if hasattr(zot, "_check_backoff") and hasattr(zot, "backoff_until"):
            zot._check_backoff = self._wait_for_backoff  # pyzotero's own wait calls time.sleep, uncapped

    def __repr__(self) -> str:
        return f"ZoteroLibrary({self.source!r})"

    def add_secret(self, secret: str) -> None:
        """Keep ``secret`` (e.g. a local API key) out of every message from now on."""
        if secret and secret not in self._secrets:
            self._secrets.append(secret)

    def redact(self, text: str) -> str:
        """``text`` without this library's keys and anything shaped like a key parameter."""
        return _redact(text, *self._secrets)

    def check_write_access(self) -> None:
        """Raise :class:`SourceError` saying what is missing when the Web API key may not write
        this library (``GET /keys/current``). Asked before a sync ranks anything; the local API
        has its own key flow (``zotero_local_writes``)."""
        if self.target.local:
            return
        if not self._secrets:
            raise SourceError(f"{self.source}: writing needs a Zotero API key with write access: create one at "
                              f"{KEYS_PAGE} (tick \"Allow write access\") and set ${API_KEY_ENV}")
        try:
            response = self.zot._send("GET", f"{self.zot.endpoint.rstrip('/')}/keys/current")
        except Exception as exc:  # transport errors: said as for any other request
            raise SourceError(f"{self.source}: {self._message(exc, None)}") from None
        if response.status_code != 200:
            raise SourceError(f"{self.source}: {self._message(RuntimeError('keys/current'), response.status_code)}")
        try:
            info = response.json()
        except ValueError:
            raise SourceError(f"{self.source}: the Zotero API sent a key description litrank cannot read") from None
        access = info.get("access") or {}
        if self.target.library_type == "user":
            if int(info.get("userID") or -1) != self.target.library_id:
                raise SourceError(f"{self.source}: the API key belongs to user {info.get('userID')}, not to user "
                                  f"{self.target.library_id}; use that user's key (see {KEYS_PAGE})")
            allowed, what = (access.get("user") or {}).get("write"), "your library"
        else:
            groups = access.get("groups") or {}
            allowed = (groups.get(str(self.target.library_id)) or groups.get("all") or {}).get("write")
            what = f"group {self.target.library_id}"
        if not allowed:
            raise SourceError(f"{self.source}: the API key may read but not write {what}; litrank sync needs write "
                              f"access: edit the key at {KEYS_PAGE} (\"Allow write access\""
                              + ("" if what == "your library" else ", and write access to this group")
                              + f") or create a new one and set ${API_KEY_ENV}")

    # -- reading ---------------------------------------------------------------------------
    def collections(self) -> list[dict[str, Any]]:
        """The ``data`` of every collection of the library."""
        return [c.get("data", c) for c in self._all(lambda: self.zot.collections(limit=PAGE_SIZE))]

    def top_items(self, collection_key: str | None = None) -> list[dict[str, Any]]:
        """The ``data`` of every top-level item of the library, or of one collection (without its
        subcollections), oldest addition first."""
        params = {"limit": PAGE_SIZE, "sort": "dateAdded", "direction": "asc"}
        first = ((lambda: self.zot.collection_items_top(collection_key, **params)) if collection_key
                 else (lambda: self.zot.top(**params)))
        return [item.get("data", item) for item in self._all(first)]

    def trashed_items(self) -> list[dict[str, Any]]:
        """The ``data`` of every item in the library's trash (``<library>/items/trash``)."""
        params = {"limit": PAGE_SIZE, "sort": "dateAdded", "direction": "asc"}
        return [item.get("data", item) for item in self._all(lambda: self.zot.trash(**params))]

    def papers(self) -> list[Paper]:
        """The papers of the library (or of the collection the URI names, with its subcollections).

        The trash is left out, but for litrank's own items (tagged ``litrank``), marked
        ``fields["trashed"]``: moving a pick to the trash is a "no"."""
        paths = collection_paths(self.collections())
        if self.target.collection:
            subtree = self._subtree(paths)
            items: dict[str, dict[str, Any]] = {}
            for key in subtree:
                for data in self.top_items(key):
                    items.setdefault(str(data.get("key")), data)
            trash = [d for d in self.trashed_items() if set(d.get("collections") or ()) & set(subtree)]
        else:
            items = {str(d.get("key")): d for d in self.top_items()}
            trash = self.trashed_items()
        for data in trash:
            if is_litrank_item_data(data) and not data.get("parentItem"):
                items.setdefault(str(data.get("key")), {**data, "deleted": 1})
        datas = sorted(items.values(), key=lambda d: str(d.get("dateAdded") or ""))
        papers = []
        for data in datas:
            if data.get("deleted") and not is_litrank_item_data(data):
                continue
            in_paths = [paths[k] for k in data.get("collections") or () if k in paths]
            paper = paper_from_item(data, self.source, in_paths)
            if paper is not None:
                papers.append(paper)
        log.info("%s: %d papers read (%d attachments, notes or trashed items skipped)",
                 self.source, len(papers), len(datas) - len(papers))
        return papers

    def _subtree(self, paths: dict[str, str]) -> list[str]:
        return select_collections(paths, self.target.collection or "", self.source)

    def _all(self, first: Callable[[], list]) -> list[dict[str, Any]]:
        """Every object of a listing: the first page, then each ``rel="next"`` page."""
        results = list(self._request(first))
        headers = self.zot.request.headers
        total, version = headers.get("Total-Results"), headers.get("Last-Modified-Version")
        while (self.zot.links or {}).get("next"):
            page = self._request(self.zot.follow)
            if not page:
                break
            results.extend(page)
            if version and self.zot.request.headers.get("Last-Modified-Version") not in (None, version):
                log.warning("%s: the library changed while it was read; read it again for a consistent copy",
                            self.source)
                version = None
        if total and total.isdigit() and int(total) != len(results):
            log.warning("%s: the API announced %s objects and returned %d", self.source, total, len(results))
        return results

    # -- waits and errors ----------------------------------------------------------------
    def _wait(self, seconds: float) -> None:
        if seconds > self.max_wait:
            raise SourceError(f"{self.source}: the Zotero API asked litrank to wait {seconds:.0f} s before "
                              "its next request; try again later")
        if seconds > 0:
            log.info("%s: waiting %.0f s before the next request to the Zotero API", self.source, seconds)
            self._sleep(seconds)

    def _wait_for_backoff(self) -> None:
        """Replaces pyzotero's ``_check_backoff``: wait out a Backoff / Retry-After it recorded."""
        remaining = float(getattr(self.zot, "backoff_until", 0.0) or 0.0) - time.time()
        self.zot.backoff_until = 0.0
        self._wait(remaining)

    def _request(self, call: Callable[[], Any]) -> Any:
        """``call()`` (one pyzotero request), retried on 429 and 5xx; every failure -> SourceError."""
        from pyzotero import errors as pz

        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return call()
            except SourceError:  # from _wait, called by pyzotero through _wait_for_backoff
                raise
            except Exception as exc:
                transport = type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES
                if not (transport or isinstance(exc, (pz.PyZoteroError, ValueError, OSError))):
                    raise
                failure = exc
            response = getattr(self.zot, "request", None)
            status = (429 if isinstance(failure, pz.TooManyRetriesError) else getattr(response, "status_code", None)
                      if isinstance(failure, pz.PyZoteroError) else None)
            if status in RETRY_STATUSES and attempt < MAX_ATTEMPTS:
                delay = _seconds(response.headers.get("Retry-After") or response.headers.get("Backoff"))
                if status == 429 and delay is not None:
                    continue  # pyzotero recorded it: _wait_for_backoff waits before the next request
                self._wait(delay if delay is not None else 2.0 ** attempt)
                continue
            detail = self.redact(str(failure).strip().replace("\n", " | "))
            log.debug("%s: %s: %s", self.source, type(failure).__name__, detail[:500])
            raise SourceError(f"{self.source}: {self._message(failure, status)}") from None
        raise AssertionError("unreachable")

    def _message(self, exc: BaseException, status: int | None) -> str:
        local = self.target.local
        if status is None and not isinstance(exc, ValueError):
            if local:
                return f"Zotero's local API is not reachable: {LOCAL_API_HINT}"
            parts = urlsplit(self.zot.endpoint)
            reason = self.redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return f"cannot reach the Zotero API at {parts.scheme}://{parts.hostname}: {reason}"
        if status is None or 200 <= status < 300:
            return f"the Zotero API sent a response litrank cannot read ({type(exc).__name__})"
        if status in (401, 403):
            if local:
                return f"Zotero's local API refused the request (HTTP {status}): {LOCAL_API_HINT}"
            if self._secrets:
                return (f"the Zotero API refused the API key (HTTP {status}): it is wrong, revoked or may not "
                        f"read this library; check ${API_KEY_ENV} (or {config_path()}) or create a key at {KEYS_PAGE}")
            return (f"this library is not public and no Zotero API key is set (HTTP {status}): create a key "
                    f"with read access at {KEYS_PAGE} and set the {API_KEY_ENV} environment variable "
                    f"(or api_key in the [zotero] section of {config_path()})")
        if status == 404:
            return (f"no such Zotero {self.target.library_type} library (HTTP 404)"
                    + ("" if local else f"; check the id (your user id is shown at {KEYS_PAGE})"))
        if status == 412 and local:  # the only 412 of a local read: another database answered
            return ("Zotero now serves another database than when litrank started (its Zotero-Server-ID "
                    "changed, e.g. another profile was opened); run again")
        if status == 429:
            return "the Zotero API is still rate-limiting requests (HTTP 429); try again later"
        if status == 409:
            return (f"the library stayed locked (HTTP 409) through {MAX_ATTEMPTS} attempts: another client is "
                    "writing or syncing it; try again in a minute")
        if status >= 500:
            return f"the Zotero API is unavailable (HTTP {status}) after {MAX_ATTEMPTS} attempts; try again later"
        return f"the Zotero API rejected the request (HTTP {status})"


def load(uri: str) -> list[Paper]:
    """The papers of the Zotero library (or collection) that ``uri`` names."""
    return client_for(uri).papers()
