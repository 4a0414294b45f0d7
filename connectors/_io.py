"""File plumbing shared by the connectors: decoding, gzip, atomic writes."""
from __future__ import annotations

import gzip
import logging
import os
import tempfile
from pathlib import Path

from .errors import SourceError

log = logging.getLogger("litrank")

# Tried in order after UTF-8. cp1252 is a superset of Latin-1 for printable text and is what
# Windows reference managers write; latin-1 decodes any byte string, so it is the last resort.
_FALLBACK_ENCODINGS = ("cp1252", "latin-1")


def read_text(path: Path, encoding: str | None = None) -> str:
    """Read a (possibly gzip-compressed) text file, tolerating a BOM and legacy encodings.

    UTF-8 (with or without BOM) is tried first; a file that is not UTF-8 is decoded as
    cp1252/Latin-1 and a warning names the encoding used. ``encoding`` forces one.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise SourceError(f"{path}: corrupt gzip data ({exc})") from None
    if encoding:
        try:
            return raw.decode(encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            raise SourceError(f"{path}: cannot decode as {encoding} ({exc})") from None
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        first_error = exc
    if b"\x00" in raw[:4096]:
        raise SourceError(f"{path}: looks like a binary file, not text")
    for fallback in _FALLBACK_ENCODINGS:
        try:
            text = raw.decode(fallback)
        except UnicodeDecodeError:
            continue
        log.warning(
            "%s: not valid UTF-8 (byte 0x%02x at offset %d); read as %s",
            path, raw[first_error.start], first_error.start, fallback,
        )
        return text
    raise SourceError(f"{path}: unknown text encoding")  # unreachable: latin-1 decodes all


def atomic_write_text(path: Path, text: str, compress: bool | None = None) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one.

    The data goes to a temporary file in the same directory, is flushed to disk and then
    renamed over the target. ``compress`` (default: when the name ends in ``.gz``) gzips it.
    """
    path = Path(path)
    if compress is None:
        compress = path.suffix == ".gz"
    data = text.encode("utf-8")
    if compress:
        # mtime=0 keeps the output byte-identical for identical inputs.
        data = gzip.compress(data, mtime=0)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise SourceError(f"{path}: directory {directory} does not exist")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp_name, path.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_name, 0o666 & ~umask)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
