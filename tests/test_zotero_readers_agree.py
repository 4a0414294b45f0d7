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

from connectors import zotero_sqlite, zotero_web
from tests.zotero_fixtures import SHARED_DB, USER_LIBRARY, add_item, create_schema
from tests.zotero_server import FakeZoteroAPI, sample_library

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
        return f"{path(parent)}/{data['name']}" if parent else data["name"]

    return {key: path(key) for key in by_key}


def _write_database(library, target):
    connection = create_schema(target, SHARED_DB)
    connection.execute("BEGIN")
    paths = _collection_paths(library)
    for number, (key, path) in enumerate(sorted(paths.items(), key=lambda kv: kv[1].count("/")), start=1):
        parent, _, name = path.rpartition("/")
        parent_id = None
        if parent:
            parent_id = connection.execute("SELECT collectionID FROM collections WHERE key=?",
                                           (next(k for k, p in paths.items() if p == parent),)).fetchone()[0]
        connection.execute("INSERT INTO collections (collectionID, collectionName, parentCollectionID, libraryID, key)"
                           " VALUES (?, ?, ?, ?, ?)", (number, name, parent_id, USER_LIBRARY, key))
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
    if not SHARED_DB.exists():
        pytest.skip("Zotero's schema comes from ../shared/data/zotero-sqlite/real-library-schema120.sqlite")
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
