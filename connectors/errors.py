"""Errors raised by connectors (``ValueError`` subclasses carrying a one-line message), and the
log level of what a user should hear without it being a problem."""
from __future__ import annotations

import logging

# Between INFO (shown with -v) and WARNING: shown by default, without a "warning:" prefix (a
# count of merged duplicates, say). -q hides it.
NOTICE = 25
logging.addLevelName(NOTICE, "NOTICE")


class SourceError(ValueError):
    """A source cannot be read or a target cannot be written (missing, unreadable, malformed)."""


class UnsupportedFormatError(SourceError):
    """The format of a source could not be determined or is not supported."""
