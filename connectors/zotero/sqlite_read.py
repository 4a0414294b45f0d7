"""Reading an SQLite database that another program (a running Zotero) may hold, without ever
writing to it or beside it.

:func:`read_database` runs a reader function on a connection and picks the cheapest safe way:

1. **Unlocked**: SQLite's ``mode=ro`` (``immutable=1`` for a WAL database with no log, where
   ``mode=ro`` would create ``-wal``/``-shm`` files beside it).
2. **Locked, nothing pending** (a running Zotero between writes; the common case): Zotero's
   ``locking_mode=EXCLUSIVE`` shuts out every reader that takes locks, but when its rollback
   journal holds no transaction (Zotero ≤ 9 keeps the ``-journal`` with a zeroed header) and its
   write-ahead log holds no committed frame, the main file is the whole committed state. It is
   read in place with ``immutable=1`` (no locks, no files), and the files' sizes and times are
   compared before and after: a write meanwhile means reading again.
3. **Locked with pending writes** (a transaction under way, or commits still only in the
   ``-wal``, which ``immutable=1`` would not see): the database and its ``-wal``/``-journal``
   are copied to a temporary directory (a copy-on-write clone where the file system offers one)
   and the copy is read; SQLite replays the log or rolls back the journal there.

The way used is logged at INFO level on the ``"litrank"`` logger.
"""
from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import struct
import tempfile
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from connectors.errors import SourceError

log = logging.getLogger("litrank")

T = TypeVar("T")
LOCK_TIMEOUT = 0.2  # seconds to wait for a lock; Zotero's exclusive lock is never released while it runs
IN_PLACE_ATTEMPTS = 3
_JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # a rollback journal that holds a transaction
_WAL_MAGICS = {0x377F0682: "<", 0x377F0683: ">"}  # checksum byte order: little-, big-endian
_FICLONE = 0x40049409  # Linux ioctl: a copy-on-write clone (btrfs, XFS, bcachefs)


def sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def is_wal(path: Path) -> bool:
    """True when the database header says WAL mode; SourceError when it is not an SQLite database."""
    with open(path, "rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise SourceError(f"{path}: not an SQLite database "
                          "(a Zotero library is the zotero.sqlite file of its data directory)")
    return header[18] == 2 or header[19] == 2


def _stamps(path: Path) -> list:
    files = [sidecar(path, suffix) for suffix in ("", "-wal", "-journal")]
    return [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists()]


def _checksum(data: bytes, order: str, s0: int, s1: int) -> tuple[int, int]:
    """SQLite's WAL checksum (wal.c ``walChecksumBytes``) over ``data`` (a multiple of 8 bytes)."""
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def wal_has_commits(wal: Path) -> bool:
    """True when the write-ahead log holds a valid committed frame (a commit that may not be in
    the main file yet), checked as SQLite recovers a log: salts and running checksums."""
    try:
        with open(wal, "rb") as handle:
            header = handle.read(32)
            if len(header) < 32:
                return False
            magic, _, page_size, _, salt1, salt2, c0, c1 = struct.unpack(">8I", header)
            order = _WAL_MAGICS.get(magic)
            if order is None or page_size < 512 or page_size & (page_size - 1):
                return False
            s0, s1 = _checksum(header[:24], order, 0, 0)
            if (s0, s1) != (c0, c1):
                return False
            while True:
                frame = handle.read(24 + page_size)
                if len(frame) < 24 + page_size:
                    return False
                _, commit_size, frame_salt1, frame_salt2, f0, f1 = struct.unpack(">6I", frame[:24])
                if (frame_salt1, frame_salt2) != (salt1, salt2):
                    return False
                s0, s1 = _checksum(frame[:8] + frame[24:], order, s0, s1)
                if (s0, s1) != (f0, f1):
                    return False
                if commit_size:
                    return True
    except FileNotFoundError:
        return False


def _pending(path: Path, wal_mode: bool) -> str | None:
    """Why the main file alone may not be the committed state, or None."""
    if wal_mode:
        return "commits still only in the write-ahead log" if wal_has_commits(sidecar(path, "-wal")) else None
    try:
        with open(sidecar(path, "-journal"), "rb") as handle:
            return "a transaction under way (rollback journal)" if handle.read(8) == _JOURNAL_MAGIC else None
    except FileNotFoundError:
        return None


def _clone_or_copy(source: Path, target: Path) -> None:
    try:
        import fcntl

        with open(source, "rb") as src, open(target, "wb") as dst:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
    except (ImportError, OSError):
        shutil.copyfile(source, target)


@contextlib.contextmanager
def _snapshot(path: Path, reason: str) -> Iterator[sqlite3.Connection]:
    """A connection to a temporary copy of the database, its write-ahead log and rollback journal."""
    with tempfile.TemporaryDirectory(prefix="litrank-zotero-") as tmp:
        copy = Path(tmp) / path.name
        for _ in range(3):  # copy again when Zotero wrote meanwhile, so that the copy is consistent
            before = _stamps(path)
            for suffix in ("", "-wal", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    _clone_or_copy(sidecar(path, suffix), sidecar(copy, suffix))
            if _stamps(path) == before:
                break
        log.info("%s: %s; reading a temporary copy of the database and its -wal/-journal file "
                 "(the original is not touched)", path, reason)
        connection = sqlite3.connect(copy)  # the copy is ours: SQLite may replay its WAL or journal
        try:
            yield connection
        finally:
            connection.close()


def _read_in_place(path: Path, wal_mode: bool, read: Callable[[sqlite3.Connection], T],
                   reason: str) -> tuple[bool, T | None, str]:
    """(True, result) when the locked database could be read in place consistently; else
    (False, None, why not)."""
    for _ in range(IN_PLACE_ATTEMPTS):
        pending = _pending(path, wal_mode)
        if pending:
            return False, None, f"{reason}, with {pending}"
        before = _stamps(path)
        connection = sqlite3.connect(path.resolve().as_uri() + "?immutable=1", uri=True)
        try:
            result = read(connection)
        except sqlite3.DatabaseError:
            if _stamps(path) == before:
                raise  # not a write meanwhile: the database itself is at fault
            continue
        finally:
            connection.close()
        if _stamps(path) == before and not _pending(path, wal_mode):
            log.info("%s: %s; nothing pending, so it was read in place (immutable, no locks taken, "
                     "nothing copied)", path, reason)
            return True, result, ""
    return False, None, f"{reason}, and it changed while being read"


def read_database(path: Path, read: Callable[[sqlite3.Connection], T], *, in_place: bool = True) -> T:
    """``read(connection)`` on the database at ``path``, by the cheapest safe way (see the module
    docstring). ``in_place=False`` copies a locked database even when nothing is pending (the
    benchmark's baseline)."""
    wal_mode, locked = is_wal(path), None
    uri, mode = path.resolve().as_uri() + "?mode=ro", "read-only (mode=ro)"
    if wal_mode and not sidecar(path, "-wal").exists():
        uri, mode = uri + "&immutable=1", "read-only, immutable (WAL database with no pending write-ahead log)"
    elif wal_mode and not sidecar(path, "-shm").exists():
        # mode=ro would create the -shm index beside the user's database. Zotero running with its
        # exclusive lock keeps that index in memory; or the log was left by a crash.
        locked = "write-ahead log without a shared-memory index (Zotero is running)"
    if locked is None:
        connection = sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as error:  # "database is locked": Zotero is running
            connection.close()
            locked = f"{error} (Zotero is probably running)"
        else:
            log.info("%s: reading the Zotero database directly, %s", path, mode)
            try:
                return read(connection)
            finally:
                connection.close()
    reason = locked
    if in_place:
        done, result, reason = _read_in_place(path, wal_mode, read, locked)
        if done:
            return result  # type: ignore[return-value]
    with _snapshot(path, reason) as connection:
        return read(connection)
