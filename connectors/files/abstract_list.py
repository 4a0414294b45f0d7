"""Plain-text abstract lists, such as the ICML 2026 pages in ``../shared/seeds``.

Format: an optional header line naming the collection ("ICML 2026 Papers", "ICML 2026 论文列表"),
then one abstract per blank-line-separated paragraph. Such lists carry no titles, authors or
links beyond what the abstract says, so:

* venue and year come from the header;
* the display title is derived from the abstract (:func:`recommender.text.derive_title`) and
  the paper is marked ``title_derived``;
* a code link in the abstract (GitHub, GitLab, ...) becomes the paper's ``url``;
* the same abstract twice (on overlapping pages) is one paper.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

from connectors._io import read_text
from recommender.paper import Paper, deduplicate
from recommender.text import abstract_fingerprint, derive_title

log = logging.getLogger("litrank")

_PARAGRAPH_SPLIT_RE = re.compile(r"\n\s*\n")
_YEAR_RE = re.compile(r"(?<!\d)(19[5-9]\d|20\d\d)(?!\d)")
# A venue is the acronym-like word right before the year: ICML, NeurIPS, ICLR, CVPR, ACL...
_VENUE_BEFORE_YEAR_RE = re.compile(r"([A-Z][A-Za-z\-&]*[A-Z][A-Za-z\-&]*|[A-Z][a-z]+)\W{0,2}\s*(?=(?:19|20)\d\d)")
_MARKDOWN_LINK_RE = re.compile(r"\[([^\]]*)\]\((https?://[^)\s]+)\)")
_URL_RE = re.compile(r"https?://[^\s<>\"')\]]+")
_CODE_HOSTS = ("github.com", "gitlab.com", "huggingface.co", "bitbucket.org", "codeberg.org")
_MARKDOWN_EMPHASIS_RE = re.compile(r"(\*{1,3}|_{2})(?=\S)(.+?)(?<=\S)\1")
# A header is one short line without the full stop of a sentence.
MAX_HEADER_LENGTH = 120


def parse_header(line: str) -> tuple[str, int | None]:
    """Venue and year named by a header line: "ICML 2026 Papers" -> ("ICML", 2026)."""
    year_match = _YEAR_RE.search(line)
    year = int(year_match.group(1)) if year_match else None
    venue_match = _VENUE_BEFORE_YEAR_RE.search(line)
    if venue_match:
        venue = venue_match.group(1)
    else:
        venue = _YEAR_RE.sub("", line).strip(" -–:|")
    return venue, year


def _is_header(paragraph: str) -> bool:
    return "\n" not in paragraph.strip() and len(paragraph) <= MAX_HEADER_LENGTH and not paragraph.rstrip().endswith(".")


def _clean(paragraph: str) -> tuple[str, str]:
    """The readable abstract and the code link it mentions ('' if none)."""
    text = " ".join(paragraph.split())
    # "[https://github.com/x](https://github.com/x)" and "[code](https://...)": keep the address.
    text = _MARKDOWN_LINK_RE.sub(lambda m: m.group(2) if m.group(1).startswith("http") else f"{m.group(1)} ({m.group(2)})", text)
    text = _MARKDOWN_EMPHASIS_RE.sub(r"\2", text)
    from connectors.bibtex.latex import latex_to_text  # (imports bibtexparser: only when read)

    text = latex_to_text(text)
    url = ""
    for candidate in _URL_RE.findall(text):
        candidate = candidate.rstrip(".,;:")
        if any(host in candidate.lower() for host in _CODE_HOSTS):
            url = candidate
            break
    return text, url


def loads(text: str, source: str = "<string>") -> list[Paper]:
    """Parse an abstract list; ``source`` names it in messages and records."""
    paragraphs = [p.strip() for p in _PARAGRAPH_SPLIT_RE.split(text.replace("\r\n", "\n")) if p.strip()]
    venue, year = "", None
    if paragraphs and _is_header(paragraphs[0]):
        venue, year = parse_header(paragraphs.pop(0))
    prefix = re.sub(r"[^a-z0-9]+", "", venue.lower()) + (str(year) if year else "") or "paper"
    papers = []
    for paragraph in paragraphs:
        abstract, url = _clean(paragraph)
        papers.append(Paper(
            id=f"{prefix}-{abstract_fingerprint(abstract)[:10]}",
            title=derive_title(abstract),
            abstract=abstract,
            year=year,
            venue=venue,
            url=url,
            source=source,
            title_derived=True,
        ))
    # Identical paragraphs share an id (it is the abstract's fingerprint); other repeats,
    # e.g. the same abstract with different spacing, fall to the identity rule.
    unique = list(deduplicate({paper.id: paper for paper in reversed(papers)}.values()))[::-1]
    if len(unique) < len(papers):
        log.info("%s: %d repeated abstracts kept once", source, len(papers) - len(unique))
    return unique


def load(path: Path) -> list[Paper]:
    return loads(read_text(path), str(path))
