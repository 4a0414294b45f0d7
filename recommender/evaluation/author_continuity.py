"""Author-continuity benchmark: does litrank find an author's next papers from their past ones?

For a venue, some history years and a target year, a *qualifying author* has at least
``min_history`` papers in the history years and at least ``min_target`` in the target year.
Each qualifying author is one :class:`Task`:

* library    -- the author's history papers (what they "keep"),
* collection -- the target year's full list of papers,
* relevant   -- the ids of the author's own target-year papers.

Two tracks, because the author's own name would give the answer away:

``text``
    no author anywhere: every Paper has ``authors=[]``.
``authors``
    authors kept, except the task's own author, removed from every paper of the library and
    the collection (co-authors stay).

Author identity is the name string normalised by :func:`author_key`: accents folded (Unicode
NFKD, plus the Latin letters NFKD does not decompose, such as ``ł``, ``ø``, ``ß``), LaTeX
accent commands and equal-contribution stars dropped, lower case, and whitespace, dots,
hyphens and apostrophes collapsed away (``"Zhi-Hua Zhou"``, ``"Zhi-hua  Zhou*"`` and
``"Zhihua Zhou"`` are one author). Nothing beyond that: two different people with the same
name stay merged, one person under two unrelated spellings (a middle initial, a nickname)
stays split.

The conference files are read by the caller's ``read`` (``connectors.load``: this room does no
I/O of its own). Inspect a configuration with::

    python -m benchmarks.author_continuity --config icml2019 --track text
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import random
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from recommender.paper import IdentityIndex, Paper, deduplicate
from recommender.text import words

log = logging.getLogger("litrank")


# config name -> (venue string as the data spells it, history years, target year)
CONFIGS: dict[str, tuple[str, Sequence[int], int]] = {
    "icml2019": ("ICML", range(2013, 2019), 2019),
    "neurips2018": ("NeurIPS", range(2010, 2018), 2018),
    "iclr2018": ("ICLR", [2017], 2018),
}

TRACKS = ("text", "authors")

# File name prefixes per venue (the files are named <prefix><year>.jsonl.gz).
_FILE_PREFIXES = {"NeurIPS": ("nips", "neurips")}

# Author strings that name no person (ICLR 2018 lists withdrawn/anonymous submissions so).
PLACEHOLDER_AUTHORS = frozenset({"anonymous", "authors", "withdrawn"})

# Latin letters that NFKD leaves alone, folded like the accents NFKD does decompose.
_FOLD = str.maketrans({
    "ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D",
    "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ß": "ss", "ı": "i", "þ": "th", "Þ": "Th",
})


def author_words(name: str) -> list[str]:
    """The words of an author name: accent-folded, lower case, punctuation dropped.

    LaTeX accent commands (``Jos\\'{e}``) and stars (``Hieu Pham*``) fall away with the
    punctuation; dots, hyphens and apostrophes separate words.
    """
    return words(name.translate(_FOLD))


@functools.lru_cache(maxsize=None)
def author_key(name: str) -> str:
    """The identity of an author name: :func:`author_words` joined without separators.

    Joining without spaces makes ``"Tie-Yan Liu"``, ``"Tie Yan Liu"`` and ``"Tieyan Liu"``
    agree, as well as ``"S.V.N. Vishwanathan"`` and ``"S. V. N. Vishwanathan"``.
    Returns '' for a name with no letters.
    """
    return "".join(author_words(name))


@dataclass
class Task:
    """One author's benchmark case (see the module docstring)."""

    author: str
    venue: str
    target_year: int
    library: list[Paper]
    collection: list[Paper]
    relevant: frozenset[str]


@dataclass
class BuildStats:
    """What a build found and dropped, for the summary and for reports."""

    config: str
    track: str
    venue: str
    history_years: list[int]
    target_year: int
    history_papers: int = 0
    collection_size: int = 0
    qualifying: int = 0
    tasks: int = 0
    history_duplicates_dropped: int = 0  # same paper listed twice in the history years
    library_in_collection_dropped: int = 0  # history papers that are also target-year papers
    collection_duplicate_identities: int = 0  # kept (the collection is the full list)
    raw_spellings: int = 0  # distinct raw author strings of the history + target papers
    author_keys: int = 0  # distinct normalised authors among them
    collapsing_keys: int = 0  # normalised authors with more than one raw spelling
    spellings_in_collapsing_keys: int = 0
    collapse_examples: list[list[str]] = field(default_factory=list)
    load_seconds: float = 0.0
    build_seconds: float = 0.0


# ----------------------------------------------------------------------------- loading

_FILE_CACHE: dict[tuple[str, int, int], list[Paper]] = {}


Reader = Callable[[Path], Sequence[Paper]]


def _load_file(path: Path, read: Reader) -> list[Paper]:
    """``read(path)`` (``connectors.load``), cached in-process (keyed by path, size and mtime).

    The cached list is shared: callers must not modify it or its papers.
    """
    resolved = path.resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_CACHE:
        _FILE_CACHE[key] = list(read(resolved))
    return _FILE_CACHE[key]


def venue_file(conferences_dir: str | Path, venue: str, year: int) -> Path:
    """The file holding ``venue``'s papers of ``year`` (``icml2019.jsonl.gz``, ``nips2018...``)."""
    directory = Path(conferences_dir)
    prefixes = _FILE_PREFIXES.get(venue, (venue.lower(),))
    for prefix in prefixes:
        path = directory / f"{prefix}{year}.jsonl.gz"
        if path.exists():
            return path
    tried = ", ".join(f"{prefix}{year}.jsonl.gz" for prefix in prefixes)
    raise FileNotFoundError(f"{directory}: no file for {venue} {year} (looked for {tried})")


def load_venue(conferences_dir: str | Path, venue: str, years: Iterable[int], *, read: Reader) -> dict[int, list[Paper]]:
    """The papers of ``venue`` in each of ``years``, as ``{year: papers}`` in file order.

    Files are loaded with ``read`` (:func:`connectors.load`) and cached in-process; the returned lists
    are the cached ones, shared between calls (do not modify them). Papers whose venue or
    year disagrees with the file are left out with a warning (none do in the shared data).
    """
    result: dict[int, list[Paper]] = {}
    for year in years:
        path = venue_file(conferences_dir, venue, year)
        papers = _load_file(path, read)
        if any(p.venue != venue or p.year != year for p in papers):
            kept = [p for p in papers if p.venue == venue and p.year == year]
            log.warning("%s: %d papers are not %s %d; left out", path, len(papers) - len(kept), venue, year)
            papers = kept
        result[year] = papers
    return result


# ----------------------------------------------------------------------------- building


def _paper_author_keys(paper: Paper) -> set[str]:
    keys = {author_key(name) for name in paper.authors}
    keys.discard("")
    return keys - PLACEHOLDER_AUTHORS


def _without_author(paper: Paper, key: str) -> Paper:
    """A copy of ``paper`` whose author list lacks every spelling of ``key``."""
    return dataclasses.replace(paper, authors=[name for name in paper.authors if author_key(name) != key])


def _without_authors(paper: Paper) -> Paper:
    return dataclasses.replace(paper, authors=[])


@dataclass
class _Prepared:
    """The per-configuration work shared by every build of it (both tracks, any sample)."""

    history: list[Paper]
    collection: list[Paper]
    history_by_author: dict[str, list[Paper]]
    target_by_author: dict[str, list[Paper]]
    counts: dict[str, object]


_PREPARED_CACHE: dict[tuple, _Prepared] = {}


def _prepare(venue: str, history_years: list[int], target_year: int, loaded: dict[int, list[Paper]]) -> _Prepared:
    # The loaded lists are the file cache's own objects, so their ids identify the data.
    cache_key = (venue, tuple(history_years), target_year, tuple(id(papers) for papers in loaded.values()))
    if cache_key in _PREPARED_CACHE:
        return _PREPARED_CACHE[cache_key]
    counts: dict[str, object] = {}
    collection = loaded[target_year]
    counts["collection_duplicate_identities"] = len(collection) - len(list(deduplicate(collection)))

    # History: every distinct paper once, none that is also in the collection.
    history_all = [paper for year in history_years for paper in loaded[year]]
    history = list(deduplicate(history_all))
    counts["history_duplicates_dropped"] = len(history_all) - len(history)
    in_collection = IdentityIndex(collection)
    kept = [paper for paper in history if paper not in in_collection]
    counts["library_in_collection_dropped"] = len(history) - len(kept)
    history = kept

    # Author spellings: how many raw strings collapse under the normalisation.
    spellings: dict[str, set[str]] = defaultdict(set)
    for paper in (*history, *collection):
        for name in paper.authors:
            spellings[author_key(name)].add(name)
    spellings.pop("", None)
    collapsing = sorted((sorted(names) for names in spellings.values() if len(names) > 1), key=lambda v: v[0])
    counts["raw_spellings"] = sum(len(names) for names in spellings.values())
    counts["author_keys"] = len(spellings)
    counts["collapsing_keys"] = len(collapsing)
    counts["spellings_in_collapsing_keys"] = sum(len(names) for names in collapsing)
    counts["collapse_examples"] = collapsing[:10]

    # Papers per normalised author (a paper listing an author twice counts once).
    history_by_author: dict[str, list[Paper]] = defaultdict(list)
    for paper in history:
        for key in _paper_author_keys(paper):
            history_by_author[key].append(paper)
    target_by_author: dict[str, list[Paper]] = defaultdict(list)
    for paper in collection:
        for key in _paper_author_keys(paper):
            target_by_author[key].append(paper)
    prepared = _Prepared(history, collection, dict(history_by_author), dict(target_by_author), counts)
    _PREPARED_CACHE[cache_key] = prepared
    return prepared


def build_tasks_with_stats(
    conferences_dir: str | Path,
    config: str,
    track: str,
    min_history: int = 3,
    min_target: int = 1,
    max_tasks: int | None = None,
    seed: int = 0,
    *,
    read: Reader,
) -> tuple[list[Task], BuildStats]:
    """:func:`build_tasks`, also returning the :class:`BuildStats` of the build."""
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; choose from {', '.join(CONFIGS)}")
    if track not in TRACKS:
        raise ValueError(f"unknown track {track!r}; choose from {', '.join(TRACKS)}")
    if max_tasks is not None and max_tasks < 0:
        raise ValueError("max_tasks must be >= 0")
    venue, history_years, target_year = CONFIGS[config]
    history_years = list(history_years)
    stats = BuildStats(config, track, venue, history_years, target_year)

    started = time.perf_counter()
    loaded = load_venue(conferences_dir, venue, [*history_years, target_year], read=read)
    stats.load_seconds = time.perf_counter() - started

    started = time.perf_counter()
    prepared = _prepare(venue, history_years, target_year, loaded)
    for name, value in prepared.counts.items():
        setattr(stats, name, value)
    history, collection_original = prepared.history, prepared.collection
    history_by_author, target_by_author = prepared.history_by_author, prepared.target_by_author
    stats.history_papers = len(history)
    stats.collection_size = len(collection_original)

    qualifying = sorted(
        key
        for key, papers in history_by_author.items()
        if len(papers) >= min_history and len(target_by_author.get(key, ())) >= min_target
    )
    stats.qualifying = len(qualifying)
    if max_tasks is not None and max_tasks < len(qualifying):
        chosen = random.Random(seed).sample(range(len(qualifying)), max_tasks)
        qualifying = [qualifying[i] for i in sorted(chosen)]

    # Display name: the most frequent raw spelling (ties: the alphabetically first).
    def display_name(key: str) -> str:
        counts = Counter(
            name
            for paper in (*history_by_author[key], *target_by_author.get(key, ()))
            for name in paper.authors
            if author_key(name) == key
        )
        return min(counts, key=lambda name: (-counts[name], name))

    tasks: list[Task] = []
    if track == "text":
        # One author-free copy of every paper, shared by all tasks (the collection list too).
        stripped = {id(paper): _without_authors(paper) for paper in (*history, *collection_original)}
        collection = [stripped[id(paper)] for paper in collection_original]
        for key in qualifying:
            tasks.append(Task(
                author=display_name(key),
                venue=venue,
                target_year=target_year,
                library=[stripped[id(paper)] for paper in history_by_author[key]],
                collection=collection,
                relevant=frozenset(paper.id for paper in target_by_author.get(key, ())),
            ))
    else:
        for key in qualifying:
            own = {id(paper) for paper in target_by_author.get(key, ())}
            # Only the author's own papers are copied; every other paper object is shared.
            collection = [_without_author(paper, key) if id(paper) in own else paper for paper in collection_original]
            tasks.append(Task(
                author=display_name(key),
                venue=venue,
                target_year=target_year,
                library=[_without_author(paper, key) for paper in history_by_author[key]],
                collection=collection,
                relevant=frozenset(paper.id for paper in target_by_author.get(key, ())),
            ))
    stats.tasks = len(tasks)
    stats.build_seconds = time.perf_counter() - started
    return tasks, stats


def build_tasks(
    conferences_dir: str | Path,
    config: str,
    track: str,
    min_history: int = 3,
    min_target: int = 1,
    max_tasks: int | None = None,
    seed: int = 0,
    *,
    read: Reader,
) -> list[Task]:
    """The tasks of one configuration (see :data:`CONFIGS`) and track (``text``/``authors``).

    Tasks come sorted by normalised author name. ``max_tasks`` keeps a sample of that many
    qualifying authors, drawn with ``random.Random(seed)`` and kept in the same order. ``read``
    reads one conference file into papers (:func:`connectors.load`).

    In the ``text`` track every task shares one collection list; in the ``authors`` track each
    task has its own list, in which only the author's own papers are copies (with the author
    removed) and every other paper is the shared object. Papers are shared between tasks and
    with the in-process file cache: treat them as read-only.
    """
    tasks, _ = build_tasks_with_stats(conferences_dir, config, track, min_history, min_target, max_tasks, seed,
                                      read=read)
    return tasks


# ----------------------------------------------------------------------------- summary


def summarize(tasks: Sequence[Task], stats: BuildStats) -> str:
    lib = [len(task.library) for task in tasks]
    rel = [len(task.relevant) for task in tasks]
    years = f"{stats.history_years[0]}–{stats.history_years[-1]}" if len(stats.history_years) > 1 else str(stats.history_years[0])
    lines = [
        f"{stats.config} ({stats.venue} {years} -> {stats.target_year}), track {stats.track}",
        f"  qualifying authors:   {stats.qualifying}" + (f" ({stats.tasks} sampled)" if stats.tasks != stats.qualifying else ""),
    ]
    if tasks:
        lines += [
            f"  library size:         mean {statistics.mean(lib):.2f}, median {statistics.median(lib):g}, min {min(lib)}, max {max(lib)}",
            f"  relevant per task:    mean {statistics.mean(rel):.2f}, median {statistics.median(rel):g}, max {max(rel)}",
        ]
    lines += [
        f"  collection size:      {stats.collection_size} papers ({stats.collection_duplicate_identities} duplicate identities, kept)",
        f"  history papers:       {stats.history_papers} ({stats.history_duplicates_dropped} duplicates dropped, "
        f"{stats.library_in_collection_dropped} also in the collection dropped)",
        f"  author spellings:     {stats.raw_spellings} raw -> {stats.author_keys} authors "
        f"({stats.spellings_in_collapsing_keys} spellings collapse into {stats.collapsing_keys})",
        f"  load time:            {stats.load_seconds:.2f} s, build time {stats.build_seconds:.2f} s",
    ]
    return "\n".join(lines)
