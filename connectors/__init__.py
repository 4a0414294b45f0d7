"""Connectors: convert between the outside world and :class:`recommender.Paper` records.

One module per format, each with ``load(path) -> list[Paper]`` and, where the format can be
written, ``dumps(papers) -> str`` / ``dump(papers, path)``. This package picks the module from
the file name (``.bib``, ``.txt``, ``.jsonl``, ``.json``, ``.csv``, each optionally ``.gz``) or
from an explicit ``format``, and loads whole directories.

Rooms: :mod:`connectors.bibtex`, :mod:`connectors.files` (JSONL/JSON, CSV, abstract lists,
CSFCube, ``.litrank`` indexes, score files, settings, feedback store), :mod:`connectors.online`
(arXiv, OpenReview, OpenAlex, Semantic Scholar), :mod:`connectors.zotero`; the HTML report writer
sits here. Connectors import only recommender's records layer (``Paper``, text, feedback
vocabulary, runtime), never its models or the CLI.

Problems that do not stop a load (a broken BibTeX entry, a duplicate key, a legacy encoding)
are logged as warnings on the ``"litrank"`` logger; the CLI prints them on stderr.
"""
from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Iterable, Sequence

from connectors._io import atomic_write_text, cycle_collection_paused, is_stdout
from connectors.errors import NOTICE, SourceError, UnsupportedFormatError
from recommender.paper import Paper, deduplicate, describe_merge, describe_merges
from recommender.runtime import user_cache_root as cache_root

__all__ = [
    "FORMATS",
    "SourceError",
    "UnsupportedFormatError",
    "cache_root",
    "detect_format",
    "dump",
    "deduplicated",
    "dumps",
    "is_stdout",
    "load",
    "load_many",
    "write_text",
]

log = logging.getLogger("litrank")

# format name -> (module, file name endings it is detected from). Modules are imported when a
# format is first read or written: bibtexparser and pyparsing take 50 ms to import, which a run
# reading JSONL (or a collection index) need not wait for.
FORMATS = {
    "bibtex": ("connectors.bibtex", (".bib", ".bibtex", ".biblatex")),
    "text": ("connectors.files.abstract_list", (".txt",)),
    "jsonl": ("connectors.files.json_records", (".jsonl", ".ndjson")),
    "json": ("connectors.files.json_records", (".json",)),
    "csv": ("connectors.files.csv_records", (".csv", ".tsv")),
}


def _supported() -> str:
    endings = ", ".join(end for _, ends in FORMATS.values() for end in ends)
    return f"supported formats: {', '.join(FORMATS)} ({endings}, optionally .gz, or a directory)"


def detect_format(path: str | Path) -> str:
    """The format name for a file name, from its extension (``.gz`` is looked through)."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for format_name, (_, endings) in FORMATS.items():
        if name.endswith(endings):
            return format_name
    raise UnsupportedFormatError(f"{path}: unknown file format; {_supported()}; or name the format, e.g. "
                                 f"--library-format bibtex")


def _module(format_name: str):
    try:
        return importlib.import_module(FORMATS[format_name][0])
    except KeyError:
        raise UnsupportedFormatError(f"unknown format {format_name!r}; {_supported()}") from None


def load(source: str | Path, format: str | None = None, processes: int = 1) -> list[Paper]:
    """Load the papers of one source: a file or a directory.

    Parameters
    ----------
    source : str or Path
        A file in a supported format, or a directory: every supported file below it is
        loaded (hidden files skipped, in name order) and papers seen twice are kept once.
    format : str, optional
        One of :data:`FORMATS`; overrides detection from the extension.
    processes : int, default=1
        A large BibTeX file is parsed in this many processes at once (see
        :func:`connectors.bibtex.load`); other formats read in one.

    Raises
    ------
    SourceError
        When the source is missing or unreadable, or a file is malformed as a whole.
    UnsupportedFormatError
        When the format is unknown.
    """
    if isinstance(source, str) and source.partition(":")[0] in _ONLINE_SCHEMES:
        return _load(source, format, processes)  # (a long wait on the network: the collector runs)
    with cycle_collection_paused():
        return _load(source, format, processes)


# Sources read over the network: the collector is not paused for them.
_ONLINE_SCHEMES = ("arxiv", "openalex", "openreview", "zotero")


def _load(source: str | Path, format: str | None, processes: int) -> list[Paper]:
    if isinstance(source, str) and source.startswith("arxiv:"):
        from connectors.online import arxiv_source  # the arXiv API: arxiv:cs.LG, arxiv:search?query=..., arxiv:ID,ID

        return arxiv_source.load(source)
    if isinstance(source, str) and source.startswith("openalex:"):
        from connectors.online import openalex_source  # OpenAlex: openalex:source/S...?year=YYYY, openalex:doi/...

        return openalex_source.load(source)
    if isinstance(source, str) and source.startswith("openreview:"):
        from connectors.online import openreview_source  # OpenReview API v2: openreview:ICLR.cc/2026/Conference

        return openreview_source.load(source)
    if isinstance(source, str) and source.startswith("zotero:"):
        from connectors import (
            zotero,  # the Zotero readers: zotero:local, zotero:user/ID, zotero:group/ID, zotero:local-api
        )

        return zotero.load(source)
    if isinstance(source, str) and "?" in source and source.partition("?")[0].lower().endswith(".sqlite"):
        from connectors.zotero import sqlite as zotero_sqlite  # zotero.sqlite?collection=ML, as zotero:local takes it

        return zotero_sqlite.load_uri(source)
    path = Path(source).expanduser()
    if path.suffix.lower() == ".litrank" and format is None:
        from connectors.files import litrank_index  # a collection index (`litrank index`): its papers

        return litrank_index.read_papers(path)
    if path.suffix.lower() == ".sqlite" and format is None:
        from connectors.zotero import sqlite as zotero_sqlite

        return zotero_sqlite.load(path)
    if path.is_dir():
        return _load_directory(path, format, processes)
    if not path.exists():
        raise SourceError(f"{source}: no such file or directory")
    format = format or detect_format(path)
    module = _module(format)
    return module.load(path, processes) if format == "bibtex" else module.load(path)


def _load_directory(directory: Path, format: str | None, processes: int) -> list[Paper]:
    files = []
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        if format is None:
            try:
                detect_format(path)
            except UnsupportedFormatError:
                log.debug("%s: skipped (not a supported format)", path)
                continue
        files.append(path)
    if not files:
        raise SourceError(f"{directory}: no supported files in this directory; {_supported()}")
    papers: list[Paper] = []
    for path in files:
        papers.extend(load(path, format, processes))
    return deduplicated(papers, str(directory))


def deduplicated(papers: Iterable[Paper], where: str) -> list[Paper]:
    """Each distinct paper of ``papers`` once (first occurrence wins, by the identity rule:
    DOI, arXiv id, or title and first author; never a shared abstract alone), saying on the
    ``litrank`` logger how many records were merged and why (at :data:`~connectors.errors.NOTICE`),
    and which (info: ``-v``)."""
    merges: list = []
    with cycle_collection_paused():  # every paper's identity keys: many new objects, no cycles
        unique = list(deduplicate(papers, merges))
    if merges:
        log.log(NOTICE, "%s: %s (-v lists them).", where, describe_merges(merges))
        for merge in merges:
            log.info("  %s", describe_merge(merge))
    return unique


def load_many(sources: Iterable[str | Path], format: str | None = None, processes: int = 1) -> list[Paper]:
    """Load several sources (see :func:`load`) and keep each distinct paper once (first
    occurrence wins)."""
    sources = list(sources)
    papers: list[Paper] = []
    for source in sources:
        papers.extend(load(source, format, processes))
    return deduplicated(papers, ", ".join(map(str, sources)))


def dumps(papers: Sequence[Paper], format: str) -> str:
    """Serialise papers in a writable format (``bibtex``, ``jsonl``, ``json``, ``csv``)."""
    module = _module(format)
    if not hasattr(module, "dumps"):
        raise UnsupportedFormatError(f"format {format!r} can be read but not written")
    return module.dumps(papers, format=format) if format in ("jsonl", "json") else module.dumps(papers)


def dump(papers: Sequence[Paper], target: str | Path, format: str | None = None) -> None:
    """Write papers to ``target`` atomically, in ``format`` or the one its extension names."""
    target = Path(target).expanduser()
    module = _module(format or detect_format(target))
    if not hasattr(module, "dump"):
        raise UnsupportedFormatError(f"format {format!r} can be read but not written")
    module.dump(papers, target)


def write_text(target: str | Path, text: str) -> None:
    """Write text to a file atomically (gzip-compressed when the name ends in ``.gz``); to a pipe
    or a device directly, to standard output for ``-`` or ``/dev/stdout``."""
    atomic_write_text(target if is_stdout(target) else Path(target).expanduser(), text)
