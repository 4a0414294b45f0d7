"""BibTeX/BibLaTeX files: read them into :class:`Paper` records and write papers back.

Reading (bibtexparser 1.4 does the tokenising; this module and :mod:`connectors.bibtex.scanner`,
the only one that touches bibtexparser's internals, add what it lacks):

* ``@string`` macros and the month macros are expanded here, after parsing, so an undefined
  macro is kept as text with a warning instead of aborting the whole file, and cyclic macros
  cannot recurse forever.
* ``crossref`` is resolved here, cascading, BibTeX-style (missing fields are inherited) plus
  the BibLaTeX rule that a container's ``title`` becomes the child's ``booktitle``. Identity
  fields (doi, eprint, url) and title fields are never inherited. A missing target or a cycle
  is a warning.
* An entry bibtexparser cannot parse becomes a "comment" there; it is reported as
  ``file:LINE: entry 'key' could not be parsed and was skipped``. Entries that a broken one
  would have swallowed (same line after junk, or inside an unbalanced brace) are re-parsed.
* Duplicate keys (compared case-insensitively, as BibTeX does) are reported; both entries
  are kept and the later one gets the id ``key-2`` (``key-3``...).
* Text fields are converted from LaTeX to Unicode (:mod:`connectors.bibtex.latex`); URL-like fields
  are kept verbatim. ``Paper.fields`` holds every field not mapped to an attribute.

Writing (:func:`dumps`), citation keys: a paper keeps the key it is already known under, since
documents already cite it: its key in the BibTeX file it came from (``entry_type`` set and
``source`` ending in ``.bib``/``.bibtex``, optionally ``.gz``), or a Zotero item's Better BibTeX
key (``citationKey``, or ``Citation Key:`` in Extra). Any other paper gets, by default,
``<first author surname><year><first significant title word>``, ASCII lower case, e.g.
``shi2026poebridge`` (the venue's first word, else ``anon``, when there is no author), or the
library's own style (:func:`detect_key_style`: ``Shi_2026``, ``Shi2026``, ``shi:2026``,
``Shi2026Poebridge``) when the CLI passes it (:mod:`connectors.bibtex.keys`).
Keys are unique case-insensitively: in output order, kept ids are reserved first, then a key
already taken gets ``a``, ``b``, ... appended. Keys depend only on the papers and their order,
so the same papers give the same keys on every run. Titles are protected by a second pair of
braces (``title = {{...}}``); text is escaped for LaTeX, URLs and DOIs are written verbatim.
"""
from __future__ import annotations

import hashlib
import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Iterable, Sequence

from bibtexparser.bibdatabase import COMMON_STRINGS

from connectors._io import atomic_write_text, iter_text

# Re-exported: callers write BibTeX through this module, keys included.
from connectors.bibtex.keys import (
    DEFAULT_KEY_STYLE,
    KEY_STYLES,
    KEYLESS_ID_PREFIX,
    citation_keys,
    detect_key_style,
    existing_key,
)
from connectors.bibtex.latex import escape_latex, format_name, latex_to_text, parse_names
from connectors.bibtex.repair import annotation_name, is_placeholder_key
from connectors.bibtex.scanner import CONTAINER_TYPES, resolve_crossrefs, scan
from connectors.errors import SourceError
from recommender.paper import Paper
from recommender.text import find_arxiv_id, normalize_doi

__all__ = ["BIBTEX_TYPES", "DEFAULT_KEY_STYLE", "KEY_STYLES", "citation_keys", "detect_key_style", "dump", "dumps",
           "existing_key", "load", "loads"]

log = logging.getLogger("litrank")

BIBTEX_TYPES = frozenset(
    "article book booklet conference inbook incollection inproceedings manual mastersthesis misc "
    "phdthesis proceedings techreport unpublished online report thesis patent collection mvbook "
    "mvcollection mvproceedings mvreference reference inreference periodical suppbook "
    "suppcollection suppperiodical set xdata dataset software bookinbook electronic www standard "
    "artwork audio video music movie image letter commentary jurisdiction legislation legal "
    "review performance".split())
_ZOTERO_TYPES = {
    "journalarticle": "article", "conferencepaper": "inproceedings", "booksection": "incollection",
    "preprint": "misc", "webpage": "online", "blogpost": "online", "manuscript": "unpublished",
    "magazinearticle": "article", "newspaperarticle": "article", "computerprogram": "software",
}
_VERBATIM_FIELDS = frozenset(
    "url doi eprint file pdf crossref xref entryset ids related biburl bibsource isbn issn urldate "
    "local-url date-added date-modified added-at timestamp interhash intrahash archiveprefix "
    "eprinttype eprintclass primaryclass langid key sortkey presort label".split())
_VENUE_FALLBACKS = ("school", "institution", "series", "howpublished", "organization", "publisher")
_COMMON_FIELDS = ("editor", "volume", "number", "pages", "month", "publisher", "address",
                  "edition", "series", "school", "institution", "organization", "howpublished")
_MONTHS = {name.lower(): abbrev for abbrev, name in COMMON_STRINGS.items()}
DERIVED_TITLE_NOTE = "Title derived from the abstract by litrank"

_YEAR_RE = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_JOURNAL_RE = re.compile(
    r"\b(journal|transactions|trans\.|letters|reviews?|magazine|bulletin|annals|quarterly|"
    r"communications of|nature|science|plos|jmlr|tmlr|machine learning research|corr|acta)\b", re.I)


_ENTRY_HEADER_RE = re.compile(r"@[ \t]*(?!(?:comment|string|preamble)\b)[A-Za-z]+[ \t]*[{(][ \t]*(?P<key>[^\s,{}()]+)[ \t]*,",
                              re.I)


def _venue_field(entry_type: str) -> str:
    """The field a venue is written to for an entry type."""
    if entry_type in ("article", "periodical", "suppperiodical"):
        return "journal"
    if entry_type in ("inproceedings", "conference", "incollection", "inbook", "inreference",
                      "bookinbook", "suppbook", "suppcollection"):
        return "booktitle"
    if entry_type in ("phdthesis", "mastersthesis", "thesis"):
        return "school"
    if entry_type in ("techreport", "report"):
        return "institution"
    if entry_type in CONTAINER_TYPES:
        return "publisher"
    return "howpublished"


def _iso_date(value: str) -> str | None:
    value = value.strip().replace(".", "-", 2) if re.match(r"\d{4}\.\d", value.strip()) else value.strip()
    value = re.sub(r"\s*([+-]\d{2}):?(\d{2})$", r"\1:\2", value.replace("Z", "+00:00"))
    value = re.sub(r"^(\d{4}-\d{2}-\d{2})[ T]", r"\1T", value)
    try:
        return datetime.fromisoformat(value).isoformat()
    except ValueError:
        return None


def _to_paper(key: str, entry_type: str, values: dict, source: str) -> Paper:
    text = {}
    for name, value in values.items():
        cleaned = " ".join(value.split()) if name in _VERBATIM_FIELDS or name.startswith("bdsk-") \
            else latex_to_text(value)
        if cleaned:
            text[name] = cleaned
    authors = parse_names(values.get("author", ""))
    text.pop("author", None)
    keyword_field = "keywords" if "keywords" in text else "keyword"
    keywords = [k.strip() for k in re.split(r"[,;]", text.pop(keyword_field, "")) if k.strip()]
    year_match = _YEAR_RE.search(text.get("year", "")) or _YEAR_RE.search(text.get("date", ""))
    year = int(year_match.group(1)) if year_match else None
    if year is not None and text.get("year") == str(year) and "date" not in text:
        del text["year"]
    venue = ""
    for name in ("booktitle", "journal", "journaltitle") + _VENUE_FALLBACKS:
        value = text.get(name, "")
        if value and not (name == "howpublished" and re.search(r"://|^www\.", value)):
            venue = value
            if name == _venue_field(entry_type):
                del text[name]
            break
    doi = normalize_doi(text.get("doi", ""))
    if doi:
        del text["doi"]
    url = text.pop("url", "")
    prefix = (text.get("archiveprefix") or text.get("eprinttype") or "").lower()
    eprint = text.get("eprint", "")
    arxiv_id = ""
    if eprint and prefix in ("arxiv", ""):
        arxiv_id = find_arxiv_id(f"arXiv:{eprint}" if prefix else eprint)
    arxiv_id = arxiv_id or find_arxiv_id(url, doi, text.get("journal"), text.get("howpublished"), venue)
    stamp = next((f for f in ("date-added", "added-at", "timestamp") if f in text), None)
    date_added = _iso_date(text[stamp]) if stamp else None
    return Paper(id=key, title=text.pop("title", ""), abstract=text.pop("abstract", ""), authors=authors,
                 year=year, venue=venue, doi=doi, arxiv_id=arxiv_id, url=url, keywords=keywords,
                 date_added=date_added, source=source, entry_type=entry_type, fields=text)


def loads(text: str, source: str = "<string>") -> list[Paper]:
    """Parse BibTeX text; ``source`` names it in messages and in ``Paper.source``."""
    return _parse([text], source)


def keyless_id(paper: Paper, line: int) -> str:
    """The id of an entry written without a key: from the paper's identity (the same paper gets
    the same id in every file), else its line. Never taken for a citation key of its own."""
    identity = paper.identity_keys()
    digest = hashlib.sha1((identity[0] if identity else f"line:{line}").encode("utf-8")).hexdigest()[:10]
    return f"{KEYLESS_ID_PREFIX}{digest}"


def load(path: Path, processes: int = 1) -> list[Paper]:
    """Read a ``.bib`` file (optionally gzip-compressed, any common encoding), a piece at a time.

    ``processes`` > 1: a file of some size is read in that many parts at once (forked
    processes, when the machine has a second core), with the same result.
    """
    return _parse(iter_text(Path(path)), str(path), processes)


def _parse(pieces: Iterable[str], source: str, processes: int = 1) -> list[Paper]:
    try:
        scanner = scan(pieces, source, processes)
    except RecursionError:
        raise SourceError(f"{source}: braces nested too deeply to parse") from None
    raws = scanner.entries
    expanded = []
    for raw in raws:
        expanded.append({annotation_name(name): scanner.expand(value, raw) for name, value in raw.values.items()})
        raw.values = {}  # the expanded values are all that is needed from here on
    resolved = resolve_crossrefs(raws, expanded, scanner)
    del expanded
    papers, first_line, taken = [], {}, set()
    for index, (raw, values) in enumerate(zip(raws, resolved)):
        key, folded = raw.key, raw.key.casefold()
        if folded in first_line:
            n = 2
            while f"{folded}-{n}" in taken:
                n += 1
            key = f"{raw.key}-{n}"
            log.warning("%s:%d: duplicate key %r (first at line %d); kept both, this one as %r",
                        source, raw.line, raw.key, first_line[folded], key)
        first_line.setdefault(folded, raw.line)
        taken.add(key.casefold())
        paper = _to_paper(key, raw.type, values, source)
        if is_placeholder_key(raw.key):  # written without a key (Mendeley, EndNote): an id of its own
            paper.id = keyless_id(paper, raw.line)
        papers.append(paper)
        resolved[index] = None  # each entry's values now live in its Paper
    stray_lines = (line.strip() for comment in scanner.stray for line in comment.splitlines())
    if not papers and not scanner.broken and any(line and not line.startswith("%") for line in stray_lines):
        log.warning("%s: no BibTeX entries found", source)
    return papers


# --- writing ---------------------------------------------------------------------------------

def _verbatim(value: str, name: str) -> str:
    value = " ".join(value.split())
    depth = 0
    for ch in value:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            break
    if depth:
        value = value.replace("{", "%7B").replace("}", "%7D") if name == "url" else \
            value.replace("{", "").replace("}", "")
    return value


def _field_value(name: str, value: str) -> str:
    if name == "month" and value.strip().lower() in _MONTHS:
        return _MONTHS[value.strip().lower()]
    if name == "month" and value.strip().lower()[:3] in COMMON_STRINGS and len(value.strip()) == 3:
        return value.strip().lower()
    if name in _VERBATIM_FIELDS or name.startswith("bdsk-") or re.fullmatch(r"https?://\S+", value):
        return "{" + _verbatim(value, name) + "}"
    if name == "pages":
        value = value.replace("—", "---").replace("–", "--")
    return "{" + escape_latex(value) + "}"


def _entry_type(paper: Paper) -> str:
    declared = paper.entry_type.strip().lower()
    if declared in BIBTEX_TYPES:
        return declared
    if declared in _ZOTERO_TYPES:
        return _ZOTERO_TYPES[declared]
    if not paper.venue or re.fullmatch(r"(?i)\s*arxiv(\s+preprint.*)?", paper.venue):
        return "misc"
    return "article" if _JOURNAL_RE.search(paper.venue) else "inproceedings"


def _format(paper: Paper, key: str, crossref: str | None) -> str:
    entry_type = _entry_type(paper)
    fields = {}
    for name, value in paper.fields.items():
        name = re.sub(r"[^a-z0-9_\-+.:]+", "-", str(name).lower()).strip("-")
        if name and value not in (None, "") and name not in fields:
            fields[name] = str(value)
    fields.pop("crossref", None)
    items: list[tuple[str, str]] = []
    if paper.title:
        items.append(("title", "{{" + escape_latex(paper.title) + "}}"))
    if paper.authors:
        items.append(("author", "{" + " and ".join(format_name(a) for a in paper.authors) + "}"))
    date_year = _YEAR_RE.search(fields.get("date", ""))
    if "year" in fields:  # a year that is not just a number ("2020a"), as the source gave it
        items.append(("year", _field_value("year", fields.pop("year"))))
    elif paper.year and not (date_year and int(date_year.group(1)) == paper.year):
        items.append(("year", f"{{{paper.year}}}"))
    venue_sources = ("booktitle", "journal", "journaltitle") + _VENUE_FALLBACKS
    if paper.venue and not any(fields.get(f) == paper.venue for f in venue_sources):
        venue_field = _venue_field(entry_type)
        fields.pop(venue_field, None)
        items.append((venue_field, "{" + escape_latex(paper.venue) + "}"))
    for name in _COMMON_FIELDS:
        if name in fields:
            items.append((name, _field_value(name, fields.pop(name))))
    if paper.url:
        items.append(("url", "{" + _verbatim(paper.url, "url") + "}"))
    if paper.doi:
        items.append(("doi", "{" + _verbatim(paper.doi, "doi") + "}"))
    if paper.arxiv_id and "eprint" not in fields:
        items.append(("eprint", "{" + _verbatim(paper.arxiv_id, "eprint") + "}"))
        if "archiveprefix" not in fields and "eprinttype" not in fields:
            items.append(("archiveprefix", "{arXiv}"))
    if crossref:
        items.append(("crossref", "{" + crossref + "}"))
    if paper.abstract:
        items.append(("abstract", "{" + escape_latex(paper.abstract) + "}"))
    if paper.keywords:
        items.append(("keywords", "{" + escape_latex(", ".join(paper.keywords)) + "}"))
    note = fields.pop("note", "")
    if paper.title_derived and DERIVED_TITLE_NOTE not in note:
        note = f"{note}; {DERIVED_TITLE_NOTE}" if note else DERIVED_TITLE_NOTE
    if note:
        items.append(("note", _field_value("note", note)))
    written = {name for name, _ in items}
    items += [(name, _field_value(name, fields[name])) for name in sorted(fields) if name not in written]
    body = "".join(f"  {name} = {value},\n" for name, value in items)
    return f"@{entry_type}{{{key},\n{body}}}"


def dumps(papers: Sequence[Paper], key_style: str = DEFAULT_KEY_STYLE) -> str:
    """BibTeX text for ``papers``: one entry each, in order, blank-line separated.

    Keys follow :func:`citation_keys` (``key_style`` for papers without a key of their own;
    :func:`detect_key_style` finds a library's). A ``crossref`` is kept only when its target is written
    later in the same output (BibTeX requires that order); inherited fields are inlined anyway.
    """
    papers = list(papers)
    keys = citation_keys(papers, key_style)
    position = {}
    for i, paper in enumerate(papers):
        position.setdefault(paper.id.casefold(), i)
    entries = []
    for i, paper in enumerate(papers):
        target = position.get(str(paper.fields.get("crossref", "")).strip().casefold())
        entries.append(_format(paper, keys[i], keys[target] if target is not None and target > i else None))
    return "\n\n".join(entries) + "\n" if entries else ""


def dump(papers: Sequence[Paper], path: Path) -> None:
    """Write ``papers`` to ``path`` atomically (gzip-compressed when it ends in ``.gz``)."""
    atomic_write_text(Path(path), dumps(papers))


def add_missing_fields(text: str, additions: dict[str, dict[str, str]]) -> tuple[str, int]:
    """``text`` with each ``{key: {field: value}}`` addition written into the entry of that key,
    as the first field, where the entry has no such field yet; everything else stays as it is,
    byte for byte. Returns the new text and the number of fields added."""
    added = 0
    headers = list(_ENTRY_HEADER_RE.finditer(text))
    pieces, last = [], 0
    for index, header in enumerate(headers):
        fields = additions.get(header.group("key"))
        if not fields:
            continue
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.end():end]
        new = [f"  {name} = {_field_value(name, value)},\n" for name, value in fields.items()
               if not re.search(rf"(?i)(?:^|[\s,]){re.escape(name)}\s*=", body)]
        if new:
            pieces += [text[last:header.end()], "\n" + "".join(new).rstrip("\n")]
            last = header.end()
            added += len(new)
    return "".join(pieces) + text[last:], added
