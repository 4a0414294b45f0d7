"""The three Zotero readers yield the same Paper records for the same library.

The sample library the fake API serves (the recorded "Z public library" plus synthetic
attachments, notes and a trashed item) is also written into a ``zotero.sqlite`` built on
Zotero's own schema; the Web API, the local API and the database reader must then agree on
every record but its ``source``.
"""
from __future__ import annotations

import dataclasses
import logging

import pytest

from connectors import errors as connectors_errors
from connectors.zotero import sqlite as zotero_sqlite
from connectors.zotero import web as zotero_web
from connectors.zotero.items import join_collection_path, split_collection_path
from tests.fakes.zotero_fixtures import USER_LIBRARY, add_item, create_schema
from tests.fakes.zotero_server import FakeZoteroAPI, sample_library

KEY = "AgreeKey0123456789abcdef"
# Fields the item tables hold elsewhere (or that are the API's bookkeeping).
_NOT_ITEM_DATA = {"key", "version", "itemType", "creators", "tags", "collections", "relations", "dateAdded",
                  "dateModified", "deleted", "parentItem", "note", "contentType", "linkMode", "charset",
                  "filename", "md5", "mtime", "path"}


def _collection_paths(library) -> dict[str, str]:
    by_key = {key: obj["data"] for key, obj in library.collections.items()}

    def path(key: str) -> str:
        data = by_key[key]
        parent = data.get("parentCollection")
        name = join_collection_path([data["name"]])
        return f"{path(parent)}/{name}" if parent else name

    return {key: path(key) for key in by_key}


def _write_database(library, target):
    connection = create_schema(target)
    connection.execute("BEGIN")
    paths = _collection_paths(library)
    by_depth = sorted(paths, key=lambda key: len(split_collection_path(paths[key])))
    for number, key in enumerate(by_depth, start=1):
        data = library.collections[key]["data"]
        parent_id = None
        if data.get("parentCollection"):
            parent_id = connection.execute("SELECT collectionID FROM collections WHERE key=?",
                                           (data["parentCollection"],)).fetchone()[0]
        connection.execute("INSERT INTO collections (collectionID, collectionName, parentCollectionID, libraryID, key)"
                           " VALUES (?, ?, ?, ?, ?)", (number, data["name"], parent_id, USER_LIBRARY, key))
    ids = {}
    for key, obj in library.items.items():
        data = obj["data"]
        if data["itemType"] in ("attachment", "note"):
            continue  # the readers skip them; their tables are exercised in test_zotero_sqlite
        # A single-field name ("name") is stored with an empty first name: the same display name.
        creators = [(c.get("firstName", ""), c.get("lastName", c.get("name", "")), c["creatorType"])
                    for c in data.get("creators", [])]
        fields = {name: str(value) for name, value in data.items()
                  if name not in _NOT_ITEM_DATA and isinstance(value, (str, int)) and str(value) != ""}
        ids[key] = add_item(connection, key, data["itemType"], fields, creators=creators,
                            tags=[(t["tag"], t.get("type", 0)) for t in data.get("tags", [])],
                            collections=[paths[c] for c in data.get("collections", []) if c in paths],
                            added=data["dateAdded"].replace("T", " ").rstrip("Z"))
        if data.get("deleted"):
            connection.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (ids[key],))
    connection.commit()
    connection.close()
    return target


def _without_source(papers):
    return sorted((dataclasses.replace(paper, source="") for paper in papers), key=lambda paper: paper.id)


@pytest.fixture
def library_everywhere(tmp_path, monkeypatch):
    monkeypatch.setattr(logging.getLogger("litrank"), "propagate", True)
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))
    with FakeZoteroAPI(api_key=KEY, max_limit=7) as web, FakeZoteroAPI(local=True, max_limit=7) as local:
        web.add_library(sample_library("users", 475425))
        local.add_library(sample_library("users", 475425))
        monkeypatch.setenv(zotero_web.API_URL_ENV, web.url)
        monkeypatch.setenv(zotero_web.API_KEY_ENV, KEY)
        monkeypatch.setenv(zotero_web.LOCAL_API_ENV, local.url)
        database = _write_database(sample_library("users", 475425), tmp_path / "zotero.sqlite")
        yield database


def test_web_local_api_and_database_readers_agree(library_everywhere):
    from_web = _without_source(zotero_web.load("zotero:user/475425"))
    from_local_api = _without_source(zotero_web.load("zotero:local-api"))
    from_database = _without_source(zotero_sqlite.load(library_everywhere))
    # 20 recorded items + 5 synthetic objects, less a child attachment, a standalone PDF, a note
    # and a trashed article.
    assert len(from_web) == 21
    assert from_web == from_local_api
    assert [p.id for p in from_database] == [p.id for p in from_web]
    for database_paper, web_paper in zip(from_database, from_web):
        assert database_paper == web_paper, database_paper.id


def test_collection_filter_agrees(library_everywhere):
    uri = "?collection=Non-English items"
    web = _without_source(zotero_web.load("zotero:user/475425" + uri))
    database = _without_source(zotero_sqlite.load(library_everywhere, collection="Non-English items"))
    assert web and [p.id for p in web] == [p.id for p in database]
    assert "SFILM001" in {p.id for p in web}  # from the subcollection


# --- collection names as users write them, and litrank's picks in the trash ---------------------

ODD_PARENT, ODD_CHILD = "Theory & Methods", 'Café "Noir" – Ünïcode'


def _odd_library():
    """The sample library plus a collection whose name has "&", a subcollection with quotes and
    non-ASCII letters, an item in each, and one of litrank's picks in the trash."""
    library = sample_library("users", 475425)
    library.add("collections", {"key": "ODDCOL01", "version": 6, "name": ODD_PARENT, "parentCollection": False,
                                "relations": {}})
    library.add("collections", {"key": "ODDCOL02", "version": 6, "name": ODD_CHILD, "parentCollection": "ODDCOL01",
                                "relations": {}})
    for key, collection, title in (("ODDITEM1", "ODDCOL01", "Methods for Theories"),
                                   ("ODDITEM2", "ODDCOL02", "Quoted Noir Films")):
        library.add("items", {"key": key, "version": 7, "itemType": "journalArticle", "title": title,
                              "creators": [{"creatorType": "author", "firstName": "Odd", "lastName": "Name"}],
                              "date": "2020", "tags": [], "collections": [collection], "relations": {},
                              "dateAdded": "2012-01-01T10:00:00Z", "dateModified": "2012-01-01T10:00:00Z"})
    # "/" inside names: "I/O & Systems" (one collection), beside the path I -> O.
    for key, name, parent in (("SLASHCOL", "I/O & Systems", False), ("ICOLLECT", "I", False),
                              ("OCOLLECT", "O", "ICOLLECT"), ("BACKSLSH", "C:\\data\\raw", "SLASHCOL")):
        library.add("collections", {"key": key, "version": 6, "name": name, "parentCollection": parent,
                                    "relations": {}})
    for key, collection in (("SLASHIT1", "SLASHCOL"), ("SLASHIT2", "OCOLLECT"), ("SLASHIT3", "BACKSLSH")):
        library.add("items", {"key": key, "version": 7, "itemType": "journalArticle", "title": f"Item {key}",
                              "creators": [], "date": "2021", "tags": [], "collections": [collection],
                              "relations": {}, "dateAdded": "2012-01-01T10:00:00Z",
                              "dateModified": "2012-01-01T10:00:00Z"})
    library.add("items", {"key": "PICKTRSH", "version": 8, "itemType": "preprint", "deleted": 1,
                          "title": "A Pick Moved to the Trash", "creators": [{"creatorType": "author",
                                                                             "firstName": "Lit", "lastName": "Rank"}],
                          "date": "2026", "tags": [{"tag": "litrank"}], "collections": ["ODDCOL01"], "relations": {},
                          "dateAdded": "2026-11-01T10:00:00Z", "dateModified": "2026-11-02T10:00:00Z"})
    return library


@pytest.fixture
def odd_everywhere(tmp_path, monkeypatch):
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))
    with FakeZoteroAPI(api_key=KEY, max_limit=7) as web, FakeZoteroAPI(local=True, max_limit=7) as local:
        web.add_library(_odd_library())
        local.add_library(_odd_library())
        monkeypatch.setenv(zotero_web.API_URL_ENV, web.url)
        monkeypatch.setenv(zotero_web.API_KEY_ENV, KEY)
        monkeypatch.setenv(zotero_web.LOCAL_API_ENV, local.url)
        (tmp_path / "Zotero").mkdir()
        _write_database(_odd_library(), tmp_path / "Zotero" / "zotero.sqlite")
        monkeypatch.setenv(zotero_sqlite.DATA_DIR_ENV, str(tmp_path / "Zotero"))
        yield


def _ids_everywhere(query: str) -> list[list[str]]:
    """The ids each reader returns for the same query, through the same URIs users type."""
    return [sorted(p.id for p in loader(uri + query)) for loader, uri in
            ((zotero_web.load, "zotero:user/475425"), (zotero_web.load, "zotero:local-api"),
             (zotero_sqlite.load_uri, "zotero:local"))]


@pytest.mark.parametrize("query, expected", [
    (f"?collection={ODD_PARENT}", ["ODDITEM1", "ODDITEM2", "PICKTRSH"]),  # "&" in the name, as typed
    ("?collection=Theory%20%26%20Methods", ["ODDITEM1", "ODDITEM2", "PICKTRSH"]),  # percent-encoded
    (f"?collection={ODD_PARENT}/{ODD_CHILD}", ["ODDITEM2"]),  # the full path
    (f"?collection={ODD_CHILD.upper()}", ["ODDITEM2"]),  # a unique bare name, any case
    ("?collection=sherlock films", ["6MCAN2NC", "SFILM001"]),  # a bare subcollection name, in every reader now
    ("?collection=I\\/O %26 Systems", ["SLASHIT1", "SLASHIT3"]),  # "\/": a slash inside a name
    ("?collection=I/O & Systems", ["SLASHIT1", "SLASHIT3"]),  # no path I -> "O & Systems": the name as typed
    ("?collection=I/O", ["SLASHIT2"]),  # the path I -> O
    ("?collection=I\\/O & Systems/C:\\data\\raw", ["SLASHIT3"]),  # a path through it; other "\" are literal
])
def test_every_reader_selects_collections_the_same_way(odd_everywhere, query, expected):
    assert _ids_everywhere(query) == [expected] * 3


def test_every_reader_reads_litrank_picks_from_the_trash_and_only_those(odd_everywhere):
    from recommender.feedback import is_trashed

    for loader, uri in ((zotero_web.load, "zotero:user/475425"), (zotero_web.load, "zotero:local-api"),
                        (zotero_sqlite.load_uri, "zotero:local")):
        papers = {p.id: p for p in loader(uri)}
        assert "TRASH001" not in papers  # the user's own trashed article stays out
        assert is_trashed(papers["PICKTRSH"]) and not is_trashed(papers["ODDITEM1"])
    with pytest.raises(connectors_errors.SourceError, match="no collection 'Nowhere & Never'"):
        zotero_web.load("zotero:user/475425?collection=Nowhere & Never")


def test_the_local_api_reads_a_group_library(tmp_path, monkeypatch):
    """Zotero's local API serves group libraries at /api/groups/<id> (reads need no key)."""
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))
    with FakeZoteroAPI(local=True, max_limit=7) as local:
        local.add_library(sample_library("users", 475425))
        local.add_library(sample_library("groups", 4711))
        monkeypatch.setenv(zotero_web.LOCAL_API_ENV, local.url)
        group = zotero_web.load("zotero:local-api/groups/4711")
        assert len(group) == 21 and all(p.source == "zotero:local-api/groups/4711" for p in group)
        assert local.calls(r"/groups/4711/items/top") and not local.calls(r"/users/0/items/top")
        films = zotero_web.load("zotero:local-api/groups/4711?collection=sherlock films")
        assert {p.id for p in films} == {"6MCAN2NC", "SFILM001"}
