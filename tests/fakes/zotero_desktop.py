"""A fake running Zotero desktop app: its local API (``http://127.0.0.1:23119/api/``) with the
WRITE side that Zotero 10 adds, on top of the fake Zotero API of tests/zotero_server.py (whose
read and write handling it reuses). ``FakeZoteroDesktop(version=9)`` is Zotero 7-9 instead.

Implemented, Zotero 7-9 (``version < 10``, the read-only local API)
    The reads of ``FakeZoteroAPI(local=True)``, but no ``Zotero-Server-ID`` header on any
    response; any method other than GET/HEAD -> 400 text/plain "Endpoint does not support
    method\\n" (what Zotero's server sends); /api/local/authorize does not exist -> 404.
Implemented, Zotero 10 (``version >= 10``)
    Every response under /api has ``Zotero-Server-ID: <server_id>`` but the errors raised before
    an endpoint handler runs (404 for a path that is no endpoint, 400 unsupported method, 412/428
    server-ID checks, 401 key checks),
    which Zotero sends without it (its endpoint handlers set the header);
    ``GET /api/`` answers 200 (pyzotero fetches the ID there); the bare ``/api`` -> 404.
    A request (read or write) with a different ``Zotero-Server-ID`` -> 412 "Zotero-Server-ID
    does not match". A write (POST/PUT/PATCH/DELETE under /api/users/0/...) without the header
    -> 428 "Zotero-Server-ID not provided"; then its local API key, from ``Zotero-API-Key``,
    ``Authorization: Bearer K`` or ``?key=K``: none -> 401 "API key required", unknown -> 401
    "Invalid or expired API key", both with ``WWW-Authenticate: Zotero-API-Key realm="Zotero
    Local API"``. A key granted with "Allow" is used up by the first write request that
    presents it; one granted with "Always Allow" lasts until :meth:`revoke_all` (the "Clear
    Write Authorizations" button). Then the Web API write handling of zotero_server.py applies
    (write tokens, at most 50 objects, per-object failures, PATCH/PUT preconditions, DELETE).
    POST /api/local/authorize with ``Zotero-Server-ID`` (else 428) and a JSON body whose
    ``appName`` is a non-empty string (else 400) shows the dialog: the answer is the next of
    :attr:`dialog_answers`, else :attr:`dialog` ("always" -> 200 ``{"key": K, "remember": true}``,
    "allow" -> ``{"key": K, "remember": false}``, "deny" -> 403 ``{"denied": true}``, "ignore" ->
    the same 403 after :attr:`dialog_wait` seconds, a user who does not answer; "late-always" /
    "late-allow" -> the key after :attr:`dialog_wait` seconds, a user who answers after the
    client stopped waiting), and the appName is recorded in :attr:`dialogs`. With
    :attr:`profile_dir` set, every key granted is kept in ``<profile_dir>/localAPIKeys.json`` as
    ``{"keys": [{"key", "appName", "remember", "createdAt"}]}``, a one-write key removed when a
    write uses it and the file deleted by :meth:`revoke_all` (Zotero's ``addLocalAPIKey``,
    ``consumeLocalAPIKey`` and "Clear Write Authorizations"). At most 5 dialogs per 60 s (by :attr:`clock`, default
    ``time.monotonic``); past that -> 429 with ``Retry-After`` (whole seconds until one frees).
    Other methods on endpoints that do not take them (POST /api/, GET /api/local/authorize) -> 400.
In both: GET /api/items/new -> 404 (the local API has no item templates), while
/api/itemTypeFields and /api/itemTypeCreatorTypes answer; the local user's library is
/api/users/0 (groups by their id), reads need no key; ``local_enabled=False`` -> 403.
Not implemented: the 5-per-minute limit counting anything but dialogs, /api/local endpoints
other than authorize, searches, files; and what zotero_server.py does not implement.
"""
from __future__ import annotations

import datetime
import json
import math
import re
import secrets
import string
import time
from collections.abc import Callable
from pathlib import Path

from werkzeug import Request, Response

from tests.fakes.zotero_server import FakeZoteroAPI, Library

# dialog answer -> "remember" (None: no key). "late-…": the user answers after the client stopped waiting.
ANSWERS = {"always": True, "allow": False, "deny": None, "ignore": None, "late-always": True, "late-allow": False}
DIALOGS_PER_WINDOW, WINDOW_SECONDS = 5, 60.0
_WRITES = ("POST", "PUT", "PATCH", "DELETE")
_UNSUPPORTED = "Endpoint does not support method\n"
_WWW_AUTHENTICATE = {"WWW-Authenticate": 'Zotero-API-Key realm="Zotero Local API"'}


class FakeZoteroDesktop(FakeZoteroAPI):
    """A running Zotero desktop app (its local API). :attr:`url` is the endpoint for pyzotero
    (``zotero.Zotero(0, "user", local=True)`` with ``zot.endpoint = server.url``)."""

    def __init__(self, *, version: int = 10, server_id: str = "sPMHtLD6HHBd", dialog: str = "always",
                 max_limit: int = 100, local_enabled: bool = True) -> None:
        if dialog not in ANSWERS:
            raise ValueError(f"dialog must be one of {sorted(ANSWERS)}, not {dialog!r}")
        self.version = version
        self._desktop = {"server_id": server_id if version >= 10 else None, "dialog": dialog}
        super().__init__(local=True, local_enabled=local_enabled, max_limit=max_limit,
                         server_id=self._desktop["server_id"], writes=version >= 10)

    def reset(self) -> None:
        """Also forget the granted keys, dialogs, rate-limit window and queued dialog answers,
        and restore :attr:`server_id`, :attr:`dialog` and :attr:`clock`."""
        super().reset()
        self.server_id: str | None = self._desktop["server_id"]
        self.dialog: str = self._desktop["dialog"]
        self.dialog_answers: list[str] = []  # the user's next answers, first first ("always"/"allow"/"deny")
        self.dialogs: list[str] = []  # the appName of every dialog shown
        self.keys: dict[str, bool] = {}  # granted local API key -> remember ("Always Allow")
        self._key_entries: list[dict] = []  # the same keys as Zotero's localAPIKeys.json holds them
        self.clock: Callable[[], float] = time.monotonic
        self.dialog_wait = 1.0  # seconds an "ignore"d or "late-…" dialog keeps the request waiting
        self.profile_dir: Path | None = None  # where Zotero keeps the keys (localAPIKeys.json); None: memory only
        self._dialog_times: list[float] = []

    # -- helpers for tests ---------------------------------------------------------------------
    def grant(self, remember: bool = True, app_name: str = "litrank") -> str:
        """A new key, as if the user had approved a request earlier ("Always Allow" or "Allow")."""
        key = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
        self._key_entries.append({"key": key, "appName": app_name, "remember": remember,
                                  "createdAt": datetime.datetime.now(datetime.timezone.utc).isoformat()})
        self._save_keys()
        # Published last: a test waiting for the key (the dialog answered on another thread)
        # then finds localAPIKeys.json already written.
        self.keys[key] = remember
        return key

    def revoke_all(self) -> None:
        """Zotero's "Clear Write Authorizations" button: every granted key stops working (and
        Zotero deletes localAPIKeys.json)."""
        self.keys.clear()
        self._key_entries.clear()
        if self.profile_dir is not None:
            (self.profile_dir / "localAPIKeys.json").unlink(missing_ok=True)

    def _save_keys(self) -> None:
        """Zotero's ``_saveLocalAPIKeys``: every key, one-write ones too, pretty-printed."""
        if self.profile_dir is not None:
            self.profile_dir.mkdir(parents=True, exist_ok=True)
            (self.profile_dir / "localAPIKeys.json").write_text(json.dumps({"keys": self._key_entries}, indent=4))

    # -- dispatch ------------------------------------------------------------------------------
    def _serve(self, request: Request, path: str, params: dict[str, str], match: re.Match | None) -> Response:
        response = self._serve_endpoint(request, path, params, match)
        if self._early_error:
            # Zotero sets the header in the endpoint handlers: an error raised before one runs
            # (routing, the server-ID and key checks, 401s) goes out without it.
            response.headers.pop("Zotero-Server-ID", None)
        return response

    def _early(self, response: Response) -> Response:
        self._early_error = True
        return response

    def _serve_endpoint(self, request: Request, path: str, params: dict[str, str],
                        match: re.Match | None) -> Response:
        self._early_error = False
        method, endpoint = request.method, path.rstrip("/")
        authorize = endpoint == "/local/authorize"
        if request.path == "/api" or (authorize and self.version < 10):
            return self._early(self._text(404, "Not Found"))
        if self.version < 10:
            if method not in ("GET", "HEAD"):
                return self._text(400, _UNSUPPORTED)
            return self._text(404, "Not Found") if endpoint == "/items/new" else super()._serve(
                request, path, params, match)
        if (authorize and method != "POST") or (method in _WRITES and not match and not authorize):
            return self._early(self._text(400, _UNSUPPORTED))
        if not self.local_enabled:
            return super()._serve(request, path, params, match)  # 403
        sent_id = request.headers.get("Zotero-Server-ID")
        if sent_id is not None and sent_id != self.server_id:
            return self._early(self._text(412, f"Zotero-Server-ID does not match (expected {self.server_id}, "
                                               f"got {sent_id})"))
        if method in _WRITES and sent_id is None:
            return self._early(self._text(428, "Zotero-Server-ID not provided"))
        if authorize:
            return self._authorize(request)
        if endpoint == "/items/new":
            return self._text(404, "Not Found")
        if method in _WRITES:
            refused = self._check_key(request, params)
            if refused:
                return self._early(refused)
        return super()._serve(request, path, params, match)

    def _denied(self, request: Request, params: dict[str, str], library: Library | None) -> Response | None:
        return None  # the local API reads every library without a key; writes are checked in _serve

    def _check_key(self, request: Request, params: dict[str, str]) -> Response | None:
        key = request.headers.get("Zotero-API-Key")
        authorization = request.headers.get("Authorization", "")
        if not key and authorization.startswith("Bearer "):
            key = authorization[len("Bearer "):].strip()
        key = key or params.get("key")
        if not key:
            return self._text(401, "API key required", _WWW_AUTHENTICATE)
        if key not in self.keys:
            return self._text(401, "Invalid or expired API key", _WWW_AUTHENTICATE)
        if not self.keys[key]:  # "Allow": one write only (Zotero's consumeLocalAPIKey)
            del self.keys[key]
            self._key_entries = [entry for entry in self._key_entries if entry["key"] != key]
            self._save_keys()
        return None

    def _authorize(self, request: Request) -> Response:
        try:
            body = json.loads(request.get_data(as_text=True) or "null")
        except ValueError:
            return self._text(400, "Invalid JSON")
        app_name = body.get("appName") if isinstance(body, dict) else None
        if not isinstance(app_name, str) or not app_name.strip():
            return self._text(400, "appName not provided")
        now = self.clock()
        self._dialog_times = [t for t in self._dialog_times if now - t < WINDOW_SECONDS]
        if len(self._dialog_times) >= DIALOGS_PER_WINDOW:
            wait = max(1, math.ceil(self._dialog_times[0] + WINDOW_SECONDS - now))
            return self._text(429, "Too many authorization requests", {"Retry-After": str(wait)})
        self._dialog_times.append(now)
        self.dialogs.append(app_name)
        answer = self.dialog_answers.pop(0) if self.dialog_answers else self.dialog
        if answer not in ANSWERS:
            return self._text(500, f"the fake's dialog answer {answer!r} is not one of {sorted(ANSWERS)}")
        remember = ANSWERS[answer]
        if answer == "ignore" or answer.startswith("late-"):  # nobody at the screen yet: the request waits
            time.sleep(self.dialog_wait)
        if remember is None:
            return self._answer(403, {"denied": True})
        # A late answer still makes the key (Zotero's addLocalAPIKey), though the client may be gone.
        return self._answer(200, {"key": self.grant(remember, app_name.strip()), "remember": remember})

    def _answer(self, status: int, body: dict) -> Response:
        return Response(json.dumps(body), status, self._common(), content_type="application/json")
