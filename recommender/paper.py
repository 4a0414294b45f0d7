"""The record every connector produces and the identity rule every component shares."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from recommender.text import abstract_fingerprint, normalize_doi, normalize_title, surname

MIN_ABSTRACT_WORDS_FOR_IDENTITY = 20
# Changes whenever Paper.identity_keys changes: keys stored with an older rule are made again.
IDENTITY_RULE = 1


@dataclass
class Paper:
    """One bibliographic record, whatever its source.

    Attributes
    ----------
    id : str
        The source's own identifier (BibTeX key, Zotero item key, dataset id) or, when the
        source has none, one derived from the paper's identity. Unique within one load.
    title, abstract : str
        Plain Unicode text (connectors convert LaTeX markup).
    authors : list of str
        Display names in order, "First Last" form where known.
    year : int or None
    venue : str
        Conference or journal name (e.g. ``"ICML"``).
    doi, arxiv_id, url : str
        Normalised DOI (lower case, no resolver prefix), arXiv id without version, a link.
    keywords : list of str
        Keywords or tags.
    date_added : str or None
        ISO 8601 timestamp at which the paper entered a library, where the source records it.
    source : str
        Where the record came from (a path or a connector URI), for messages.
    title_derived : bool
        True when the source had no title and ``title`` was derived from the abstract.
    entry_type : str
        The source's item type (``inproceedings``, ``article``, ``conferencePaper``...), or ''.
    fields : dict of str to str
        Further bibliographic fields as the source gave them (volume, pages, publisher...),
        kept so that an export loses nothing.
    """

    id: str
    title: str = ""
    abstract: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str = ""
    doi: str = ""
    arxiv_id: str = ""
    url: str = ""
    keywords: list[str] = field(default_factory=list)
    date_added: str | None = None
    source: str = ""
    title_derived: bool = False
    entry_type: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.doi = normalize_doi(self.doi)

    @property
    def text(self) -> str:
        """Title and abstract joined: the text the ranking model reads.

        A derived title repeats words of the abstract, so it adds nothing and is left out.
        """
        if self.title_derived:
            return self.abstract
        return f"{self.title}. {self.abstract}" if self.abstract else self.title

    @property
    def first_author_surname(self) -> str:
        return surname(self.authors[0]) if self.authors else ""

    def identity_keys(self) -> list[str]:
        """All identity keys of this paper, strongest first.

        The rule: DOI, else arXiv id, else normalised title (+ first author surname when
        known), else a fingerprint of the normalised abstract. Every applicable key is
        returned, so that a record with a DOI still matches one that only has the title,
        and an untitled abstract matches the same abstract published with its title.
        A derived title is not an identity: such papers are identified by their abstract.
        """
        # Made once and kept while what they are made of stays the same: one ranking looks a
        # paper up three or four times (loading, merging sources, the library, the collection),
        # and the normalised title and abstract fingerprint were 10% of a 30,000-paper run.
        made_of = (self.doi, self.arxiv_id, self.title, self.title_derived,
                   self.authors[0] if self.authors else "", self.abstract)
        kept = self.__dict__.get("_identity_keys")
        if kept is not None and kept[0] == made_of:
            return list(kept[1])
        keys = []
        if self.doi:
            keys.append(f"doi:{self.doi}")
        if self.arxiv_id:
            keys.append(f"arxiv:{self.arxiv_id.lower()}")
        title = "" if self.title_derived else normalize_title(self.title)
        if title:
            keys.append(f"title:{title}|{self.first_author_surname}")
        # Short abstracts ("No abstract available.") are placeholders, not identities.
        if len(self.abstract.split(maxsplit=MIN_ABSTRACT_WORDS_FOR_IDENTITY)) >= MIN_ABSTRACT_WORDS_FOR_IDENTITY:
            keys.append(f"abstract:{abstract_fingerprint(self.abstract)}")
        self.__dict__["_identity_keys"] = (made_of, tuple(keys))  # not a field: equality and copies ignore it
        return keys

    @property
    def identity(self) -> str:
        """The paper's strongest identity key (see :meth:`identity_keys`)."""
        keys = self.identity_keys()
        return keys[0] if keys else f"id:{self.id}"


# Why two records were taken for one paper, by the kind of identity key they share.
MATCH_REASONS = {"doi": "same DOI", "arxiv": "same arXiv id", "title": "same title and first author",
                 "abstract": "same abstract, no title"}


class IdentityIndex:
    """Answers "is this paper already in that set?" under the shared identity rule.

    Two papers are the same when they share a DOI, an arXiv id, or a normalised title whose
    first-author surnames agree (or one of them lists no authors). An abstract identifies only
    a paper without a title of its own: an untitled abstract matches the same abstract with
    its title, but two titled papers that share an abstract (book chapters carrying the book's
    blurb, papers under one project description) stay two. Looking a paper up is O(number of
    its keys).
    """

    def __init__(self, papers: Iterable[Paper] = ()) -> None:
        self._by_key: dict[str, Paper] = {}
        # normalised title -> {first author surname ('' when unknown): paper}
        self._by_title: dict[str, dict[str, Paper]] = {}
        # abstract key -> the first paper with it, among untitled and among titled papers
        self._untitled: dict[str, Paper] = {}
        self._titled: dict[str, Paper] = {}
        for paper in papers:
            self.add(paper)

    def add(self, paper: Paper, keys: list[str] | None = None) -> None:
        """Index ``paper`` (``keys``: its :meth:`Paper.identity_keys`, when known already)."""
        keys = paper.identity_keys() if keys is None else keys
        titled = any(key.startswith("title:") for key in keys)
        for key in keys:
            if key.startswith("title:"):
                title, _, author = key[len("title:"):].partition("|")
                self._by_title.setdefault(title, {}).setdefault(author, paper)
            elif key.startswith("abstract:"):
                (self._titled if titled else self._untitled).setdefault(key, paper)
            else:
                self._by_key.setdefault(key, paper)

    def match(self, paper: Paper, keys: list[str] | None = None) -> tuple[Paper, str] | None:
        """``(indexed paper, reason)`` for the indexed paper that ``paper`` is the same as, or
        None; the reason is a key of :data:`MATCH_REASONS`. ``keys``: the paper's
        :meth:`Paper.identity_keys` when they are known already."""
        keys = paper.identity_keys() if keys is None else keys
        titled = any(key.startswith("title:") for key in keys)
        for key in keys:
            if key.startswith("title:"):
                title, _, author = key[len("title:"):].partition("|")
                by_author = self._by_title.get(title)
                if not by_author:
                    continue
                if author in by_author:
                    return by_author[author], "title"
                if not author:
                    return next(iter(by_author.values())), "title"
                if "" in by_author:
                    return by_author[""], "title"
            elif key.startswith("abstract:"):
                found = self._untitled.get(key) or (None if titled else self._titled.get(key))
                if found is not None:
                    return found, "abstract"
            elif key in self._by_key:
                return self._by_key[key], key.partition(":")[0]
        return None

    def find(self, paper: Paper, keys: list[str] | None = None) -> Paper | None:
        """The indexed paper that ``paper`` is the same as, or None (see :meth:`match`)."""
        found = self.match(paper, keys)
        return found[0] if found is not None else None

    def __contains__(self, paper: object) -> bool:
        return isinstance(paper, Paper) and self.find(paper) is not None


@dataclass(frozen=True)
class Merge:
    """A record taken for a paper already seen: ``dropped`` is the same paper as ``kept``."""

    dropped: Paper
    kept: Paper
    reason: str  # a key of MATCH_REASONS


def deduplicate(papers: Iterable[Paper], merges: list[Merge] | None = None) -> Iterator[Paper]:
    """Yield each distinct paper once (the first occurrence wins), by the identity rule; each
    record left out is appended to ``merges`` (when given), with why."""
    seen = IdentityIndex()
    for paper in papers:
        keys = paper.identity_keys()  # once: looking up and adding read the same keys
        found = seen.match(paper, keys)
        if found is not None:
            if merges is not None:
                merges.append(Merge(paper, found[0], found[1]))
            continue
        seen.add(paper, keys)
        yield paper


def describe_merges(merges: Iterable[Merge]) -> str:
    """One line: "8 duplicates merged (same DOI: 5, same title and first author: 3)"."""
    merges = list(merges)
    counts: dict[str, int] = {}
    for merge in merges:
        counts[merge.reason] = counts.get(merge.reason, 0) + 1
    why = ", ".join(f"{MATCH_REASONS[reason]}: {n}" for reason, n in sorted(counts.items(), key=lambda i: -i[1]))
    return f"{len(merges)} duplicate{'' if len(merges) == 1 else 's'} merged ({why})"


def describe_merge(merge: Merge) -> str:
    """One merge, for ``-v``: which record was taken for which, and why."""
    def name(paper: Paper) -> str:
        return f"{paper.id!r} ({paper.title[:60] or 'untitled'})"

    return f"{name(merge.dropped)} is {name(merge.kept)}: {MATCH_REASONS[merge.reason]}"
