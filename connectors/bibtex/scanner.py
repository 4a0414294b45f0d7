"""The reading machinery of :mod:`connectors.bibtex`: bibtexparser 1.4 run entry by entry with
line numbers, recovery of entries a broken one swallows, ``@string`` expansion that survives
undefined or cyclic macros, and crossref resolution.

This is the one place that uses bibtexparser's internals (``BibTexParser._expr``, the pyparsing
grammar, ``BibDataString``): it is pinned to bibtexparser < 2, and a 1.4.x change that moves
them fails the tests of tests/test_bibtex.py here, not somewhere else.
"""
from __future__ import annotations

import bisect
import contextlib
import gc
import logging
import re
from array import array
from dataclasses import dataclass
from typing import Iterable, Iterator

import pyparsing
from bibtexparser.bibdatabase import COMMON_STRINGS, BibDataString, BibDataStringExpression
from bibtexparser.bparser import BibTexParser

from connectors.bibtex.repair import repair

log = logging.getLogger("litrank")

_NOT_INHERITED = frozenset(
    "ids crossref xref entryset title subtitle titleaddon shorttitle sorttitle indextitle "
    "indexsorttitle label shorthand sortkey presort abstract doi eprint eprinttype archiveprefix "
    "primaryclass url file date-added date-modified added-at timestamp keywords keyword".split())
CONTAINER_TYPES = frozenset("book mvbook collection mvcollection proceedings mvproceedings "
                            "reference mvreference".split())

_HEADER_RE = re.compile(r"\s*@\s*([A-Za-z]+)\s*[{(]\s*([^\s,{}()\"#%'=]*)")
_LINE_HEADER_RE = re.compile(r"^[ \t]*@[ \t]*(?!comment\b)[A-Za-z]+[ \t]*[{(]", re.M | re.I)
_ANY_HEADER_RE = re.compile(r"@[ \t]*(?!comment\b)[A-Za-z]+[ \t]*[{(][ \t\r\n]*[^\s,{}()]+[ \t\r\n]*,", re.I)
_EMPTY_ENTRY_RE = re.compile(r"\s*@\s*([A-Za-z]+)\s*[{(]\s*([^\s,{}()\"#%'=]+)\s*,?\s*[})]\s*")


# A quarter megabyte of text per bibtexparser call: pyparsing needs ~50x that while it runs (see chunks).
CHUNK_CHARS = 1 << 18
# Below this much text a second process costs more than it saves (bibtexparser reads about
# 0.7 MB a second; starting a process and sending back its entries takes some 30 ms).
PARALLEL_MIN_CHARS = 1 << 17


@dataclass
class Raw:
    """One entry as bibtexparser gave it, with its offset in the text."""
    type: str
    key: str
    values: dict  # field name -> str | BibDataString | BibDataStringExpression
    line: int  # where the entry starts in the whole file


class Scanner:
    """Runs bibtexparser over a text, chunk by chunk, recording where each entry starts, and recovers.

    ``feed`` one chunk at a time (see :func:`chunks`): only the current chunk's text is held;
    entries keep their line in the whole file. ``@string`` macros carry over to later chunks.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.entries: list[Raw] = []
        self.strings: dict = {}
        self.stray: list[str] = []  # text outside entries
        self.broken = 0
        self.text, self._first_line, self._newlines = "", 1, array("q")
        self._frozen = False

    def feed(self, text: str, first_line: int = 1) -> None:
        """Parse one chunk that starts on line ``first_line`` of the file (first rewriting what
        real tools write and bibtexparser refuses: :mod:`connectors.bibtex.repair`)."""
        self.text, self._first_line = repair(text, first_line), first_line
        text = self.text
        self._newlines = array("q", (match.start() for match in re.finditer("\n", text)))
        try:
            self.parse(0, len(text))
        finally:
            self.text, self._newlines = "", array("q")
        # pyparsing's exceptions and results hold the chunk's text in reference cycles: free
        # them now, or a large file's chunks pile up until the next full collection. Freezing
        # what survives keeps each collection as small as one chunk (see parsing()).
        gc.collect()
        if self._frozen:
            gc.freeze()

    @contextlib.contextmanager
    def parsing(self):
        """Around a series of ``feed`` calls: the objects kept from each chunk are moved out of
        the garbage collector's sight until the end, unless the process froze objects itself."""
        self._frozen = gc.get_freeze_count() == 0
        try:
            yield self
        finally:
            if self._frozen:
                gc.unfreeze()
            self._frozen = False

    def absorb(self, later: "Scanner") -> None:
        """Take in what ``later`` found in the text that follows this scanner's (its macros
        override this one's, as a later definition in the file does)."""
        self.entries.extend(later.entries)
        self.strings.update(later.strings)
        self.stray.extend(later.stray)
        self.broken += later.broken

    def line(self, pos: int) -> int:
        """The file line of position ``pos`` of the current chunk."""
        return self._first_line + bisect.bisect_left(self._newlines, pos)

    def broken_entry(self, pos: int, key: str, reason: str = "") -> None:
        self.broken += 1
        log.warning("%s:%d: entry %r could not be parsed and was skipped%s",
                    self.source, self.line(pos), key or "?", reason)

    def parse(self, start: int, end: int) -> None:
        parser = BibTexParser(common_strings=False, ignore_nonstandard_types=False,
                              interpolate_strings=False, add_missing_from_crossref=False)
        parser.expect_multiple_parse = True
        # pyparsing expands tabs before parsing unless told not to: locations would drift.
        parser._expr.main_expression.parse_with_tabs()
        database, events = parser.bib_database, []
        parser._expr.entry.add_parse_action(
            lambda s, loc, toks: events.append((loc, "entry", database.entries[-1])))
        parser._expr.implicit_comment.add_parse_action(
            lambda s, loc, toks: events.append((loc, "comment", toks[0])))
        failed_at = None
        try:
            parser.parse(self.text[start:end])
        except pyparsing.ParseBaseException as exc:
            failed_at = start + exc.loc
        self.strings.update(database.strings)
        for loc, kind, item in events:
            pos = start + loc
            if kind == "entry":
                swallowed = _LINE_HEADER_RE.search(self.text, pos + 1, end)
                if swallowed and any(_LINE_HEADER_RE.search(piece) for value in item.values()
                                     for piece in _pieces(value)):
                    self.broken_entry(pos, item["ID"], " (unbalanced braces: a later entry starts inside it)")
                    self.parse(swallowed.start(), end)
                    return
                values = {k: v for k, v in item.items() if k not in ("ID", "ENTRYTYPE")}
                self.entries.append(Raw(item["ENTRYTYPE"], item["ID"], values, self.line(pos)))
            else:
                self._comment(pos, item)
        if failed_at is not None:
            header = _HEADER_RE.match(self.text, failed_at)
            if header:
                self.broken_entry(failed_at, header.group(2))
            restart = _LINE_HEADER_RE.search(self.text, failed_at + 1, end)
            if restart:
                self.parse(restart.start(), end)

    def _comment(self, pos: int, comment: str) -> None:
        """A stretch bibtexparser saw as a comment: a broken or an empty entry, or text."""
        header = _HEADER_RE.match(comment)
        resume_from = 0
        if header and header.group(1).lower() != "comment":
            empty = _EMPTY_ENTRY_RE.fullmatch(comment)
            if empty:  # "@misc{key}" or "@misc{key,}": valid, just has no fields
                self.entries.append(Raw(empty.group(1).lower(), empty.group(2), {}, self.line(pos)))
                return
            self.broken_entry(pos, header.group(2))
            resume_from = header.end()
        else:
            self.stray.append(comment)
        # BibTeX starts an entry at any "@": recover entries hidden later in this stretch.
        for match in _ANY_HEADER_RE.finditer(comment, resume_from):
            line_start = comment.rfind("\n", 0, match.start()) + 1
            if not comment[line_start:match.start()].lstrip().startswith("%"):
                self.parse(pos + match.start(), pos + len(comment))
                return

    def expand(self, value, raw: Raw, seen: tuple = ()) -> str:
        if isinstance(value, BibDataStringExpression):
            return "".join(self.expand(part, raw, seen) for part in value.expr)
        if not isinstance(value, BibDataString):
            return str(value)
        name = value.name
        if name in self.strings and name not in seen:
            return self.expand(self.strings[name], raw, seen + (name,))
        if name in COMMON_STRINGS and name not in seen:
            return COMMON_STRINGS[name]
        problem = "circular" if name in seen else "undefined"
        log.warning("%s:%d: entry %r: %s @string %r, kept as text",
                    self.source, raw.line, raw.key, problem, name)
        return name


def scan(pieces: Iterable[str], source: str, processes: int = 1) -> Scanner:
    """A :class:`Scanner` that has read the whole text, given in pieces, chunk by chunk.

    With ``processes`` > 1 and ``PARALLEL_MIN_CHARS`` or more of text, the text is cut into
    that many parts where a line starts an entry and the parts are read at once, all but the
    first in forked processes: the same entries, macros and warnings, in the same order.
    """
    if processes > 1:
        text = "".join(pieces)
        if len(text) >= PARALLEL_MIN_CHARS:
            return _scan_in_parts(text, source, processes)
        pieces = [text]
    return _scan_part(pieces, 1, source)


def _scan_part(pieces: Iterable[str], first_line: int, source: str) -> Scanner:
    scanner = Scanner(source)
    with scanner.parsing():
        for chunk, line in chunks(pieces):
            scanner.feed(chunk, first_line + line - 1)
    return scanner


def _scan_in_parts(text: str, source: str, processes: int) -> Scanner:
    from recommender.runtime import run_aside

    parts = list(chunks([text], -(-len(text) // processes)))
    later = [run_aside(_scan_part, [part], first_line, source) for part, first_line in parts[1:]]
    scanner = _scan_part([parts[0][0]], 1, source)
    for result in later:
        scanner.absorb(result())  # its warnings are logged here, after the earlier parts'
    return scanner


def chunks(pieces: Iterable[str], chunk_chars: int | None = None) -> Iterator[tuple[str, int]]:
    """Cut a text, given in pieces of any size, into chunks of about ``chunk_chars`` (default
    ``CHUNK_CHARS``), each
    ending where a line starts an entry (so no entry is cut), with the line each starts on.

    pyparsing's results for one chunk are dropped before the next is parsed: a large file
    parses in linear time and in memory that does not grow with pyparsing's bookkeeping.
    """
    chunk_chars = chunk_chars or CHUNK_CHARS
    buffer, offset, first_line = "", 0, 1
    for piece in pieces:
        buffer = buffer[offset:] + piece  # what is left of the last piece, then this one
        offset = 0
        while len(buffer) - offset > chunk_chars:
            boundary = _LINE_HEADER_RE.search(buffer, offset + chunk_chars)
            if boundary is None:
                break
            chunk = buffer[offset:boundary.start()]
            yield chunk, first_line
            first_line += chunk.count("\n")
            offset = boundary.start()
    if offset < len(buffer):
        yield buffer[offset:], first_line


def _pieces(value) -> list[str]:
    if isinstance(value, BibDataStringExpression):
        return [part for part in value.expr if isinstance(part, str)]
    return [value] if isinstance(value, str) else []


def resolve_crossrefs(raws: list[Raw], expanded: list[dict], scanner: Scanner) -> list[dict]:
    index: dict[str, int] = {}
    for i, raw in enumerate(raws):
        index.setdefault(raw.key.casefold(), i)
    for i, values in enumerate(expanded):
        for alias in values.get("ids", "").split(","):
            if alias.strip():
                index.setdefault(alias.strip().casefold(), i)
    done: dict[int, dict] = {}

    def resolve(i: int, chain: tuple) -> dict:
        if i in done:
            return done[i]
        values, raw = expanded[i], raws[i]
        target = values.get("crossref", "").strip()
        parent = index.get(target.casefold()) if target else None
        if target and parent is None:
            log.warning("%s:%d: entry %r: crossref target %r not found",
                        scanner.source, raw.line, raw.key, target)
        elif target and (parent == i or parent in chain):
            log.warning("%s:%d: entry %r: circular crossref to %r ignored",
                        scanner.source, raw.line, raw.key, target)
        elif target:
            inherited = resolve(parent, chain + (i,))
            values = dict(values)
            for name, value in inherited.items():
                if name not in values and name not in _NOT_INHERITED:
                    values[name] = value
            parent_title = inherited.get("title", "")
            if raws[parent].type in CONTAINER_TYPES and parent_title:
                values.setdefault("booktitle", parent_title)
            elif raws[parent].type == "periodical" and parent_title and "journaltitle" not in values:
                values.setdefault("journal", parent_title)
        done[i] = values
        return values

    return [resolve(i, ()) for i in range(len(raws))]
