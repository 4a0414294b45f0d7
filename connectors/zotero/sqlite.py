"""Zotero's local database (``zotero.sqlite``) as a library: ``zotero:local[?collection=Reading/ML]``.

Each regular item of the user library (My Library) becomes the ``data`` dictionary the Zotero
Web API returns for it (type-specific field names, creators, tags, collection keys, ISO dates)
and then a Paper through :func:`connectors.zotero.items.paper_from_item`, so this reader and the
Web API reader yield identical records. Attachments, notes, annotations and the trash are
skipped. Group libraries and feeds, which Zotero keeps in the same file, are not read here
(use ``zotero:group/<id>``, the Web API).

Nothing is ever written, in the database or beside it. The file is opened with SQLite's
``mode=ro``; a running Zotero holds an exclusive lock, and then the database is read in place
with ``immutable=1`` when nothing is pending, else from a temporary copy with its ``-wal`` /
``-journal`` (see :mod:`connectors.zotero.sqlite_read`). The mode used is logged at INFO level on the
``"litrank"`` logger.

Schema: Zotero 5.0 and later, ``userdata`` 80 and newer (tested with 120, Zotero 6); older ones
raise SourceError; ones newer than :data:`KNOWN_SCHEMA` are read, and a failing query then
raises SourceError naming the schema version.

Where the database is (``zotero:local``): ``$LITRANK_ZOTERO_DIR`` (a data directory, or the
``zotero.sqlite`` file itself), else a custom data directory set in Zotero's preferences
(``extensions.zotero.dataDir`` with ``useDataDir`` in the ``prefs.js`` of a Zotero profile
under ``~/.zotero/zotero``, the Flatpak's ``~/.var/app/org.zotero.Zotero/.zotero/zotero``,
``~/Library/Application Support/Zotero/Profiles`` or ``%APPDATA%/Zotero/Zotero/Profiles``),
else ``~/Zotero/zotero.sqlite``, Zotero's default.
"""
from __future__ import annotations

import logging
import os
import re
import sqlite3
from pathlib import Path

from connectors.errors import SourceError
from connectors.zotero.items import (
    NON_PAPER_TYPES,
    is_litrank_item_data,
    join_collection_path,
    paper_from_item,
    query_parameters,
    select_collections,
)
from connectors.zotero.profiles import preferred_data_dirs
from connectors.zotero.sqlite_read import read_database
from recommender.paper import Paper

__all__ = ["DATA_DIR_ENV", "KNOWN_SCHEMA", "MIN_SCHEMA", "find_database", "load", "load_uri"]

log = logging.getLogger("litrank")

MIN_SCHEMA = 80  # userdata schema of Zotero 5.0 (libraries.type, creators without creatorData, tags without type)
KNOWN_SCHEMA = 121  # newest userdata schema whose migration steps were checked against the queries below
DATA_DIR_ENV = "LITRANK_ZOTERO_DIR"
READ_LOCKED_IN_PLACE = True  # False: copy a locked database even when nothing is pending (benchmark baseline)
_POINT_ELSEWHERE = (f"set {DATA_DIR_ENV} to your Zotero data directory (Zotero: Settings > Advanced > Files and "
                    "Folders > Data Directory Location) or pass the path of its zotero.sqlite")
_MULTIPART_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2} ")
_SQL_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})$")


# ---------------------------------------------------------------------------------------- finding


def load_uri(uri: str) -> list[Paper]:
    """The papers of ``zotero:local`` or ``zotero:local?collection=<path or name>``, or of a
    database file named by its path, with the same options (``zotero.sqlite?collection=ML``)."""
    target, _, query = uri.partition("?")
    if target != "zotero:local" and not target.lower().endswith(".sqlite"):
        raise SourceError(f"{uri}: not a local Zotero source (use zotero:local[?collection=Reading/ML])")
    collection = library = None
    for name, value in query_parameters(query):
        if name not in ("collection", "library") or not value.strip("/ "):
            raise SourceError(f"{uri}: unknown or empty parameter {name!r}; the options are collection=<path or "
                              "name> and library=group:<name or id>")
        if name == "collection":
            collection = value
        else:
            library = value.strip()
    database = find_database() if target == "zotero:local" else Path(target).expanduser()
    if target != "zotero:local" and not database.is_file():
        raise SourceError(f"{target}: no such file")
    return load(database, collection, source=uri, library=library)


def find_database() -> Path:
    """The ``zotero.sqlite`` that Zotero itself would open (see the module docstring for the order)."""
    configured = os.environ.get(DATA_DIR_ENV, "").strip()
    if configured:
        place = Path(configured).expanduser()
        database = place if place.suffix == ".sqlite" or place.is_file() else place / "zotero.sqlite"
        if not database.is_file():
            raise SourceError(f"{database}: no Zotero database there ({DATA_DIR_ENV}={configured}); {_POINT_ELSEWHERE}")
        return database
    tried = []
    for data_dir in [*preferred_data_dirs(), Path.home() / "Zotero"]:
        database = data_dir / "zotero.sqlite"
        if database.is_file():
            return database
        tried.append(str(database))
    raise SourceError(f"no Zotero database found (tried {', '.join(dict.fromkeys(tried))}); {_POINT_ELSEWHERE}")


# ---------------------------------------------------------------------------------------- reading


def load(path: str | Path, collection: str | None = None, *, source: str | None = None,
         library: str | None = None) -> list[Paper]:
    """The papers of a library in the Zotero database ``path``: the user's own, or with
    ``library="group:<name or id>"`` a group library the database holds.

    ``collection`` limits them to a collection, named by its path from the library root
    ("Reading/ML") or by its name when that is unique, and its subcollections.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise SourceError(f"{path}: no such Zotero database; {_POINT_ELSEWHERE}")

    def read(connection: sqlite3.Connection) -> list[Paper]:
        version = _schema_version(connection, path)
        try:
            return _read(connection, path, collection, source or str(path), library)
        except sqlite3.DatabaseError as error:
            newer = f", newer than the {KNOWN_SCHEMA} litrank knows" if version > KNOWN_SCHEMA else ""
            raise SourceError(f"{path}: cannot read this Zotero database "
                              f"(userdata schema {version}{newer}): {error}") from None

    try:
        return read_database(path, read, in_place=READ_LOCKED_IN_PLACE)
    except sqlite3.DatabaseError as error:
        raise SourceError(f"{path}: cannot read the Zotero database: {error}") from None
    except OSError as error:
        raise SourceError(f"{path}: cannot read the Zotero database: {error.strerror or error}") from None


def _schema_version(connection: sqlite3.Connection, path: Path) -> int:
    try:
        row = connection.execute("SELECT version FROM version WHERE schema='userdata'").fetchone()
    except sqlite3.OperationalError:
        row = None
    if row is None:
        raise SourceError(f"{path}: an SQLite database but not a Zotero one (no userdata schema version)")
    version = int(row[0])
    if version < MIN_SCHEMA:
        raise SourceError(f"{path}: Zotero database schema {version} is not supported (litrank reads userdata "
                          f"schema {MIN_SCHEMA} and newer, i.e. Zotero 5.0 or later); "
                          "open it once in a current Zotero to upgrade it")
    if version > KNOWN_SCHEMA:
        log.info("%s: userdata schema %d is newer than %d, the newest litrank knows; reading it anyway",
                 path, version, KNOWN_SCHEMA)
    return version


def _iso(value: str) -> str:
    """Zotero's SQL UTC timestamp ``2023-01-18 02:15:16`` in the API's form ``2023-01-18T02:15:16Z``."""
    match = _SQL_DATETIME_RE.match(str(value or ""))
    return f"{match.group(1)}T{match.group(2)}Z" if match else str(value or "")


def _library_id(connection: sqlite3.Connection, path: Path, library: str | None) -> int:
    """The libraryID of the user library, or of the group ``group:<name or id>`` names."""
    if library is None or library.lower() == "user":
        row = connection.execute("SELECT libraryID FROM libraries WHERE type='user' ORDER BY libraryID").fetchone()
        if row is None:
            raise SourceError(f"{path}: this Zotero database has no user library")
        return row[0]
    kind, _, wanted = library.partition(":")
    groups = connection.execute("SELECT groupID, libraryID, name FROM groups ORDER BY name").fetchall()
    listed = "; ".join(f"{name} ({group_id})" for group_id, _, name in groups) or "none"
    if kind.lower() != "group" or not wanted.strip():
        raise SourceError(f"{path}: library={library!r}: use library=group:<name or id> (its groups: {listed})")
    wanted = wanted.strip()
    matches = ([row for row in groups if str(row[0]) == wanted] or [row for row in groups if row[2] == wanted]
               or [row for row in groups if row[2].casefold() == wanted.casefold()])
    if len(matches) > 1:
        raise SourceError(f"{path}: several groups are named {wanted!r}; give its id ({listed})")
    if not matches:
        raise SourceError(f"{path}: no group {wanted!r} in this Zotero database (its groups: {listed})")
    return matches[0][1]


def _read(connection: sqlite3.Connection, path: Path, collection: str | None, source: str,
          library: str | None = None) -> list[Paper]:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    combined = {name: f"{name}Combined" if f"{name}Combined" in tables else name
                for name in ("itemTypes", "fields", "baseFieldMappings")}
    library_id = _library_id(connection, path, library)

    skipped = ", ".join("?" * len(NON_PAPER_TYPES))
    items = connection.execute(
        f"SELECT i.itemID, i.key, i.version, i.itemTypeID, t.typeName, i.dateAdded, i.dateModified "
        f"FROM items i JOIN {combined['itemTypes']} t USING (itemTypeID) "
        f"WHERE i.libraryID=? AND t.typeName NOT IN ({skipped}) ORDER BY i.dateAdded, i.itemID",
        (library_id, *sorted(NON_PAPER_TYPES))).fetchall()
    in_library = f"itemID IN (SELECT itemID FROM items WHERE libraryID={int(library_id)})"

    # Field values are stored under the type-specific field (proceedingsTitle, university...),
    # the name the Web API uses; a value stored under the base field is renamed the same way.
    field_names = dict(connection.execute(f"SELECT fieldID, fieldName FROM {combined['fields']}"))
    specific = {(type_id, base): field for type_id, base, field in
                connection.execute(f"SELECT itemTypeID, baseFieldID, fieldID FROM {combined['baseFieldMappings']}")}
    date_fields = {"date", "filingDate"} | {field_names.get(f) for (_, base), f in specific.items()
                                            if field_names.get(base) == "date"}
    type_of = {row[0]: row[3] for row in items}
    fields: dict[int, dict[str, str]] = {}
    for item_id, field_id, value in connection.execute(
            f"SELECT itemID, fieldID, value FROM itemData JOIN itemDataValues USING (valueID) WHERE {in_library}"):
        if item_id not in type_of or value is None:
            continue
        mapped = specific.get((type_of[item_id], field_id))
        name = field_names.get(mapped if mapped is not None else field_id)
        if name is None:
            continue
        value = str(value)
        if name in date_fields and _MULTIPART_DATE_RE.match(value):
            value = value[11:]  # "2019-12-00 12/2019": SQL form, then the date as entered
        elif name == "accessDate":
            value = _iso(value)
        item_fields = fields.setdefault(item_id, {})
        if mapped is None or name not in item_fields:  # the type's own field wins over its base field
            item_fields[name] = value

    creators: dict[int, list[dict]] = {}
    for item_id, first, last, field_mode, creator_type in connection.execute(
            "SELECT itemID, firstName, lastName, fieldMode, creatorType FROM itemCreators "
            "JOIN creators USING (creatorID) JOIN creatorTypes USING (creatorTypeID) "
            f"WHERE {in_library} ORDER BY itemID, orderIndex"):
        creator = ({"creatorType": creator_type, "name": last or ""} if field_mode == 1 else
                   {"creatorType": creator_type, "firstName": first or "", "lastName": last or ""})
        creators.setdefault(item_id, []).append(creator)

    tags: dict[int, list[dict]] = {}
    for item_id, name, tag_type in connection.execute(
            f"SELECT itemID, name, type FROM itemTags JOIN tags USING (tagID) WHERE {in_library}"):
        tags.setdefault(item_id, []).append({"tag": name, "type": tag_type} if tag_type else {"tag": name})

    relations: dict[int, dict[str, list[str]]] = {}
    for item_id, predicate, target in connection.execute(
            "SELECT itemID, predicate, object FROM itemRelations JOIN relationPredicates USING (predicateID) "
            f"WHERE {in_library} ORDER BY itemID, predicate, object"):
        relations.setdefault(item_id, {}).setdefault(predicate, []).append(target)

    published = _ids(connection, "publicationsItems", "itemID", tables)  # "My Publications"
    # The trash is left out, but for litrank's own items: moving a pick there is a "no".
    trashed = {item_id for (item_id,) in connection.execute("SELECT itemID FROM deletedItems")}

    paths, keys, parents = _collections(connection, library_id, tables)
    memberships: dict[int, list[int]] = {}
    for collection_id, item_id in connection.execute("SELECT collectionID, itemID FROM collectionItems"):
        if collection_id in paths:
            memberships.setdefault(item_id, []).append(collection_id)
    wanted = _select(paths, parents, collection, path) if collection is not None else None

    papers = []
    for item_id, key, version, _, type_name, added, modified in items:
        if item_id in trashed and not is_litrank_item_data({"tags": tags.get(item_id, [])}):
            continue
        member_of = sorted(memberships.get(item_id, []), key=paths.get)
        if wanted is not None and not wanted.intersection(member_of):
            continue
        data = {"key": key, "version": version, "itemType": type_name, **fields.get(item_id, {}),
                "creators": creators.get(item_id, []),
                "tags": sorted(tags.get(item_id, []), key=lambda tag: (tag["tag"].lower(), tag["tag"])),
                "collections": [keys[c] for c in member_of], "relations": {predicate: targets[0] if len(targets) == 1 else targets  # as the API
                              for predicate, targets in relations.get(item_id, {}).items()},
                "dateAdded": _iso(added), "dateModified": _iso(modified)}
        if item_id in published:
            data["inPublications"] = True
        if item_id in trashed:
            data["deleted"] = 1
        paper = paper_from_item(data, source, [paths[c] for c in member_of])
        if paper is not None:
            papers.append(paper)
    log.debug("%s: %d papers from %d regular items", path, len(papers), len(items))
    return papers


def _ids(connection: sqlite3.Connection, table: str, column: str, tables: set[str]) -> set[int]:
    return {row[0] for row in connection.execute(f"SELECT {column} FROM {table}")} if table in tables else set()


def _collections(connection: sqlite3.Connection, library_id: int, tables: set[str]) -> tuple[dict, dict, dict]:
    """The library's collections not in the trash: ``{id: "Parent/Child"}``, ``{id: key}``, ``{id: parent id}``."""
    rows = {cid: (name, parent, key) for cid, name, parent, key in connection.execute(
        "SELECT collectionID, collectionName, parentCollectionID, key FROM collections WHERE libraryID=?",
        (library_id,))}
    trashed = _ids(connection, "deletedCollections", "collectionID", tables)
    paths = {}
    for cid in rows:
        names, current, seen = [], cid, set()
        while current in rows and current not in seen and current not in trashed:
            seen.add(current)
            names.append(rows[current][0])
            current = rows[current][1]
        if current is None:  # reached the library root without meeting a trashed ancestor
            paths[cid] = join_collection_path(names[::-1])
    return paths, {cid: rows[cid][2] for cid in paths}, {cid: rows[cid][1] for cid in paths}


def _select(paths: dict[int, str], parents: dict[int, int | None], wanted: str, database: Path) -> set[int]:
    """The collection ``wanted`` names and all its subcollections (as every Zotero reader selects)."""
    return set(select_collections(paths, wanted, str(database)))
