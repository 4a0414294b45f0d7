"""The local Zotero database reader: a real zotero.sqlite, built libraries, a running Zotero's lock."""
from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

import connectors
from connectors.errors import SourceError
from connectors.zotero import sqlite as zotero_sqlite
from connectors.zotero import sqlite_read as _sqlite_read
from connectors.zotero.items import paper_from_item
from tests.conftest import SHARED
from tests.fakes import zotero_fixtures as zf

REAL_DB = SHARED / "data" / "zotero-sqlite" / "real-library-schema120.sqlite"
ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def _require_shared() -> None:
    if not REAL_DB.exists():
        pytest.skip(f"shared real Zotero database not found at {REAL_DB} (../shared/data/zotero-sqlite/)")


@pytest.fixture
def real_db(tmp_path) -> Path:
    """A copy of the shared real database: the shared file is never opened read-write."""
    _require_shared()
    target = tmp_path / "real" / "zotero.sqlite"
    target.parent.mkdir()
    shutil.copyfile(REAL_DB, target)
    return target


@pytest.fixture
def library(tmp_path) -> Path:
    (tmp_path / "Zotero").mkdir()
    return zf.make_library(tmp_path / "Zotero" / "zotero.sqlite")


def test_the_committed_empty_schema_is_the_real_databases(tmp_path):
    """The fixtures' schema (tests/data/zotero-sqlite) is what the real database's schema gives."""
    _require_shared()
    derived, committed = tmp_path / "derived.sqlite", tmp_path / "committed.sqlite"
    zf.create_schema(derived, REAL_DB).close()
    zf.create_schema(committed).close()

    def contents(path: Path) -> tuple:
        with contextlib.closing(sqlite3.connect(path)) as db:
            schema = sorted(db.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=str)
            tables = [name for kind, name, _ in schema if kind == "table" and not name.startswith("sqlite_")]
            return schema, {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
                            for table in tables}

    assert contents(committed) == contents(derived)


def zf_wal(database: Path) -> Path:
    return database.with_name(database.name + "-wal")


def zf_journal(database: Path) -> Path:
    return database.with_name(database.name + "-journal")


def _by_id(papers):
    return {paper.id: paper for paper in papers}


def _state(database: Path):
    """What must not change when litrank reads: the file's bytes and mtime, and the directory's entries."""
    return (hashlib.sha256(database.read_bytes()).hexdigest(), database.stat().st_mtime_ns,
            sorted(p.name for p in database.parent.iterdir()))


# ------------------------------------------------------------------------------------ the real database


def test_real_database_regular_items_only(real_db):
    papers = zotero_sqlite.load(real_db)
    assert len(papers) == 38
    assert len({p.id for p in papers}) == 38
    raw = sqlite3.connect(f"{real_db.as_uri()}?mode=ro", uri=True)
    children = {type_name: {key for (key,) in raw.execute(
        "SELECT key FROM items JOIN itemTypes USING (itemTypeID) WHERE typeName=?", (type_name,))}
        for type_name in ("attachment", "note")}
    raw.close()
    assert (len(children["attachment"]), len(children["note"])) == (18, 2)
    assert not (children["attachment"] | children["note"]) & {p.id for p in papers}
    assert sum(1 for p in papers if p.abstract) == 13
    assert all(ISO_RE.match(p.date_added) for p in papers)
    assert {p.entry_type for p in papers} == {"book", "computerProgram", "conferencePaper", "document",
                                              "journalArticle", "preprint", "thesis"}


def test_real_database_fields(real_db):
    papers = _by_id(zotero_sqlite.load(real_db))
    article = papers["DWVTR4GB"]
    assert article.title == "Distributed Nonlinear Control Design Using Separable Control Contraction Metrics"
    assert article.authors == ["Humberto Stein Shiromoto", "Max Revay", "Ian R. Manchester"]
    assert (article.year, article.venue) == (2019, "IEEE Transactions on Control of Network Systems")
    assert article.doi == "10.1109/tcns.2018.2885270"
    assert article.url == "https://ieeexplore.ieee.org/document/8561231/"
    assert article.fields["pages"] == "1281-1290" and article.fields["accessDate"] == "2023-01-18T02:12:21Z"

    paper = papers["3PV4J6RG"]  # proceedingsTitle: the conferencePaper's own name for the venue
    assert paper.entry_type == "conferencePaper"
    assert paper.venue == "2016 IEEE 55th Conference on Decision and Control (CDC)"
    assert paper.authors == ["Humberto Stein Shiromoto", "Ian R. Manchester"] and paper.year == 2016
    assert paper.fields["place"] == "Las Vegas, NV, USA" and paper.fields["ISBN"] == "978-1-5090-1837-6"

    assert papers["DGWB2C6B"].arxiv_id == "1606.02360"  # preprint: archiveID / url
    assert papers["N6DLSC8Z"].arxiv_id == "1503.03900"  # only in extra: "arXiv: 1503.03900"
    assert papers["9C27WM2G"].venue == "Université Grenoble Alpes"  # thesis: university
    assert papers["9C27WM2G"].fields["thesisType"] == "PhD"
    assert papers["A5A8PGIP"].authors == ["T. Hastie", "R. Tibshirani", "J. Friedman"]
    assert papers["A5A8PGIP"].doi == "10.1007/978-0-387-84858-7"  # from extra "DOI: ..."


def test_real_database_tags_and_collection(real_db):
    papers = _by_id(zotero_sqlite.load(real_db))
    raw = sqlite3.connect(f"{real_db.as_uri()}?mode=ro", uri=True)
    tags: dict[str, set[str]] = {}
    for key, name in raw.execute("SELECT key, name FROM items JOIN itemTags USING (itemID) JOIN tags USING (tagID)"):
        tags.setdefault(key, set()).add(name)
    raw.close()
    assert {key: set(p.keywords) for key, p in papers.items() if p.keywords} == tags
    assert papers["WV53G4KS"].keywords == ["93A15, 34D20, 47H07",
                                           "Electrical Engineering and Systems Science - Systems and Control",
                                           "Mathematics - Optimization and Control"]
    in_collection = [p for p in papers.values() if p.fields.get("collections")]
    assert len(in_collection) == 20 and {p.fields["collections"] for p in in_collection} == {"MachineLearning"}
    assert {p.id for p in zotero_sqlite.load(real_db, "MachineLearning")} == {p.id for p in in_collection}


def test_real_database_left_untouched(real_db):
    before = _state(real_db)
    connectors.load(real_db)
    connectors.load(str(real_db))
    assert _state(real_db) == before


# ------------------------------------------------------------------------------------ built libraries


def test_regular_items_of_the_user_library_only(library):
    papers = _by_id(zotero_sqlite.load(library))
    # no attachment, note, annotation, trashed item, nor the group library's item
    assert set(papers) == zf.REGULAR_USER_ITEMS
    assert all(ISO_RE.match(p.date_added) for p in papers.values())
    assert papers[zf.DEEP].date_added == "2023-11-20T18:02:13Z"


def test_fields_creators_and_tags(library):
    papers = _by_id(zotero_sqlite.load(library))
    ddpm = papers[zf.DDPM]
    assert ddpm.authors == ["Jonathan Ho", "Ajay Jain", "Pieter Abbeel"]  # the editor is not an author
    assert (ddpm.year, ddpm.venue, ddpm.arxiv_id) == (2020, "Advances in Neural Information Processing Systems", "2006.11239")
    assert ddpm.keywords == ["Computer Science - Machine Learning", "diffusion", "generative models"]
    assert ddpm.fields["accessDate"] == "2024-01-05T09:29:41Z" and ddpm.fields["pages"] == "6840–6851"
    assert papers[zf.SDE].arxiv_id == "2011.13456"  # only in extra
    assert papers[zf.MDLM].arxiv_id == "2406.07524"
    assert papers[zf.MDLM].fields["collections"] == "Archive/ML\nReading/ML/Diffusion"
    assert papers[zf.GPT4].authors == ["OpenAI"] and papers[zf.GPT4].venue == "OpenAI"  # single-field creator
    assert papers[zf.THESIS].venue == "University of Toronto"
    chapter = papers[zf.CHAPTER]  # value stored under the base field: exposed under the type's own name
    assert chapter.venue == "Pattern Recognition and Machine Learning" and "publicationTitle" not in chapter.fields
    assert "collections" not in chapter.fields  # its collection is in the trash


def test_same_paper_as_the_web_api_item(library):
    """The data built from the database is the Web API's: both readers give identical Papers."""
    api_data = {  # what api.zotero.org returns as this item's "data" (empty fields included, as the API does)
        "key": zf.DEEP, "version": 7, "itemType": "journalArticle", "title": "Deep learning",
        "creators": [{"creatorType": "author", "firstName": "Yann", "lastName": "LeCun"},
                     {"creatorType": "author", "firstName": "Yoshua", "lastName": "Bengio"},
                     {"creatorType": "author", "firstName": "Geoffrey", "lastName": "Hinton"}],
        "abstractNote": "", "publicationTitle": "Nature", "volume": "521", "issue": "7553", "pages": "436-444",
        "date": "2015-05-28", "series": "", "seriesTitle": "", "seriesText": "", "journalAbbreviation": "",
        "language": "en", "DOI": "10.1038/nature14539", "ISSN": "1476-4687", "shortTitle": "",
        "url": "https://www.nature.com/articles/nature14539", "accessDate": "", "archive": "", "archiveLocation": "",
        "libraryCatalog": "", "callNumber": "", "rights": "", "extra": "", "tags": [{"tag": "deep learning"}],
        "collections": ["COLLAAAB"], "relations": {},
        "dateAdded": "2023-11-20T18:02:13Z", "dateModified": "2023-11-20T18:02:13Z"}
    expected = paper_from_item(api_data, str(library), ["Reading/ML"])
    assert _by_id(zotero_sqlite.load(library))[zf.DEEP] == expected


@pytest.mark.parametrize("collection, expected", [
    ("Reading/ML", {zf.DEEP, zf.DDPM, zf.MDLM}),  # with its subcollection Diffusion; trashed item left out
    ("Reading", {zf.DEEP, zf.DDPM, zf.MDLM, zf.SDE}),
    ("Reading/ML/Diffusion", {zf.DDPM, zf.MDLM}),
    ("Diffusion", {zf.DDPM, zf.MDLM}),  # a unique name
    ("reading/ml/", {zf.DEEP, zf.DDPM, zf.MDLM}),
    ("Archive/ML", {zf.MDLM}),
])
def test_collection_filter(library, collection, expected):
    assert {p.id for p in zotero_sqlite.load(library, collection)} == expected


def test_a_database_path_takes_the_collection_option_too(library, tmp_path):
    """`-l "zotero.sqlite?collection=ML"`: a path with the options zotero:local takes."""
    papers = connectors.load(f"{library}?collection=Reading/ML")
    assert {p.id for p in papers} == {p.id for p in zotero_sqlite.load(library, "Reading/ML")}
    assert {p.source for p in papers} == {f"{library}?collection=Reading/ML"}
    assert {p.id for p in connectors.load(f"{library}?collection=Diffusion")} == {zf.DDPM, zf.MDLM}
    with pytest.raises(SourceError, match="no collection 'Nope'"):
        connectors.load(f"{library}?collection=Nope")
    with pytest.raises(SourceError, match="no such file"):
        connectors.load(f"{tmp_path / 'missing.sqlite'}?collection=ML")
    with pytest.raises(SourceError, match="unknown or empty parameter 'colection'"):
        connectors.load(f"{library}?colection=ML")


def test_unknown_or_ambiguous_collection(library):
    with pytest.raises(SourceError, match=r"no collection 'Nope'.*Archive; Archive/ML; Reading; Reading/ML; "
                                          r"Reading/ML/Diffusion\)"):
        zotero_sqlite.load(library, "Nope")
    with pytest.raises(SourceError, match="no collection 'Old'"):  # in the trash
        zotero_sqlite.load(library, "Old")
    with pytest.raises(SourceError, match=r"several collections are named 'ML' \(Archive/ML; Reading/ML\)"):
        zotero_sqlite.load(library, "ML")


# ------------------------------------------------------------------------------------ locking and files


def test_running_zotero_wal_lock(library, caplog):
    """Zotero holds an exclusive lock in WAL mode: the committed items are read from a copy of db + -wal."""
    with zf.held_like_zotero(library, wal=True):
        assert b"Flow Matching" not in library.read_bytes()  # committed, but only in the write-ahead log
        assert b"Flow Matching" in zf_wal(library).read_bytes()
        probe = sqlite3.connect(f"{library.as_uri()}?mode=ro", uri=True, timeout=0)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            probe.execute("SELECT count(*) FROM items").fetchone()
        probe.close()
        before = _state(library)
        with caplog.at_level(logging.INFO, logger="litrank"):
            papers = _by_id(zotero_sqlite.load(library))
        assert _state(library) == before  # no -shm created, nothing written
    assert set(papers) == zf.REGULAR_USER_ITEMS | {zf.WAL_ONLY}  # not the uncommitted one
    assert papers[zf.WAL_ONLY].arxiv_id == "2210.02747"
    assert "temporary copy" in caplog.text


def test_running_zotero_rollback_journal_lock_is_read_in_place(library, caplog, monkeypatch):
    """Without WAL, mode=ro fails with "database is locked". Zotero's journal holds no
    transaction that has reached the file (its header is zeroed), so the main file is the
    committed state: read in place with immutable=1, nothing copied."""
    monkeypatch.setattr(_sqlite_read, "_snapshot", None)  # any copy would fail loudly
    with zf.held_like_zotero(library, wal=False):
        assert zf_journal(library).read_bytes()[:8] == bytes(8)
        before = _state(library)
        with caplog.at_level(logging.INFO, logger="litrank"):
            papers = zotero_sqlite.load(library, "Reading/ML/Diffusion")
        assert _state(library) == before
    assert {p.id for p in papers} == {zf.DDPM, zf.MDLM, zf.WAL_ONLY}  # not the uncommitted one
    assert "database is locked" in caplog.text and "read in place" in caplog.text


def test_a_transaction_reaching_the_file_is_read_from_a_rolled_back_copy(library, caplog):
    """Once Zotero's transaction spills into the main file (the journal's header is then valid),
    the file alone is not the committed state: a copy with its hot journal is rolled back."""
    with zf.held_like_zotero(library, wal=False) as holder:
        holder.execute("CREATE TABLE spill (x BLOB)")
        holder.executemany("INSERT INTO spill VALUES (?)", ((bytes(4000),) for _ in range(3000)))
        assert zf_journal(library).read_bytes()[:8] == bytes.fromhex("d9d505f920a163d7")
        before = _state(library)
        with caplog.at_level(logging.INFO, logger="litrank"):
            papers = zotero_sqlite.load(library, "Reading/ML/Diffusion")
        assert _state(library) == before
    assert {p.id for p in papers} == {zf.DDPM, zf.MDLM, zf.WAL_ONLY}
    assert "a transaction under way" in caplog.text and "temporary copy" in caplog.text


def test_a_checkpointed_write_ahead_log_is_read_in_place(library, caplog, monkeypatch):
    """Zotero in WAL mode with everything checkpointed: no committed frame in the log, so the
    main file is read in place though Zotero holds its lock."""
    monkeypatch.setattr(_sqlite_read, "_snapshot", None)
    with zf.held_like_zotero(library, wal=True) as holder:
        holder.execute("ROLLBACK")
        holder.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        holder.execute("BEGIN EXCLUSIVE")
        assert not _sqlite_read.wal_has_commits(zf_wal(library))
        with caplog.at_level(logging.INFO, logger="litrank"):
            papers = {p.id for p in zotero_sqlite.load(library)}
    assert papers == zf.REGULAR_USER_ITEMS | {zf.WAL_ONLY} and "read in place" in caplog.text


def test_commits_in_the_log_are_found_by_their_checksums(library, tmp_path):
    with zf.held_like_zotero(library, wal=True):
        log_bytes = zf_wal(library).read_bytes()
    saved = tmp_path / "saved.sqlite-wal"
    saved.write_bytes(log_bytes)
    assert _sqlite_read.wal_has_commits(saved)
    damaged = bytearray(log_bytes)
    damaged[32 + 24 + 100] ^= 0xFF  # one byte of the first frame's page: its checksum fails
    saved.write_bytes(bytes(damaged))
    assert not _sqlite_read.wal_has_commits(saved)
    saved.write_bytes(log_bytes[:32])  # a header, no frame: as after a checkpoint restarts the log
    assert not _sqlite_read.wal_has_commits(saved)
    saved.write_bytes(b"")
    assert not _sqlite_read.wal_has_commits(saved)


def test_a_write_during_the_read_in_place_means_reading_again(library, caplog, monkeypatch):
    """Zotero writes while litrank reads in place: the stamps differ, and the read is repeated."""
    stamps = iter([["before"], ["after"]])
    real = _sqlite_read._stamps
    monkeypatch.setattr(_sqlite_read, "_stamps", lambda path: next(stamps, None) or real(path))
    with zf.held_like_zotero(library, wal=False):
        with caplog.at_level(logging.INFO, logger="litrank"):
            papers = {p.id for p in zotero_sqlite.load(library)}
    assert papers == zf.REGULAR_USER_ITEMS | {zf.WAL_ONLY} and "read in place" in caplog.text


def test_log_left_by_a_crash_is_read_without_creating_files(library, tmp_path):
    crashed = tmp_path / "crashed" / "zotero.sqlite"
    crashed.parent.mkdir()
    with zf.held_like_zotero(library, wal=True):
        shutil.copyfile(library, crashed)
        shutil.copyfile(zf_wal(library), zf_wal(crashed))
    before = _state(crashed)
    assert zf.WAL_ONLY in {p.id for p in zotero_sqlite.load(crashed)}
    assert _state(crashed) == before


def test_wal_database_without_pending_log_is_read_in_place(library, caplog):
    setup = sqlite3.connect(library)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.close()
    before = _state(library)
    with caplog.at_level(logging.INFO, logger="litrank"):
        assert {p.id for p in zotero_sqlite.load(library)} == zf.REGULAR_USER_ITEMS
    assert _state(library) == before  # mode=ro alone would have left -wal and -shm files beside it
    assert "immutable" in caplog.text


def test_unlocked_database_read_in_place_and_untouched(library, caplog):
    before = _state(library)
    with caplog.at_level(logging.INFO, logger="litrank"):
        zotero_sqlite.load(library)
    assert _state(library) == before
    assert "read-only (mode=ro)" in caplog.text


# ------------------------------------------------------------------------------------ schema and errors


def _set_schema(database: Path, version: int) -> None:
    connection = sqlite3.connect(database)
    connection.execute("UPDATE version SET version=? WHERE schema='userdata'", (version,))
    connection.commit()
    connection.close()


def test_too_old_schema(library):
    _set_schema(library, 76)
    with pytest.raises(SourceError, match=r"schema 76 is not supported.*80 and newer.*Zotero 5\.0"):
        zotero_sqlite.load(library)


def test_newer_schema_is_read_and_a_broken_one_is_named(library, caplog):
    _set_schema(library, zotero_sqlite.KNOWN_SCHEMA + 5)
    with caplog.at_level(logging.INFO, logger="litrank"):
        assert len(zotero_sqlite.load(library)) == len(zf.REGULAR_USER_ITEMS)
    assert "newer than" in caplog.text
    connection = sqlite3.connect(library)
    connection.execute("DROP TABLE deletedItems")
    connection.commit()
    connection.close()
    with pytest.raises(SourceError, match=rf"schema {zotero_sqlite.KNOWN_SCHEMA + 5}, newer than .*deletedItems"):
        zotero_sqlite.load(library)


def test_not_a_zotero_database(tmp_path):
    other = tmp_path / "other.sqlite"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    with pytest.raises(SourceError, match="not a Zotero one"):
        zotero_sqlite.load(other)
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database at all, but long enough to have a header of a hundred bytes " * 3)
    with pytest.raises(SourceError, match="not an SQLite database"):
        connectors.load(text)


def test_missing_database(tmp_path, monkeypatch):
    with pytest.raises(SourceError, match=r"nope\.sqlite: no such Zotero database.*LITRANK_ZOTERO_DIR"):
        zotero_sqlite.load(tmp_path / "nope.sqlite")
    monkeypatch.setenv("LITRANK_ZOTERO_DIR", str(tmp_path / "empty"))
    tried = re.escape(str(tmp_path / "empty" / "zotero.sqlite"))
    with pytest.raises(SourceError, match=rf"{tried}: no Zotero database there.*LITRANK_ZOTERO_DIR"):
        connectors.load("zotero:local")
    monkeypatch.delenv("LITRANK_ZOTERO_DIR")
    _home(monkeypatch, tmp_path / "home")
    tried = re.escape(str(tmp_path / "home" / "Zotero" / "zotero.sqlite"))
    with pytest.raises(SourceError, match=rf"no Zotero database found \(tried .*{tried}\);.*LITRANK_ZOTERO_DIR"):
        connectors.load("zotero:local")


def _home(monkeypatch, home: Path) -> None:
    """A home directory of the test's own: no real Zotero installation is looked at."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.delenv("APPDATA", raising=False)


# ------------------------------------------------------------------------------------ through connectors


def test_uri_with_collection(library, monkeypatch):
    monkeypatch.setenv("LITRANK_ZOTERO_DIR", str(library.parent))
    papers = connectors.load("zotero:local?collection=Reading/ML")
    assert {p.id for p in papers} == {zf.DEEP, zf.DDPM, zf.MDLM}
    assert {p.source for p in papers} == {"zotero:local?collection=Reading/ML"}
    assert {p.id for p in connectors.load("zotero:local?collection=Reading%2FML%2FDiffusion")} == {zf.DDPM, zf.MDLM}
    monkeypatch.setenv("LITRANK_ZOTERO_DIR", str(library))  # the file itself is accepted too
    assert len(connectors.load("zotero:local")) == len(zf.REGULAR_USER_ITEMS)
    with pytest.raises(SourceError, match="unknown or empty parameter 'tag'"):
        connectors.load("zotero:local?tag=x")


def test_data_directory_from_zotero_preferences(library, tmp_path, monkeypatch):
    home = tmp_path / "home"
    profile = home / ".zotero" / "zotero" / "k2ld8.default"
    profile.mkdir(parents=True)
    (profile / "prefs.js").write_text(
        'user_pref("extensions.zotero.dataDir", "%s");\nuser_pref("extensions.zotero.useDataDir", true);\n'
        % str(library.parent).replace("\\", "\\\\"), encoding="utf-8")
    monkeypatch.delenv("LITRANK_ZOTERO_DIR", raising=False)
    _home(monkeypatch, home)
    assert zotero_sqlite.find_database() == library
    assert len(connectors.load("zotero:local?collection=Diffusion")) == 2


def test_sqlite_path_through_connectors(library):
    before = _state(library)
    assert {p.id for p in connectors.load(library)} == zf.REGULAR_USER_ITEMS
    assert {p.id for p in connectors.load(str(library))} == zf.REGULAR_USER_ITEMS
    assert _state(library) == before


def test_cli_zotero_dir_and_collection_options(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from recommender.cli import main

    # Set (not deleted) so that monkeypatch restores the variable the option overwrites.
    monkeypatch.setenv("LITRANK_ZOTERO_DIR", str(tmp_path / "unset"))
    data_dir = tmp_path / "MyZotero"
    data_dir.mkdir()
    zf.make_library(data_dir / "zotero.sqlite")
    result = CliRunner().invoke(main, ["rank", "-l", "zotero:local", "--zotero-dir", str(data_dir),
                                       "--zotero-collection", "Reading/ML", "-n", "3", "--format", "jsonl"])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3
    missing = CliRunner().invoke(main, ["rank", "-l", "zotero:local", "--zotero-dir", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "nowhere" in missing.stderr


def test_trashed_picks_of_litrank_are_read_marked_and_judged_disliked(library):
    """The trash stays out, but for litrank's own items: moving a pick there is a "no"."""
    from recommender.feedback import DISLIKED, is_trashed, zotero_judgements

    connection = sqlite3.connect(library)
    pick = zf.add_item(connection, "PICK0001", "preprint", {"title": "A Pick Nobody Wanted", "date": "2026"},
                       creators=[("Some", "Author")], tags=["litrank"], added="2026-11-01 10:00:00")
    connection.execute("INSERT INTO deletedItems (itemID, dateDeleted) VALUES (?, '2026-11-02 00:00:00')", (pick,))
    zf.add_item(connection, "PICK0002", "preprint", {"title": "A Pick Kept", "date": "2026"},
                creators=[("Other", "Author")], tags=["litrank"], added="2026-11-01 10:00:01")
    connection.commit()
    connection.close()
    papers = _by_id(zotero_sqlite.load(library))
    assert zf.TRASHED not in papers  # the user's own trashed item is still left out
    assert is_trashed(papers["PICK0001"]) and not is_trashed(papers["PICK0002"])
    assert [(p.id, j) for p, j in zotero_judgements(papers.values())] == [("PICK0001", DISLIKED)]


def test_a_group_library_of_the_database_by_name_or_id(library, monkeypatch):
    monkeypatch.setenv(zotero_sqlite.DATA_DIR_ENV, str(library.parent))
    for uri in ("zotero:local?library=group:Lab", "zotero:local?library=group:4711", "zotero:local?library=group:lab"):
        assert [p.id for p in zotero_sqlite.load_uri(uri)] == [zf.GROUP_ITEM]
    assert zf.GROUP_ITEM not in {p.id for p in zotero_sqlite.load_uri("zotero:local")}
    with pytest.raises(SourceError, match=r"no group 'Nope' in this Zotero database \(its groups: Lab \(4711\)\)"):
        zotero_sqlite.load_uri("zotero:local?library=group:Nope")
    with pytest.raises(SourceError, match=r"use library=group:<name or id>"):
        zotero_sqlite.load_uri("zotero:local?library=Lab")
    with pytest.raises(SourceError, match="no collection 'Reading' in this library"):  # the group's own collections
        zotero_sqlite.load_uri("zotero:local?library=group:Lab&collection=Reading")
