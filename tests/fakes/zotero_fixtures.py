"""Build small ``zotero.sqlite`` libraries for tests, on Zotero's own schema.

The schema (every table, index and trigger) and the global mapping tables (item types,
fields, creator types, base-field mappings...) are copied from the real database in
``../shared/data/zotero-sqlite/``, which Zotero itself created, so that ids and constraints
are Zotero's. Items are then added the way Zotero stores them: values in ``itemDataValues``,
multipart dates (``"2020-00-00 2020"``), single-field creators with ``fieldMode`` 1, child
attachments, notes and annotations, the trash in ``deletedItems``. Nothing binary is committed:
the libraries are created in a test's ``tmp_path``.
"""
from __future__ import annotations

import contextlib
import gzip
import sqlite3
from pathlib import Path
from typing import Iterator

from connectors.zotero.items import split_collection_path
from tests.conftest import DATA, SHARED

SHARED_DB = (SHARED / "data" / "zotero-sqlite"
             / "real-library-schema120.sqlite")
# Zotero's schema 120 with its global rows and the user library, nothing else: what
# create_schema(target, SHARED_DB) makes, VACUUMed and gzipped, so that the Zotero fixtures need
# no ../shared (tests/zotero/test_zotero_sqlite.py checks it still equals the real database's).
EMPTY_SCHEMA = DATA / "zotero-sqlite" / "empty-schema120.sqlite.gz"
# Tables whose rows are Zotero's global data (the same in every database of this schema).
GLOBAL_TABLES = ("itemTypes", "itemTypesCombined", "fields", "fieldsCombined", "fieldFormats", "creatorTypes",
                 "baseFieldMappings", "baseFieldMappingsCombined", "itemTypeFields", "itemTypeFieldsCombined",
                 "itemTypeCreatorTypes", "charsets", "fileTypes", "fileTypeMimeTypes", "syncObjectTypes", "version")
USER_LIBRARY, GROUP_LIBRARY = 1, 2

# The fixture library: collection paths and the keys of the items tests look at.
COLLECTIONS = ["Reading", "Reading/ML", "Reading/ML/Diffusion", "Archive", "Archive/ML", "Old", "Old/Sub"]
TRASHED_COLLECTIONS = ["Old", "Old/Sub"]
DDPM, DEEP, MDLM, SDE, GPT4, TRASHED, CHAPTER, THESIS, GROUP_ITEM = (
    "DDPMHQ2X", "LECUN2NB", "MDLM7S4K", "SDE3VKXP", "GPT4TRQ8", "TRASHJ5W", "CHAPB6YZ", "THESK9RM", "GRPITM22")
WAL_ONLY, UNCOMMITTED = "FLOW2WAL", "UNCMT5X9"
REGULAR_USER_ITEMS = {DDPM, DEEP, MDLM, SDE, GPT4, CHAPTER, THESIS}


def create_schema(target: Path, shared: Path | None = None) -> sqlite3.Connection:
    """An empty Zotero database at ``target`` (schema and global rows of ``shared``, by default
    the committed :data:`EMPTY_SCHEMA`), opened."""
    if shared is None:
        target.write_bytes(gzip.decompress(EMPTY_SCHEMA.read_bytes()))
        return sqlite3.connect(target, isolation_level=None)
    source = sqlite3.connect(f"{shared.resolve().as_uri()}?mode=ro", uri=True)
    try:
        ddl = source.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END").fetchall()
        rows = {table: source.execute(f"SELECT * FROM {table}").fetchall() for table in GLOBAL_TABLES}
        user_library = source.execute("SELECT * FROM libraries WHERE type='user'").fetchone()
    finally:
        source.close()
    connection = sqlite3.connect(target, isolation_level=None)
    connection.execute("BEGIN")
    for (statement,) in ddl:
        connection.execute(statement)
    for table, values in rows.items():
        if values:
            marks = ", ".join("?" * len(values[0]))
            connection.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    connection.execute(f"INSERT INTO libraries VALUES ({', '.join('?' * len(user_library))})", user_library)
    connection.execute("COMMIT")
    return connection


def _id(connection: sqlite3.Connection, table: str, column: str, value) -> int:
    return connection.execute(f"SELECT rowid FROM {table} WHERE {column}=?", (value,)).fetchone()[0]


def add_item(connection: sqlite3.Connection, key: str, item_type: str, fields: dict[str, str] | None = None,
             creators: list | None = None, tags: list | None = None, collections: list[str] = (),
             added: str = "2024-01-05 09:30:00", library: int = USER_LIBRARY, parent: int | None = None,
             field_ids: dict[str, str] | None = None) -> int:
    """Insert one item as Zotero stores it; returns its itemID.

    ``creators``: ``("First", "Last")``, ``("First", "Last", "editor")`` or a single-field
    name ``"OpenAI"``. ``tags``: names or ``(name, type)``. ``collections``: paths.
    ``field_ids`` stores a field under another field's id (``{"publicationTitle": ...}``).
    """
    type_id = _id(connection, "itemTypesCombined", "typeName", item_type)
    cursor = connection.execute(
        "INSERT INTO items (itemTypeID, dateAdded, dateModified, clientDateModified, libraryID, key, version, synced)"
        " VALUES (?, ?, ?, ?, ?, ?, 7, 1)", (type_id, added, added, added, library, key))
    item_id = cursor.lastrowid
    for name, value in {**(fields or {}), **(field_ids or {})}.items():
        connection.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
        connection.execute("INSERT INTO itemData VALUES (?, ?, ?)", (
            item_id, _id(connection, "fieldsCombined", "fieldName", name), _id(connection, "itemDataValues", "value", value)))
    for index, creator in enumerate(creators or []):
        if isinstance(creator, str):
            first, last, mode, role = "", creator, 1, "author"
        else:
            first, last, role, mode = creator[0], creator[1], creator[2] if len(creator) > 2 else "author", 0
        connection.execute("INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)",
                           (first, last, mode))
        creator_id = connection.execute("SELECT creatorID FROM creators WHERE firstName=? AND lastName=? AND fieldMode=?",
                                        (first, last, mode)).fetchone()[0]
        connection.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)",
                           (item_id, creator_id, _id(connection, "creatorTypes", "creatorType", role), index))
    for tag in tags or []:
        name, tag_type = (tag, 0) if isinstance(tag, str) else tag
        connection.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (name,))
        connection.execute("INSERT INTO itemTags VALUES (?, ?, ?)", (item_id, _id(connection, "tags", "name", name), tag_type))
    if item_type == "attachment":
        connection.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path, syncState) "
                           "VALUES (?, ?, 0, 'application/pdf', 'storage:paper.pdf', 2)", (item_id, parent))
    elif item_type == "note":
        connection.execute("INSERT INTO itemNotes VALUES (?, ?, ?, ?)",
                           (item_id, parent, "<p>Read section 3 again.</p>", "Read section 3 again."))
    elif item_type == "annotation":
        connection.execute("INSERT INTO itemAnnotations (itemID, parentItemID, type, authorName, text, comment, color, "
                           "pageLabel, sortIndex, position, isExternal) VALUES (?, ?, 1, '', 'the forward process', '', "
                           "'#ffd400', '2', '00001|000100|00200', '{\"pageIndex\":1}', 0)", (item_id, parent))
    for path in collections:
        connection.execute("INSERT INTO collectionItems VALUES (?, ?, 0)", (_collection_id(connection, path), item_id))
    return item_id


def _collection_id(connection: sqlite3.Connection, path: str) -> int:
    parent = None
    for name in split_collection_path(path):
        parent = connection.execute("SELECT collectionID FROM collections WHERE collectionName=? AND "
                                    "parentCollectionID IS ?", (name, parent)).fetchone()[0]
    return parent


def make_library(target: Path, shared: Path | None = None) -> Path:
    """A realistic little library at ``target`` (see the module constants); returns ``target``."""
    connection = create_schema(target, shared)
    connection.execute("BEGIN")
    for number, path in enumerate(COLLECTIONS, start=1):
        parent, _, name = path.rpartition("/")
        connection.execute("INSERT INTO collections (collectionID, collectionName, parentCollectionID, libraryID, key)"
                           " VALUES (?, ?, ?, ?, ?)", (number, name, _collection_id(connection, parent) if parent else None,
                                                       USER_LIBRARY, f"COLL{number:04d}".replace("0", "A").replace("1", "B")))
    for path in TRASHED_COLLECTIONS:
        connection.execute("INSERT INTO deletedCollections (collectionID) VALUES (?)", (_collection_id(connection, path),))

    ddpm = add_item(connection, DDPM, "conferencePaper", {
        "title": "Denoising Diffusion Probabilistic Models", "abstractNote": "We present high quality image synthesis "
        "results using diffusion probabilistic models, a class of latent variable models inspired by considerations "
        "from nonequilibrium thermodynamics.", "date": "2020-00-00 2020", "proceedingsTitle": "Advances in Neural "
        "Information Processing Systems", "conferenceName": "NeurIPS 2020", "volume": "33", "pages": "6840–6851",
        "url": "https://arxiv.org/abs/2006.11239", "accessDate": "2024-01-05 09:29:41", "libraryCatalog": "arXiv.org"},
        creators=[("Jonathan", "Ho"), ("Ajay", "Jain"), ("Pieter", "Abbeel"), ("H.", "Larochelle", "editor")],
        tags=["diffusion", "generative models", ("Computer Science - Machine Learning", 1)],
        collections=["Reading/ML/Diffusion"], added="2024-01-05 09:30:00")
    pdf = add_item(connection, "PDFATT22", "attachment", {"title": "Full Text PDF", "url": "https://arxiv.org/pdf/2006.11239"},
                   parent=ddpm, added="2024-01-05 09:30:01")
    add_item(connection, "ANNOT222", "annotation", parent=pdf, added="2024-01-06 10:00:00")
    deep = add_item(connection, DEEP, "journalArticle", {
        "title": "Deep learning", "publicationTitle": "Nature", "volume": "521", "issue": "7553", "pages": "436-444",
        "date": "2015-05-28 2015-05-28", "DOI": "10.1038/nature14539", "ISSN": "1476-4687", "language": "en",
        "url": "https://www.nature.com/articles/nature14539"},
        creators=[("Yann", "LeCun"), ("Yoshua", "Bengio"), ("Geoffrey", "Hinton")], tags=["deep learning"],
        collections=["Reading/ML"], added="2023-11-20 18:02:13")
    add_item(connection, "NOTECH22", "note", parent=deep, added="2023-11-21 08:00:00")
    add_item(connection, MDLM, "preprint", {
        "title": "Simple and Effective Masked Diffusion Language Models", "abstractNote": "While diffusion models "
        "excel at generating high-quality images, prior work reports a significant performance gap between diffusion "
        "and autoregressive methods in language modeling.", "date": "2024-06-11 2024-06-11", "repository": "arXiv",
        "archiveID": "arXiv:2406.07524", "url": "http://arxiv.org/abs/2406.07524", "extra": "arXiv:2406.07524 [cs]"},
        creators=[("Subham Sekhar", "Sahoo"), ("Marianne", "Arriola"), ("Yair", "Schiff")],
        tags=["diffusion", "language models"], collections=["Reading/ML/Diffusion", "Archive/ML"],
        added="2024-06-12 07:45:00")
    add_item(connection, SDE, "conferencePaper", {
        "title": "Score-Based Generative Modeling through Stochastic Differential Equations", "date": "2021-00-00 2021",
        "proceedingsTitle": "International Conference on Learning Representations", "extra": "arXiv: 2011.13456"},
        creators=[("Yang", "Song"), ("Jascha", "Sohl-Dickstein"), ("Diederik P.", "Kingma")],
        collections=["Reading"], added="2024-02-01 12:00:00")
    add_item(connection, GPT4, "report", {
        "title": "GPT-4 Technical Report", "institution": "OpenAI", "reportType": "Technical report",
        "date": "2023-03-15 2023-03-15", "url": "https://arxiv.org/abs/2303.08774"},
        creators=["OpenAI"], added="2024-03-10 20:15:00")
    trashed = add_item(connection, TRASHED, "journalArticle", {"title": "A Result We Retracted", "date": "2019-00-00 2019"},
                       creators=[("Ann", "Other")], collections=["Reading/ML"], added="2023-05-05 05:05:05")
    connection.execute("INSERT INTO deletedItems (itemID, dateDeleted) VALUES (?, '2024-04-01 00:00:00')", (trashed,))
    add_item(connection, "NOTESTD2", "note", collections=["Reading/ML"], added="2024-04-02 00:00:00")
    add_item(connection, CHAPTER, "bookSection", {"title": "Graphical Models", "date": "2006-00-00 2006",
                                                  "publisher": "Springer"},
             field_ids={"publicationTitle": "Pattern Recognition and Machine Learning"},  # stored under the base field
             creators=[("Christopher M.", "Bishop")], collections=["Old/Sub"], added="2022-09-09 09:09:09")
    add_item(connection, THESIS, "thesis", {"title": "Learning Deep Generative Models", "university": "University of "
                                            "Toronto", "thesisType": "PhD Thesis", "date": "2009-00-00 2009"},
             creators=[("Ruslan", "Salakhutdinov")], added="2022-10-10 10:10:10")
    connection.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (?, 'group', 1, 1)",
                       (GROUP_LIBRARY,))
    connection.execute("INSERT INTO groups VALUES (4711, ?, 'Lab', '', 3)", (GROUP_LIBRARY,))
    add_item(connection, GROUP_ITEM, "journalArticle", {"title": "A Paper of the Group Library"}, library=GROUP_LIBRARY)
    connection.execute("COMMIT")
    connection.close()
    return target


@contextlib.contextmanager
def held_like_zotero(database: Path, wal: bool = True) -> Iterator[sqlite3.Connection]:
    """Hold ``database`` the way a running Zotero does: ``locking_mode=EXCLUSIVE`` for good.

    In WAL mode (``wal=True``) one item (:data:`WAL_ONLY`) is committed but, with automatic
    checkpoints off, exists only in the ``-wal`` file; another (:data:`UNCOMMITTED`) is
    written in a transaction left open. Without WAL, the committed item is in the main file.
    """
    if wal:
        setup = sqlite3.connect(database)
        setup.execute("PRAGMA journal_mode=WAL")
        setup.close()
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("PRAGMA wal_autocheckpoint=0")
    holder.execute("BEGIN")
    add_item(holder, WAL_ONLY, "preprint", {"title": "Flow Matching for Generative Modeling",
                                            "archiveID": "arXiv:2210.02747", "date": "2022-10-06 2022-10-06"},
             creators=[("Yaron", "Lipman")], collections=["Reading/ML/Diffusion"], added="2024-05-01 08:00:00")
    holder.execute("COMMIT")
    holder.execute("BEGIN EXCLUSIVE")
    add_item(holder, UNCOMMITTED, "journalArticle", {"title": "Not Saved Yet"}, added="2024-05-02 08:00:00")
    try:
        yield holder
    finally:
        holder.execute("ROLLBACK")
        holder.close()
