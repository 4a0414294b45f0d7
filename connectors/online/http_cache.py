"""HTTP for the remote sources: an on-disk response cache, polite retries, and offline runs.

:class:`CachedSession` is a ``requests.Session`` that the API clients (``arxiv``, and the
later sources) are given instead of their own. For every GET it

* answers from the cache when a response younger than ``ttl`` seconds is stored (a second
  identical run makes no request), or from the cache alone when offline (a miss is a
  :class:`OfflineError`);
* otherwise sends the request; 429, 503 and other 5xx answers are retried at most
  ``max_retries`` times, waiting what ``Retry-After`` says (seconds or an HTTP date, capped at
  ``max_wait``) or an exponential backoff; a network failure becomes a :class:`NetworkError`
  naming the host and ``--offline``;
* stores definite answers (200, and 404 "no such paper") in one SQLite file, keyed by method
  and URL; errors are never kept.

Settings from the environment: ``$LITRANK_OFFLINE`` (1: cache only), ``$LITRANK_HTTP_TTL``
(seconds, default one day), ``$LITRANK_CACHE_DIR`` (the cache lives in its ``http/``).
"""
from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests
from requests.structures import CaseInsensitiveDict

from connectors.errors import SourceError
from recommender.runtime import user_cache_root

log = logging.getLogger("litrank")

DEFAULT_TTL = 24 * 3600
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
CACHED_STATUSES = frozenset({200, 404})
# Called with (source, url) before every request sent over the network, e.g. by the CLI's
# progress display; listeners must not raise.
REQUEST_LISTENERS: list = []


class NetworkError(SourceError):
    """A remote source could not be reached (and the cache does not hold the answer)."""


class OfflineError(SourceError):
    """Offline, and the cache holds no answer for a request."""


def cache_directory() -> Path:
    return user_cache_root() / "http"


def cache_summary() -> dict:
    """``{"path", "answers", "bytes", "sources"}`` of the HTTP cache (answers per host)."""
    path = cache_directory() / "responses.sqlite"
    parts = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    summary = {"path": str(path), "answers": 0, "bytes": sum(p.stat().st_size for p in parts if p.exists()),
               "sources": {}}
    if not path.exists():
        return summary
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
            for (url,) in db.execute("SELECT url FROM responses"):
                host = urlsplit(url).hostname or "?"
                summary["sources"][host] = summary["sources"].get(host, 0) + 1
                summary["answers"] += 1
    except sqlite3.Error as exc:
        summary["error"] = str(exc)
    return summary


def clear_cache() -> tuple[int, int]:
    """Delete the HTTP cache; the number of answers and of bytes freed."""
    summary = cache_summary()
    path = Path(summary["path"])
    for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        part.unlink(missing_ok=True)
    return summary["answers"], summary["bytes"]


def offline_requested() -> bool:
    return os.environ.get("LITRANK_OFFLINE", "").strip().lower() in ("1", "true", "yes")


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class CachedSession(requests.Session):
    """A ``requests.Session`` with the cache, retries and offline mode of this module.

    Parameters
    ----------
    source : str
        The source's name for messages (``arxiv``).
    ttl : float, optional
        Seconds a stored answer stays fresh (default ``$LITRANK_HTTP_TTL`` or a day).
    offline : bool, optional
        Answer from the cache only (default ``$LITRANK_OFFLINE``).
    max_retries : int, default=4
    max_wait : float, default=120
        Longest single wait for a ``Retry-After`` or a backoff, in seconds.
    cache_path : path, optional
        The SQLite file (default ``cache_directory() / "responses.sqlite"``).
    redirect : tuple of (str, str), optional
        ``(prefix, replacement)``: URLs starting with ``prefix`` are sent to ``replacement``
        instead, for a client whose base-URL setting is not honoured everywhere.
    """

    def __init__(self, source: str, ttl: float | None = None, offline: bool | None = None, max_retries: int = 4,
                 max_wait: float = 120.0, cache_path: str | Path | None = None,
                 redirect: tuple[str, str] | None = None):
        super().__init__()
        self.source = source
        self.ttl = float(os.environ.get("LITRANK_HTTP_TTL", DEFAULT_TTL)) if ttl is None else float(ttl)
        self.offline = offline_requested() if offline is None else offline
        self.max_retries = max_retries
        self.max_wait = max_wait
        self.cache_path = Path(cache_path) if cache_path else cache_directory() / "responses.sqlite"
        self.redirect = redirect
        self._db: sqlite3.Connection | None = None
        self.requests_sent = 0
        self.cache_hits = 0

    # -- the cache ---------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        """The cache file, opened once per session (a run may look up thousands of answers)."""
        if self._db is not None:
            return self._db
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.cache_path, timeout=30)
        self._db = db
        db.execute("PRAGMA journal_mode=WAL")  # concurrent runs: readers never wait for a writer
        db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, url TEXT NOT NULL, "
                   "status INTEGER NOT NULL, headers TEXT NOT NULL, body BLOB NOT NULL, fetched REAL NOT NULL)")
        return db

    def close(self) -> None:
        super().close()
        db, self._db = self._db, None
        if db is not None:
            db.close()

    @staticmethod
    def _key(method: str, url: str) -> str:
        return hashlib.sha256(f"{method.upper()} {url}".encode()).hexdigest()

    def _cached(self, method: str, url: str) -> requests.Response | None:
        try:
            with self._connect() as db:
                row = db.execute("SELECT status, headers, body, fetched FROM responses WHERE key = ?",
                                 (self._key(method, url),)).fetchone()
        except sqlite3.Error as exc:
            log.warning("HTTP cache %s is unusable (%s); going on without it", self.cache_path, exc)
            return None
        if row is None or (not self.offline and time.time() - row[3] > self.ttl):
            return None
        response = requests.Response()
        response.status_code, response._content = row[0], bytes(row[2])
        response.headers = CaseInsensitiveDict(json.loads(row[1]))
        response.url, response.encoding = url, response.headers.get("x-litrank-encoding") or "utf-8"
        return response

    def _store(self, method: str, url: str, response: requests.Response) -> None:
        headers = {name: value for name, value in response.headers.items() if name.lower() == "content-type"}
        try:
            with self._connect() as db:
                db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                           (self._key(method, url), url, response.status_code, json.dumps(headers),
                            response.content, time.time()))
        except sqlite3.Error as exc:
            log.warning("HTTP cache %s is unusable (%s); the answer is not kept", self.cache_path, exc)

    # -- requests ----------------------------------------------------------------------------
    def request(self, method, url, *args, **kwargs):  # noqa: D401 (requests' signature)
        if self.redirect and str(url).startswith(self.redirect[0]):
            url = self.redirect[1] + str(url)[len(self.redirect[0]):]
        prepared_url = requests.Request(method, url, params=kwargs.get("params")).prepare().url
        if method.upper() == "GET":
            cached = self._cached(method, prepared_url)
            if cached is not None:
                self.cache_hits += 1
                return cached
            if self.offline:
                raise OfflineError(f"{self.source}: offline, and no cached answer for {prepared_url} "
                                   "(run once without --offline to fill the cache)")
        host = urlsplit(prepared_url).netloc
        for attempt in range(self.max_retries + 1):
            try:
                self.requests_sent += 1
                for listener in REQUEST_LISTENERS:
                    listener(self.source, prepared_url)
                response = super().request(method, url, *args, **kwargs)
            except requests.exceptions.RequestException as exc:
                raise NetworkError(f"{self.source}: cannot reach {host} ({type(exc).__name__}); check the "
                                   "connection, or pass --offline to use cached answers only") from None
            if response.status_code not in RETRY_STATUSES or attempt == self.max_retries:
                break
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            wait = min(self.max_wait, 2.0 ** attempt if wait is None else wait)
            log.info("%s answered %d; retrying in %.0f s (%d of %d)", host, response.status_code, wait,
                     attempt + 1, self.max_retries)
            time.sleep(wait)
        if method.upper() == "GET" and response.status_code in CACHED_STATUSES:
            self._store(method, prepared_url, response)
        return response
