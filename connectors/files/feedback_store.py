"""The local feedback store: the user's likes and dislikes, kept in a SQLite file.

A judgement is stored under every identity key of the paper it was given to
(:meth:`recommender.Paper.identity_keys`; ``id:<paper id>`` when the paper has none), so the
same paper is recognised when it comes back from another source with another id: by DOI,
arXiv id, title (+ first author) or abstract, under the same rule as
:class:`recommender.IdentityIndex`, which does the matching.

The rows of one judgement form an *entry*. Judging a paper again replaces every entry that
matches it by one new entry carrying the union of their keys, so the newest judgement wins
and no identity is lost. Every operation is one short transaction on its own connection;
reading a store that does not exist yet returns nothing and creates nothing.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`, ``PRAGMA application_id`` =
:data:`APPLICATION_ID`)::

    CREATE TABLE feedback (
        key        TEXT PRIMARY KEY,   -- identity key: doi:..., arxiv:..., title:<t>|<surname>, abstract:..., id:...
        match_key  TEXT NOT NULL,      -- the key without "|<surname>" for title keys (the lookup column)
        entry      INTEGER NOT NULL,   -- groups the rows of one judgement; higher is newer
        judgement  INTEGER NOT NULL CHECK (judgement IN (-1, 1)),
        paper_id   TEXT NOT NULL,
        title      TEXT NOT NULL,
        source     TEXT NOT NULL,      -- "cli", "bibtex", "zotero", ...
        created_at TEXT NOT NULL       -- ISO 8601, UTC
    );
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import platformdirs

from connectors.errors import SourceError
from recommender.feedback import DISLIKED, LIKED
from recommender.paper import IdentityIndex, Paper

__all__ = ["APPLICATION_ID", "DATA_DIR_ENV", "SCHEMA_VERSION", "FeedbackEntry", "FeedbackStore", "default_path"]

SCHEMA_VERSION = 1
APPLICATION_ID = 0x6C74726B  # "ltrk": marks the SQLite file as a litrank feedback store
DATA_DIR_ENV = "LITRANK_DATA_DIR"
FILE_NAME = "feedback.sqlite"
DEFAULT_TIMEOUT = 10.0  # seconds to wait for another process's write lock

_SCHEMA = """
CREATE TABLE feedback (
    key        TEXT PRIMARY KEY,
    match_key  TEXT NOT NULL,
    entry      INTEGER NOT NULL,
    judgement  INTEGER NOT NULL CHECK (judgement IN (-1, 1)),
    paper_id   TEXT NOT NULL,
    title      TEXT NOT NULL,
    source     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX feedback_match_key ON feedback (match_key);
CREATE INDEX feedback_entry ON feedback (entry);
"""
_COLUMNS = "key, match_key, entry, judgement, paper_id, title, source, created_at"


def default_path() -> Path:
    """``$LITRANK_DATA_DIR/feedback.sqlite``, else ``feedback.sqlite`` in the user data directory."""
    directory = os.environ.get(DATA_DIR_ENV)
    base = Path(directory).expanduser() if directory else Path(platformdirs.user_data_dir("litrank"))
    return base / FILE_NAME


@dataclass(frozen=True)
class FeedbackEntry:
    """One stored judgement: the paper's identity keys and what the user said about it."""

    keys: tuple[str, ...]
    paper_id: str
    title: str
    judgement: int
    source: str
    created_at: str


def _keys(paper: Paper) -> list[str]:
    return paper.identity_keys() or [f"id:{paper.id}"]


def _match_key(key: str) -> str:
    """Title keys are looked up without the author part: IdentityIndex decides on authors."""
    return key.partition("|")[0] if key.startswith("title:") else key


class _Keyed:
    """Stands in for a paper in an IdentityIndex: it has identity keys and nothing else."""

    __slots__ = ("keys", "entry")

    def __init__(self, keys: Sequence[str], entry: FeedbackEntry | None = None) -> None:
        self.keys = list(keys)
        self.entry = entry

    def identity_keys(self) -> list[str]:
        return self.keys


def _entries(rows: Iterable[tuple]) -> list[tuple[int, FeedbackEntry]]:
    """Group (entry, key, judgement, paper_id, title, source, created_at) rows, newest entry first."""
    grouped: dict[int, list[tuple]] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    result = []
    for number in sorted(grouped, reverse=True):
        rows_ = grouped[number]
        _, _, judgement, paper_id, title, source, created_at = rows_[0]
        keys = tuple(sorted((row[1] for row in rows_), key=_key_order))
        result.append((number, FeedbackEntry(keys, paper_id, title, judgement, source, created_at)))
    return result


_KEY_ORDER = {"doi": 0, "arxiv": 1, "title": 2, "abstract": 3, "id": 4}


def _key_order(key: str) -> tuple[int, str]:
    return _KEY_ORDER.get(key.partition(":")[0], 5), key


def _index(entries: Iterable[tuple[int, FeedbackEntry]]) -> IdentityIndex:
    """An IdentityIndex of stored entries; entries must come newest first (first added wins)."""
    index = IdentityIndex()
    for number, entry in entries:
        index.add(_Keyed(entry.keys, entry))  # type: ignore[arg-type]  # duck-typed: only identity_keys() is used
    return index


class FeedbackStore:
    """Likes (+1) and dislikes (-1) of papers, keyed by paper identity, in a SQLite file.

    Parameters
    ----------
    path : str or Path, optional
        The store file. Default: :func:`default_path` (``$LITRANK_DATA_DIR/feedback.sqlite``
        or the platform's user data directory).
    timeout : float
        Seconds to wait when another process holds the write lock.

    Raises
    ------
    connectors.SourceError
        From any method, when the file is not a litrank feedback store, is unreadable, or is
        locked for longer than ``timeout``.
    """

    def __init__(self, path: str | Path | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"FeedbackStore({str(self.path)!r})"

    # -- writing ----------------------------------------------------------------------------

    def record(self, paper: Paper, judgement: int, source: str = "cli") -> None:
        """Store ``judgement`` (LIKED or DISLIKED) for ``paper``, replacing any earlier one."""
        self.record_many([(paper, judgement)], source)

    def record_many(self, pairs: Iterable[tuple[Paper, int]], source: str = "cli") -> None:
        """Store several judgements in one transaction (later pairs win over earlier ones)."""
        pairs = list(pairs)
        for paper, judgement in pairs:
            _check_judgement(judgement)
        if not pairs:
            return
        created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._write() as conn:
            (number,) = conn.execute("SELECT COALESCE(MAX(entry), 0) FROM feedback").fetchone()
            for paper, judgement in pairs:
                keys = set(_keys(paper))
                for old_number, old in self._matching(conn, paper):
                    keys.update(old.keys)
                    conn.execute("DELETE FROM feedback WHERE entry = ?", (old_number,))
                number += 1
                conn.executemany(
                    f"INSERT OR REPLACE INTO feedback ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(key, _match_key(key), number, int(judgement), paper.id, paper.title, source, created_at)
                     for key in sorted(keys, key=_key_order)],
                )

    def forget(self, paper: Paper) -> bool:
        """Remove the judgement of ``paper``; False when there was none."""
        return self.forget_many([paper]) > 0

    def forget_many(self, papers: Iterable[Paper]) -> int:
        """Remove the judgements of several papers in one transaction; how many papers had one."""
        papers = list(papers)
        if not papers or not self.path.exists():
            return 0
        forgotten = 0
        with self._write() as conn:
            for paper in papers:
                matches = self._matching(conn, paper)
                conn.executemany("DELETE FROM feedback WHERE entry = ?", [(number,) for number, _ in matches])
                forgotten += bool(matches)
        return forgotten

    # -- reading ----------------------------------------------------------------------------

    def judgement_of(self, paper: Paper) -> int | None:
        """LIKED, DISLIKED, or None when the paper (under any of its identities) was not judged."""
        return self.judgements([paper]).get(paper.id)

    def judgements(self, papers: Sequence[Paper]) -> dict[str, int]:
        """``paper.id -> judgement`` for those of ``papers`` that have one (one query for all)."""
        return {paper_id: entry.judgement for paper_id, entry in self.entries_of(papers).items()}

    def entries_of(self, papers: Sequence[Paper]) -> dict[str, FeedbackEntry]:
        """``paper.id -> FeedbackEntry`` (judgement, source, date) for those of ``papers`` that have one."""
        papers = list(papers)
        if not papers:
            return {}
        with self._read() as conn:
            if conn is None:
                return {}
            match_keys = {_match_key(key) for paper in papers for key in _keys(paper)}
            index = _index(_entries(self._candidates(conn, match_keys)))
        result = {}
        for paper in papers:
            found = index.find(_Keyed(_keys(paper)))  # type: ignore[arg-type]
            if found is not None:
                result[paper.id] = found.entry  # type: ignore[attr-defined]
        return result

    def entries(self) -> list[FeedbackEntry]:
        """Every stored judgement, newest first."""
        with self._read() as conn:
            if conn is None:
                return []
            rows = conn.execute(
                "SELECT entry, key, judgement, paper_id, title, source, created_at FROM feedback").fetchall()
        return [entry for _, entry in _entries(rows)]

    # -- plumbing ---------------------------------------------------------------------------

    @staticmethod
    def _candidates(conn: sqlite3.Connection, match_keys: Iterable[str]) -> list[tuple]:
        """Every row of every entry sharing a match key with ``match_keys`` (one SELECT)."""
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (match_key TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM wanted")
        conn.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", [(key,) for key in match_keys])
        return conn.execute(
            "SELECT entry, key, judgement, paper_id, title, source, created_at FROM feedback "
            "WHERE entry IN (SELECT f.entry FROM feedback f JOIN wanted w ON f.match_key = w.match_key)"
        ).fetchall()

    def _matching(self, conn: sqlite3.Connection, paper: Paper) -> list[tuple[int, FeedbackEntry]]:
        """All stored entries that are the same paper as ``paper`` under the identity rule."""
        candidates = _entries(self._candidates(conn, {_match_key(key) for key in _keys(paper)}))
        probe = _Keyed(_keys(paper))
        matches = []
        # IdentityIndex answers "which one?"; ask again without each found entry to get them all.
        while candidates:
            found = _index(candidates).find(probe)  # type: ignore[arg-type]
            if found is None:
                break
            position = next(i for i, (_, entry) in enumerate(candidates) if entry is found.entry)  # type: ignore[attr-defined]
            matches.append(candidates.pop(position))
        return matches

    def _connect(self, read_only: bool) -> sqlite3.Connection:
        if self.path.is_dir():
            raise SourceError(f"{self.path}: is a directory, not a feedback store file")
        if read_only:
            uri = self.path.resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
        else:
            conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
        return conn

    def _check_schema(self, conn: sqlite3.Connection, create: bool) -> bool:
        """True when the file holds a litrank store; creates the schema in an empty file if asked."""
        (application_id,) = conn.execute("PRAGMA application_id").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if application_id == 0 and version == 0 and not tables:
            if not create:
                return False
            # Statement by statement: executescript() would COMMIT the transaction.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            return True
        if application_id != APPLICATION_ID or "feedback" not in tables:
            raise SourceError(f"{self.path}: not a litrank feedback store (a SQLite database of something else)")
        if version > SCHEMA_VERSION:
            raise SourceError(f"{self.path}: feedback store schema version {version} is newer than this litrank "
                              f"supports ({SCHEMA_VERSION}); upgrade litrank")
        return True

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "locked" in message or "busy" in message:
                raise SourceError(f"{self.path}: the feedback store is locked by another process "
                                  f"(waited {self.timeout:g} s); try again") from None
            raise SourceError(f"{self.path}: cannot use the feedback store ({message})") from None
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"{self.path}: not a litrank feedback store ({exc})") from None
        except sqlite3.Error as exc:
            raise SourceError(f"{self.path}: feedback store error ({exc})") from None

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection | None]:
        """A read transaction, or None when the store does not exist (nothing is created)."""
        if not self.path.exists():
            yield None
            return
        with self._errors():
            conn = self._connect(read_only=True)
            try:
                conn.execute("BEGIN")
                yield conn if self._check_schema(conn, create=False) else None
                conn.execute("COMMIT")
            finally:
                conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE), creating the directory and schema if needed."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot create directory {self.path.parent} "
                              f"({exc.strerror or exc})") from None
        with self._errors():
            conn = self._connect(read_only=False)
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._check_schema(conn, create=True)
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                conn.close()


def _check_judgement(judgement: int) -> None:
    if isinstance(judgement, bool) or judgement not in (LIKED, DISLIKED):
        raise ValueError(f"a judgement is {LIKED} (liked) or {DISLIKED} (disliked), not {judgement!r}")
