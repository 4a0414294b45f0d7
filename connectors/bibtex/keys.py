"""Citation keys for BibTeX output: the key a paper is already known under, and new keys in a
library's own style.

A paper keeps the key documents already cite it by: its key in the BibTeX file it came from, or
a Zotero item's Better BibTeX / Zotero 7 key (``citationKey``, or ``Citation Key:`` in Extra).
Other papers get a key built in one of :data:`KEY_STYLES` (:func:`detect_key_style` finds the
one a library uses). Keys are unique case-insensitively, in output order: existing keys are
reserved first, then a key already taken gets ``a``, ``b``, ... appended.
"""
from __future__ import annotations

import re
from typing import Sequence

from connectors.bibtex.latex import is_institution
from recommender.paper import Paper
from recommender.text import strip_accents, surname

_STOP_WORDS = frozenset(
    "a an the on of towards toward in for to and with at by from via is are do does what how why "
    "when can we our into as its be not".split())
# The id of a BibTeX entry written without a key (connectors.bibtex.keyless_id).
KEYLESS_ID_PREFIX = "keyless-"
_VALID_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:.\-/+]*")
_EXTRA_CITATION_KEY_RE = re.compile(r"^\s*Citation Key:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
# Key styles litrank can write, each with the pattern that recognises it in a library's keys.
KEY_STYLES = {
    "authoryearword": re.compile(r"[a-z]+\d{4}[a-z]+[a-z0-9]*"),  # shi2026poebridge (Google Scholar, BBT's default)
    "Author_Year": re.compile(r"[A-Z][A-Za-z]+_\d{4}[a-z]?"),  # Shi_2026
    "AuthorYear": re.compile(r"[A-Z][A-Za-z]+\d{4}[a-z]?"),  # Shi2026
    "author:year": re.compile(r"[a-z]+:\d{4}[a-z]?"),  # shi:2026
    "AuthorYearWord": re.compile(r"[A-Z][A-Za-z]+\d{4}[A-Z][A-Za-z0-9]*"),  # Shi2026Poebridge
}
DEFAULT_KEY_STYLE = "authoryearword"


def _ascii_word(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", strip_accents(text).lower())


def _base_key(paper: Paper, style: str = DEFAULT_KEY_STYLE) -> str:
    who = ""
    if paper.authors:
        first = paper.authors[0]
        who = _ascii_word(first.split()[0] if is_institution(first) else surname(first).replace(" ", ""))
    if not who:
        who = next((w for w in map(_ascii_word, paper.venue.split()) if w), "") or "anon"
    word = next((w for w in map(_ascii_word, paper.title.split()) if w and w not in _STOP_WORDS), "")
    year = str(paper.year or "")
    if style == "Author_Year":
        return f"{who.capitalize()}_{year}" if year else who.capitalize()
    if style == "AuthorYear":
        return f"{who.capitalize()}{year}"
    if style == "author:year":
        return f"{who}:{year}" if year else who
    if style == "AuthorYearWord":
        return f"{who.capitalize()}{year}{word.capitalize()}"
    return f"{who}{year}{word}"




def existing_key(paper: Paper) -> str | None:
    """The citation key a paper is already known under: its key in the BibTeX file it came from,
    or the Zotero item's Better BibTeX / Zotero 7 key (``citationKey``, or ``Citation Key:`` in
    Extra). None when it has none (a conference list's paper, say)."""
    if paper.entry_type and paper.source.lower().endswith((".bib", ".bibtex", ".biblatex", ".bib.gz", ".bibtex.gz",
                                                           ".biblatex.gz")):
        keyless = paper.id.startswith(KEYLESS_ID_PREFIX)  # the file gave none: make one
        return paper.id if _VALID_KEY_RE.fullmatch(paper.id) and not keyless else None
    for candidate in (paper.fields.get("citationKey", ""),
                      *_EXTRA_CITATION_KEY_RE.findall(paper.fields.get("extra", ""))):
        if _VALID_KEY_RE.fullmatch(candidate.strip()):
            return candidate.strip()
    return None


def detect_key_style(papers: Sequence[Paper]) -> str:
    """The key style most of a library's own keys follow (at least half of them), else the default."""
    counts = dict.fromkeys(KEY_STYLES, 0)
    keys = [key for paper in papers if (key := existing_key(paper))]
    for key in keys:
        style = next((name for name, pattern in KEY_STYLES.items() if pattern.fullmatch(key)), None)
        if style:
            counts[style] += 1
    best = max(counts, key=counts.get)
    return best if keys and counts[best] * 2 >= len(keys) else DEFAULT_KEY_STYLE


def _keeps_id(paper: Paper) -> bool:
    return existing_key(paper) is not None


def _suffixes():
    n = 0
    while True:
        n += 1
        label, k = "", n
        while k:
            k, r = divmod(k - 1, 26)
            label = chr(97 + r) + label
        yield label


def citation_keys(papers: Sequence[Paper], key_style: str = DEFAULT_KEY_STYLE) -> list[str]:
    """The key each paper is written under by :func:`dumps` (see the module docstring): its
    existing key (:func:`existing_key`), else one built in ``key_style`` (see :data:`KEY_STYLES`)."""
    keys: list[str | None] = [None] * len(papers)
    used: set[str] = set()
    for i, paper in enumerate(papers):
        known = existing_key(paper)
        if known and known.casefold() not in used:
            keys[i] = known
            used.add(known.casefold())
    for i, paper in enumerate(papers):
        if keys[i] is None:
            base = existing_key(paper) or _base_key(paper, key_style)
            key, suffixes = base, _suffixes()
            while key.casefold() in used:
                key = base + next(suffixes)
            keys[i] = key
            used.add(key.casefold())
    return keys  # type: ignore[return-value]
