"""Errors raised by connectors. All are ``ValueError`` subclasses carrying a one-line message."""
from __future__ import annotations


class SourceError(ValueError):
    """A source cannot be read or a target cannot be written (missing, unreadable, malformed)."""


class UnsupportedFormatError(SourceError):
    """The format of a source could not be determined or is not supported."""
