"""Many libraries at once, for ``litrank affinity``: one profile per file, folder or Zotero collection.

A profile is the library of one person (a reviewer, a lab member). Sources:

* a **directory**: each supported file directly in it (``.bib``, ``.jsonl``, ``.csv``, ``.txt``...,
  optionally ``.gz``) is one profile whose id is the file name without its extensions
  (``~Ada_Lovelace1.jsonl`` -> ``~Ada_Lovelace1``, as openreview-expertise names its archives);
  each sub-directory is one profile too (every file below it, id = the folder's name);
* a **Zotero library** (``zotero:group/ID``, ``zotero:local?library=group:NAME``, any Zotero URI):
  one profile per collection, the way a lab shares one group library with a collection per
  member. Without ``?collection=`` the top-level collections are the profiles; with
  ``?collection=Members`` the sub-collections of Members are. A profile holds the items of its
  collection and of all that collection's sub-collections; items filed nowhere are left out.

Profiles are returned in id order; an empty profile or two profiles with one id is an error,
so that no reviewer silently gets no scores.
"""
from __future__ import annotations

import logging
from pathlib import Path

from connectors.errors import SourceError, UnsupportedFormatError
from recommender.paper import Paper, deduplicate

log = logging.getLogger("litrank")


def profile_id(path: Path) -> str:
    """The profile id of a file: its name without the format's extensions (``a.jsonl.gz`` -> ``a``)."""
    name = path.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return stem


def load_profiles(source: str | Path, format: str | None = None) -> dict[str, list[Paper]]:
    """The profiles of ``source``: a directory of libraries or a Zotero URI (see the module doc)."""
    if isinstance(source, str) and source.startswith("zotero:"):
        return _zotero_profiles(source)
    directory = Path(source).expanduser()
    if not directory.is_dir():
        raise SourceError(f"{source}: --profiles takes a directory holding one library per profile "
                          "(e.g. alice.bib, bob.jsonl) or a Zotero library (zotero:group/ID, one collection "
                          "per member)")
    return _directory_profiles(directory, format)


def _directory_profiles(directory: Path, format: str | None) -> dict[str, list[Paper]]:
    import connectors

    members: dict[str, Path] = {}
    for path in sorted(directory.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_file() and format is None:
            try:
                connectors.detect_format(path)
            except UnsupportedFormatError:
                log.debug("%s: skipped (not a supported format)", path)
                continue
        identifier = path.name if path.is_dir() else profile_id(path)
        if identifier in members:
            raise SourceError(f"{directory}: two profiles are named {identifier!r} ({members[identifier].name} and "
                              f"{path.name}); rename one")
        members[identifier] = path
    if not members:
        raise SourceError(f"{directory}: no profiles here: put one library file per profile in it "
                          "(.bib, .jsonl, .json, .csv, .txt, optionally .gz) or one folder per profile")
    return {identifier: _non_empty(identifier, connectors.load(path, format), path)
            for identifier, path in sorted(members.items())}


def _non_empty(identifier: str, papers: list[Paper], where) -> list[Paper]:
    papers = [paper for paper in deduplicate(papers) if paper.text.strip()]
    if not papers:
        raise SourceError(f"{where}: profile {identifier!r} has no paper with a title or abstract")
    return papers


def _collection_paths(paper: Paper) -> list[str]:
    return [line for line in paper.fields.get("collections", "").split("\n") if line]


def _zotero_profiles(uri: str) -> dict[str, list[Paper]]:
    """One profile per collection under the URI's ``?collection=`` (else per top-level collection)."""
    from connectors import zotero
    from connectors.zotero.items import query_parameters, select_collections

    target, _, query = uri.partition("?")
    wanted = [value for name, value in query_parameters(query) if name == "collection"]
    others = [f"{name}={value}" for name, value in query_parameters(query) if name != "collection"]
    library_uri = target + (f"?{'&'.join(others)}" if others else "")
    papers = zotero.load(library_uri)
    known = {prefix for paper in papers for path in _collection_paths(paper)
             for prefix in _prefixes(path)}
    root = ""
    if wanted:
        selected = select_collections({path: path for path in known}, wanted[-1], uri)
        root = min(selected, key=len)
    profiles: dict[str, list[Paper]] = {}
    for paper in papers:
        for name in sorted({_member(path, root) for path in _collection_paths(paper)} - {None}):
            profiles.setdefault(name, []).append(paper)
    if not profiles:
        where = f"collection {root!r}" if root else "the library"
        raise SourceError(f"{uri}: no profiles: {where} has no sub-collections holding papers (a profile is one "
                          "collection per member, e.g. Members/Ada, Members/Grace)")
    filed = sum(1 for paper in papers if any(_member(path, root) for path in _collection_paths(paper)))
    if filed < len(papers):
        log.info("%s: %d items are in no profile's collection and were left out", uri, len(papers) - filed)
    return {name: _non_empty(name, profile, f"{uri} (collection {name})") for name, profile in sorted(profiles.items())}


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]


def _member(path: str, root: str) -> str | None:
    """The profile (the collection right under ``root``) that ``path`` lies in, if any."""
    if root:
        if not path.startswith(root + "/"):
            return None
        path = path[len(root) + 1:]
    return path.split("/", 1)[0] or None
