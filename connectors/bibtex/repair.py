"""BibTeX that real tools write and bibtexparser 1.4 refuses, rewritten before it parses.

Three shapes, each accepted by BibTeX, Biber or Zotero, each of which made bibtexparser drop
the whole entry:

* **a missing key**, as Mendeley writes it (``@article{,`` followed by fields) and EndNote
  (``@article{`` and the first field straight away). A
  placeholder key (:data:`KEYLESS_PREFIX` and the entry's line) is put in; the reader then gives
  the paper an id of its own (:func:`is_placeholder_key`);
* **an empty field between commas**: ``title = {...}, , number = {2PTE3}``. The extra comma goes;
* **BibLaTeX data annotations**: ``author+an = {1=highlight}``, ``title+an:role = {=main}``. The
  field name is swapped for a plain placeholder and given back after parsing
  (:func:`annotation_name`), so that an export writes the annotation as it was.

Line numbers are kept: nothing is inserted or removed across a newline. Text in which none of
the three shapes can occur is returned at once (one regular-expression search).
"""
from __future__ import annotations

import re

KEYLESS_PREFIX = "litrankkeyless"
_ANNOTATION_PREFIX = "litrankannotation"

# Any of the three shapes may be present (cheap test; the walk below decides).
_SUSPECT_RE = re.compile(r"@[ \t]*[A-Za-z]+[ \t\r\n]*[{(][ \t\r\n]*(,|[^\s=,{}()\"#%']+[ \t\r\n]*=)|,[ \t\r\n]*,"
                         r"|[+:][\w:-]*[ \t]*=")
_HEADER_RE = re.compile(r"@[ \t]*([A-Za-z]+)[ \t\r\n]*([{(])")
_SPECIAL = re.compile(r'[{}()",=\n]')
_FIELD_NAME_RE = re.compile(r"[ \t\r\n]*([^\s=,{}()\"#%']+)[ \t\r\n]*=")
_NEXT_HEADER_RE = re.compile(r"[ \t]*@[ \t]*[A-Za-z]+[ \t]*[{(]")
_NOT_ENTRIES = ("comment", "preamble", "string")


def is_placeholder_key(key: str) -> bool:
    """True for the key :func:`repair` gave an entry written without one."""
    return key.startswith(KEYLESS_PREFIX)


def annotation_name(name: str) -> str:
    """A field name as the file wrote it (placeholders of annotation fields turned back)."""
    if name.startswith(_ANNOTATION_PREFIX):
        return bytes.fromhex(name[len(_ANNOTATION_PREFIX):]).decode("utf-8")
    return name


def _placeholder(name: str) -> str:
    return _ANNOTATION_PREFIX + name.encode("utf-8").hex()


def repair(text: str, first_line: int = 1) -> str:
    """``text`` with the three shapes rewritten (see the module); ``first_line`` is the file
    line the text starts on (it names placeholder keys)."""
    if not _SUSPECT_RE.search(text):
        return text
    out: list[str] = []
    copied = 0  # text[:copied] is in out
    pos = 0
    while (header := _HEADER_RE.search(text, pos)) is not None:
        pos = header.end()
        if header.group(1).lower() in _NOT_ENTRIES:
            continue
        after = pos
        while after < len(text) and text[after] in " \t\r\n":
            after += 1
        # No key: "@article{," (Mendeley) or a field straight away, "@article{ author = ..." (EndNote).
        field_first = _FIELD_NAME_RE.match(text, after) is not None
        if after < len(text) and (text[after] == "," or field_first):
            line = first_line + text.count("\n", 0, header.start())
            column = header.start() - (text.rfind("\n", 0, header.start()) + 1)
            out += [text[copied:pos], f"{KEYLESS_PREFIX}{line}x{column}" + ("," if field_first else "")]
            copied = pos
        pos, copied = _walk_entry(text, pos, "}" if header.group(2) == "{" else ")", out, copied)
    out.append(text[copied:])
    return "".join(out)


def _walk_entry(text: str, pos: int, closing: str, out: list[str], copied: int) -> tuple[int, int]:
    """Walk one entry's body from ``pos`` (after its opening brace), appending to ``out`` the
    text from ``copied`` with empty fields dropped and annotation fields renamed. Returns where
    the entry ends (or where a new entry plainly starts) and how far the text is copied."""
    depth = 1
    i = pos
    while depth > 0:
        special = _SPECIAL.search(text, i)
        if special is None:
            return len(text), copied
        i, c = special.start(), special.group()
        if c == "\n":
            # An entry whose braces never close: stop where the next one plainly starts.
            if depth > 1 and _NEXT_HEADER_RE.match(text, i + 1):
                return i + 1, copied
        elif c == "{":
            depth += 1
        elif c == "}" or (c == ")" and closing == ")" and depth == 1):
            depth -= 1
        elif c == '"' and depth == 1:
            i = _after_quoted(text, i + 1)
            continue
        elif c == "," and depth == 1:
            j = i + 1
            while j < len(text) and text[j] in " \t\r\n,":
                if text[j] == ",":  # an empty field: this comma goes (a space keeps the offsets)
                    out += [text[copied:j], " "]
                    copied = j + 1
                j += 1
            field = _FIELD_NAME_RE.match(text, j)
            if field and ("+" in field.group(1) or ":" in field.group(1)):
                out += [text[copied:field.start(1)], _placeholder(field.group(1))]
                copied = field.end(1)
            i = j
            continue
        i += 1
    return i, copied


def _after_quoted(text: str, i: int) -> int:
    """The position after the closing quote of a quoted value starting at ``i`` (braces nest)."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return i  # a stray closing brace ends the entry: let the walk see it
            depth -= 1
        elif c == '"' and depth == 0:
            return i + 1
        i += 1
    return i
