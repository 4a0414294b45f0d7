"""Zotero's profile directories: the custom data directory set in its preferences, and the local
API keys Zotero granted (read only; nothing here is ever written).

A Zotero profile is a directory holding ``prefs.js`` under ``~/.zotero/zotero`` (Linux), the
Flatpak's ``~/.var/app/org.zotero.Zotero/.zotero/zotero``, ``~/Library/Application
Support/Zotero/Profiles`` (macOS) or ``%APPDATA%/Zotero/Zotero/Profiles`` (Windows).

Zotero 10 keeps every local API key it grants in ``<profile>/localAPIKeys.json``
(``{"keys": [{"key", "appName", "remember", "createdAt"}]}``, written by ``addLocalAPIKey`` in
its ``server_localAPI.js``; a one-write key is removed when a write uses it, and "Clear Write
Authorizations" deletes the file). When a user answers the authorisation dialog after litrank
stopped waiting, the key Zotero made is only there: :func:`granted_local_keys` finds it, so the
next run uses it rather than leaving it behind and asking again.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from pathlib import Path

log = logging.getLogger("litrank")

KEYS_FILE = "localAPIKeys.json"
_PREF_RE = re.compile(r'user_pref\("extensions\.zotero\.(dataDir|useDataDir)",\s*(.+?)\);')


@dataclasses.dataclass(frozen=True)
class GrantedKey:
    """A local API key Zotero granted to an application (``remember``: "Always Allow")."""

    key: str = dataclasses.field(repr=False)
    app_name: str
    remember: bool
    created_at: str
    profile: Path


def profile_dirs() -> list[Path]:
    """Every Zotero profile directory of this user, in a stable order."""
    home = Path.home()
    roots = [home / ".zotero" / "zotero", home / ".var" / "app" / "org.zotero.Zotero" / ".zotero" / "zotero",
             home / "Library" / "Application Support" / "Zotero" / "Profiles"]
    if os.environ.get("APPDATA"):
        roots.append(Path(os.environ["APPDATA"]) / "Zotero" / "Zotero" / "Profiles")
    return [prefs.parent for root in roots if root.is_dir() for prefs in sorted(root.glob("*/prefs.js"))]


def preferred_data_dirs() -> list[Path]:
    """Custom data directories set in the ``prefs.js`` of Zotero profiles (``useDataDir`` true)."""
    found = []
    for profile in profile_dirs():
        prefs = profile / "prefs.js"
        try:
            values = dict(_PREF_RE.findall(prefs.read_text(encoding="utf-8", errors="replace")))
            if json.loads(values.get("useDataDir", "false")) is True and values.get("dataDir"):
                found.append(Path(json.loads(values["dataDir"])))
        except (OSError, ValueError):
            log.debug("%s: unreadable Zotero preferences, ignored", prefs)
    return found


def granted_local_keys(app_name: str) -> list[GrantedKey]:
    """The local API keys Zotero's profiles hold for ``app_name``: kept ("Always Allow") keys
    first, newest first within each kind. Unreadable files are skipped."""
    found = []
    for profile in profile_dirs():
        path = profile / KEYS_FILE
        try:
            entries = json.loads(path.read_text(encoding="utf-8")).get("keys")
        except FileNotFoundError:
            continue
        except (OSError, ValueError, AttributeError) as exc:
            log.debug("%s: unreadable (%s), ignored", path, type(exc).__name__)
            continue
        for entry in entries if isinstance(entries, list) else []:
            if (isinstance(entry, dict) and entry.get("appName") == app_name
                    and isinstance(entry.get("key"), str) and entry["key"]):
                found.append(GrantedKey(entry["key"], app_name, bool(entry.get("remember")),
                                        str(entry.get("createdAt") or ""), profile))
    found.sort(key=lambda granted: granted.created_at, reverse=True)
    found.sort(key=lambda granted: not granted.remember)  # stable: kept keys first, each kind newest first
    return found
