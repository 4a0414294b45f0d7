"""Write access to Zotero 10's local API (``zotero:local-api``), for ``litrank sync``.

The protocol, from https://www.zotero.org/support/dev/web_api/v3/local_api and pyzotero 1.16:

* Zotero 10 sends a ``Zotero-Server-ID`` header with every answer; a write must send it back
  (428 without it), and a request carrying another database's ID is answered 412. Zotero 7–9
  send no server ID and answer every write 400 "Endpoint does not support method": their local
  API is read-only, so litrank says so before ranking and points to the Web API.
* A write needs a local API key (401 without one, or when it was revoked or used up). A key
  comes only from ``POST /api/local/authorize``, which shows the user a dialog in Zotero:
  "Always Allow" grants a key to keep, "Allow" one that the first write request uses up, "Deny"
  answers 403; Zotero shows at most five such dialogs a minute (then 429 with Retry-After).
  Kept keys are stored per server ID (keys and versions of one Zotero database mean nothing to
  another), in ``zotero-local-api-keys.json`` beside ``config.ini``, readable by the user only.
* The key is a secret: it is added to the library's redaction list and never printed.
* A dialog answered after litrank stopped waiting still makes a key, which Zotero keeps in its
  profile's ``localAPIKeys.json`` (see :mod:`connectors.zotero.profiles`). Zotero offers no way to
  revoke a key but its "Clear Write Authorizations" button, so the next run finds that key and
  uses it (a kept one is then stored like any other) instead of leaving it behind and asking again.

pyzotero's ``authorize_local`` makes the request; its client timeout (30 s) is raised for that
one request, because the answer waits for the user.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable

from connectors._io import atomic_write_text
from connectors.errors import SourceError
from connectors.zotero.profiles import KEYS_FILE as LATE_KEYS_FILE
from connectors.zotero.profiles import granted_local_keys
from connectors.zotero.web import _TRANSPORT_MODULES, KEYS_PAGE, ZoteroLibrary, config_path

log = logging.getLogger("litrank")

APP_NAME = "litrank"  # the name Zotero's dialog shows
KEYS_FILE = "zotero-local-api-keys.json"
AUTHORIZE_TIMEOUT = 300.0  # seconds the user has to answer Zotero's dialog
READ_ONLY_MESSAGE = (
    "this Zotero's local API is read-only (writes need Zotero 10 or newer). Sync through the Web API "
    f"instead: -l zotero:user/<id> with $ZOTERO_API_KEY set to a key with write access from {KEYS_PAGE}; "
    "or write a BibTeX file (litrank rank -l zotero:local-api -o reading-list.bib) and import it in Zotero "
    "(File > Import, placing the items into a new collection).")


class LocalWriteError(SourceError):
    """Zotero's local API cannot take litrank's writes (read-only Zotero, denied, rate-limited)."""


class LocalKeyStore:
    """Local API keys the user granted with "Always Allow", by Zotero server ID, in a JSON file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else config_path().parent / KEYS_FILE

    def __repr__(self) -> str:  # never the keys
        return f"LocalKeyStore({str(self.path)!r})"

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("%s: unreadable (%s); litrank will ask Zotero for a new key", self.path, type(exc).__name__)
            return {}
        keys = data.get("keys") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in keys.items() if isinstance(v, str)} if isinstance(keys, dict) else {}

    def get(self, server_id: str) -> str | None:
        return self._read().get(server_id)

    def put(self, server_id: str, key: str) -> None:
        keys = self._read()
        keys[server_id] = key
        self._write(keys)

    def forget(self, server_id: str) -> None:
        keys = self._read()
        if keys.pop(server_id, None) is not None:
            self._write(keys)

    def _write(self, keys: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"about": "Zotero local API keys granted to litrank, by Zotero-Server-ID",
                           "keys": keys}, indent=2, sort_keys=True) + "\n"
        old_umask = os.umask(0o077)  # created readable by the user only
        try:
            atomic_write_text(self.path, text)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)


class LocalWriteAccess:
    """The server ID and local API key that writes through one ``zotero:local-api`` library need.

    :meth:`check` (before any work) fails for a read-only local API; :meth:`ensure_key` (before
    each write) uses the stored key or asks Zotero for one; :meth:`key_rejected` (after a 401)
    drops the key and asks again, once per request.
    """

    def __init__(self, library: ZoteroLibrary, *, store: LocalKeyStore | None = None,
                 notify: Callable[[str], Any] | None = None, app_name: str = APP_NAME,
                 authorize_timeout: float = AUTHORIZE_TIMEOUT) -> None:
        self.library = library
        self.zot = library.zot
        self.store = store if store is not None else LocalKeyStore()
        self.notify = notify or log.warning
        self.app_name = app_name
        self.authorize_timeout = authorize_timeout
        self.remembered = False  # the current key was granted with "Always Allow"
        self._refused: set[str | None] = set()  # keys Zotero answered 401 in this run

    def __repr__(self) -> str:
        return f"LocalWriteAccess({self.library.source!r})"

    def check(self) -> str:
        """The Zotero server ID; :class:`LocalWriteError` if this Zotero's local API is read-only."""
        if self.zot.server_id:
            return self.zot.server_id

        def probe() -> Any:
            response = self.zot._send("GET", f"{self.zot.endpoint.rstrip('/')}/")
            self.zot.request = response  # the status errors are reported with
            self.zot._post_check(response)  # raises for >= 400; keeps the Zotero-Server-ID header
            return response

        self.library._request(probe)
        if not self.zot.server_id:
            raise LocalWriteError(f"{self.library.source}: {READ_ONLY_MESSAGE}")
        return self.zot.server_id

    def ensure_key(self) -> None:
        """Have a key ready for the next write: the one in use, a stored one, or a new one."""
        server_id = self.check()
        if self.zot.local_api_key:
            return
        stored = self.store.get(server_id)
        if stored and stored not in self._refused:
            self._use(stored, remembered=True)
            return
        if not self._use_late_key(server_id):
            self.authorize()

    def key_rejected(self) -> None:
        """The last write was answered 401: forget the key and find or ask for another."""
        server_id = self.check()
        self._refused.add(self.zot.local_api_key)
        if self.remembered and self.store.get(server_id) == self.zot.local_api_key:
            self.store.forget(server_id)
            self.notify("Zotero no longer accepts litrank's stored key (its write authorisations were cleared "
                        "in Settings → Advanced); asking again.")
        self.zot.local_api_key = None
        if not self._use_late_key(server_id):
            self.authorize()

    def _use_late_key(self, server_id: str) -> bool:
        """Use a key Zotero granted litrank that litrank never received: the user answered the
        dialog after an earlier run stopped waiting. Zotero keeps it in its profile's
        localAPIKeys.json; using it beats leaving it behind and showing another dialog (a late
        one-write key is used up by the write, so nothing stays behind)."""
        for granted in granted_local_keys(self.app_name):
            if granted.key in self._refused:
                continue
            self._use(granted.key, remembered=granted.remember)
            self.notify(f"Using the key Zotero granted {self.app_name} after an earlier run stopped waiting "
                        f"(found in {granted.profile / LATE_KEYS_FILE}).")
            if granted.remember:
                self._keep(server_id, granted.key)
            return True
        return False

    def authorize(self) -> None:
        """Ask Zotero for a key (it shows the user a dialog) and use it; store it if kept."""
        from pyzotero import errors as pz

        server_id = self.check()
        source = self.library.source
        self.notify(f"Zotero is asking whether {self.app_name} may change your library: switch to Zotero and "
                    "answer its dialog ('Always Allow' lets later syncs write without asking).")
        client = self.zot.client
        timeout = client.timeout
        client.timeout = self.authorize_timeout
        try:
            answer = self.zot.authorize_local(self.app_name)
        except pz.LocalAPIDeniedError:
            raise LocalWriteError(f"{source}: you denied {self.app_name}'s request in Zotero's dialog, so nothing "
                                  "more was written; run again and choose 'Always Allow', or sync through the "
                                  "Web API (-l zotero:user/<id>)") from None
        except pz.TooManyRequestsError:
            raise LocalWriteError(f"{source}: Zotero shows at most five authorisation dialogs a minute and refused "
                                  "another; wait a minute and run the same command again (it completes the sync), "
                                  "choosing 'Always Allow' this time") from None
        except Exception as exc:
            transport = type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES
            if transport and "Timeout" in type(exc).__name__:
                raise LocalWriteError(f"{source}: nobody answered Zotero's authorisation dialog within "
                                      f"{self.authorize_timeout:g} s; answer it in Zotero and run again (the "
                                      "next run uses the key Zotero grants then, without asking again)") from None
            if not (transport or isinstance(exc, (pz.PyZoteroError, ValueError, OSError))):
                raise
            status = getattr(getattr(self.zot, "request", None), "status_code", None)
            log.debug("%s: authorisation failed: %s", source, self.library.redact(str(exc))[:500])
            raise LocalWriteError(f"{source}: {self.library._message(exc, status)}") from None
        finally:
            client.timeout = timeout
        key = str(answer.get("key") or "") if isinstance(answer, dict) else ""
        if not key:
            raise LocalWriteError(f"{source}: Zotero's authorisation answer holds no key")
        remembered = bool(answer.get("remember"))
        self._use(key, remembered=remembered)
        if remembered:
            self._keep(server_id, key)
        else:
            self.notify(f"Zotero allowed {self.app_name} one write request; it will ask again for each further "
                        "request of this sync ('Always Allow' avoids that).")

    def _keep(self, server_id: str, key: str) -> None:
        try:
            self.store.put(server_id, key)
        except (OSError, SourceError) as exc:  # the key still serves this run
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.notify(f"Zotero allowed {self.app_name} to write, but the key could not be kept in "
                        f"{self.store.path} ({reason}); Zotero will ask again next time.")
        else:
            self.notify(f"Zotero allowed {self.app_name} to write; the key is kept in {self.store.path} "
                        "for later syncs.")

    def written(self) -> None:
        """A write went through: a one-write key ("Allow") is used up, so the next write asks anew."""
        if not self.remembered:
            self.zot.local_api_key = None

    def raise_for_refusal(self, status: int, text: str) -> None:
        """:class:`LocalWriteError` for the local API's own refusals of a write; else nothing."""
        source = self.library.source
        if status == 400 and "does not support method" in text:
            raise LocalWriteError(f"{source}: {READ_ONLY_MESSAGE}")
        if status == 401:
            raise LocalWriteError(f"{source}: Zotero refused the key it had just granted (HTTP 401); run again")
        if status == 412 and "Zotero-Server-ID" in text:
            raise LocalWriteError(f"{source}: Zotero now serves another database than when litrank started (its "
                                  "Zotero-Server-ID changed); nothing more was written; run again")

    def _use(self, key: str, *, remembered: bool) -> None:
        self.library.add_secret(key)
        self.zot.local_api_key = key
        self.remembered = remembered
