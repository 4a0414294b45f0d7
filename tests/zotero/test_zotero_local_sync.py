"""``litrank sync -l zotero:local-api``: writes through Zotero 10's local API (server ID, the
authorisation dialog, kept and one-write keys), through the real pyzotero, against the fake
running Zotero of tests/zotero_desktop.py; and Zotero 7-9, whose local API is read-only."""
from __future__ import annotations

import functools
import json
import logging
import stat
import time

import httpx2
import pytest
from click.testing import CliRunner

import connectors
from connectors.zotero import web as zotero_web
from connectors.zotero.local_writes import KEYS_FILE, LocalKeyStore, LocalWriteAccess, LocalWriteError
from connectors.zotero.writer import ZoteroWriter
from recommender.cli import main
from tests.conftest import EXAMPLE_LIBRARY
from tests.fakes.zotero_desktop import FakeZoteroDesktop
from tests.fakes.zotero_server import FakeZoteroAPI, Library
from tests.zotero.test_zotero_sync import item_data

TO = "Reading list: ICML 2026"
SERVER_ID = "sPMHtLD6HHBd"


@pytest.fixture(scope="module")
def desktop():
    with FakeZoteroDesktop(server_id=SERVER_ID) as fake:
        yield fake


@pytest.fixture(scope="module")
def zotero9():
    with FakeZoteroDesktop(version=9) as fake:
        yield fake


def _serve_example_library(server, monkeypatch, tmp_path, caplog):
    server.reset()
    library = server.add_library(Library("users", 475425, "My Library"))
    for index, paper in enumerate(connectors.load(EXAMPLE_LIBRARY)):
        library.add("items", item_data(paper, index))
    monkeypatch.setenv(zotero_web.LOCAL_API_ENV, server.url)
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))
    # Zotero keeps the keys it grants in its profile (localAPIKeys.json), which litrank reads.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("APPDATA", raising=False)
    if isinstance(server, FakeZoteroDesktop):
        server.profile_dir = tmp_path / "home" / ".zotero" / "zotero" / "x1y2z3.default"
        server.profile_dir.mkdir(parents=True)
        (server.profile_dir / "prefs.js").write_text('user_pref("extensions.zotero.firstRun2", false);\n')
    monkeypatch.delenv(zotero_web.API_KEY_ENV, raising=False)
    monkeypatch.setattr(zotero_web, "client_for", functools.partial(zotero_web.client_for, sleep=lambda s: None))
    monkeypatch.setattr(logging.getLogger("litrank"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="litrank")
    return server


@pytest.fixture
def zotero(desktop, monkeypatch, tmp_path, caplog):
    return _serve_example_library(desktop, monkeypatch, tmp_path, caplog)


def run(server, *args):
    result = CliRunner().invoke(main, ["sync", "-l", "zotero:local-api", "--model", "similarity", "--no-feedback",
                                       "--to", TO, *args], catch_exceptions=False)
    for key in server.keys:
        assert key not in result.stdout + result.stderr
    return result


def library(server) -> Library:
    return server.libraries[("users", 475425)]


def in_collection(server) -> list[dict]:
    keys = [k for k, c in library(server).collections.items() if c["data"]["name"] == TO]
    assert len(keys) == 1
    return [o["data"] for o in library(server).items.values() if keys[0] in o["data"].get("collections", [])]


def writes(server) -> list:
    return [r for r in server.requests if r.method != "GET" and r.path != "/local/authorize"]


def test_first_sync_asks_once_keeps_the_key_and_reruns_without_asking(zotero, tmp_path, caplog):
    first = run(zotero, "-n", "5")
    assert first.exit_code == 0, first.stderr
    assert zotero.dialogs == ["litrank"]
    assert "switch to Zotero and answer its dialog" in first.stderr
    assert f"the key is kept in {tmp_path / 'config' / KEYS_FILE}" in first.stderr
    assert "created 5, added 0, updated 0, removed 0 in 'Reading list: ICML 2026' of zotero:local-api." in first.stderr
    picks = in_collection(zotero)
    assert len(picks) == 5 and all(p["itemType"] == "conferencePaper" and p["proceedingsTitle"] for p in picks)
    assert {t["tag"] for p in picks for t in p["tags"]} == {"litrank"}
    granted = next(iter(zotero.keys))
    for request in writes(zotero):  # collection, then one batch of items
        assert request.path.startswith("/users/0/")
        assert request.headers["Zotero-Server-Id"] == SERVER_ID
        assert request.headers["Zotero-Api-Key"] == granted
    keys_file = tmp_path / "config" / KEYS_FILE
    assert json.loads(keys_file.read_text())["keys"] == {SERVER_ID: granted}
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert granted not in caplog.text

    before = {k: dict(o["data"]) for k, o in library(zotero).items.items()}
    second = run(zotero, "-n", "5")
    assert second.exit_code == 0, second.stderr
    assert zotero.dialogs == ["litrank"]  # the kept key is used
    assert "created 0, added 0, updated 0, removed 0" in second.stderr
    assert {k: o["data"] for k, o in library(zotero).items.items()} == before


def test_dry_run_never_asks_and_writes_nothing(zotero):
    result = run(zotero, "-n", "3", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "create 3, add 0, update 0, remove 0, unchanged 0." in result.stdout
    assert zotero.dialogs == [] and writes(zotero) == []


def test_allow_once_asks_before_each_write_request_without_failed_requests(zotero, tmp_path):
    zotero.dialog = "allow"
    result = run(zotero, "-n", "60")  # the collection, then items in two batches (50 + 10)
    assert result.exit_code == 0, result.stderr
    assert "one write request" in result.stderr
    posts = writes(zotero)  # exactly these: no request is wasted on a used-up key
    assert [r.path for r in posts] == ["/users/0/collections", "/users/0/items", "/users/0/items"]
    assert len(zotero.dialogs) == 3 and len({r.headers["Zotero-Api-Key"] for r in posts}) == 3
    assert len(in_collection(zotero)) == 60
    assert not (tmp_path / "config" / KEYS_FILE).exists()  # a one-write key is not kept


def test_deny_stops_before_anything_is_written(zotero):
    zotero.dialog = "deny"
    result = run(zotero, "-n", "5")
    assert result.exit_code == 2
    assert "you denied litrank's request in Zotero's dialog, so nothing more was written" in result.stderr
    assert writes(zotero) == [] and not library(zotero).collections


def test_cleared_authorisations_are_noticed_and_asked_again(zotero, tmp_path):
    assert run(zotero, "-n", "4").exit_code == 0
    zotero.revoke_all()  # Settings → Advanced → Clear Write Authorizations
    result = run(zotero, "-n", "6")
    assert result.exit_code == 0, result.stderr
    assert "Zotero no longer accepts litrank's stored key" in result.stderr
    assert zotero.dialogs == ["litrank", "litrank"] and len(in_collection(zotero)) == 6
    stored = json.loads((tmp_path / "config" / KEYS_FILE).read_text())["keys"][SERVER_ID]
    assert zotero.keys == {stored: True}  # the new key replaced the revoked one


def test_too_many_dialogs_then_a_rerun_completes(zotero):
    zotero.dialog = "allow"
    now = [1000.0]
    zotero.clock = lambda: now[0]
    for _ in range(5):  # five other dialogs this minute
        httpx2.post(f"{zotero.url}/local/authorize", json={"appName": "other"},
                    headers={"Zotero-Server-ID": SERVER_ID}, trust_env=False)
    refused = run(zotero, "-n", "5")
    assert refused.exit_code == 2
    assert "at most five authorisation dialogs a minute" in refused.stderr
    assert writes(zotero) == []
    now[0] += 61
    done = run(zotero, "-n", "5")
    assert done.exit_code == 0, done.stderr
    assert len(in_collection(zotero)) == 5


def test_items_get_the_template_of_the_web_api(zotero):
    """The local API has no /items/new: the same template is built from /itemTypeFields."""
    local_writer = ZoteroWriter(zotero_web.client_for("zotero:local-api"))
    with FakeZoteroAPI(writes=True) as web:
        web_writer = ZoteroWriter(zotero_web.client_for("zotero:user/1", endpoint=web.url))
        for item_type in ("conferencePaper", "journalArticle", "preprint"):
            assert local_writer.template(item_type) == web_writer.template(item_type)
    assert zotero.calls(r"/items/new") and zotero.calls(r"/itemTypeFields")
    assert run(zotero, "-n", "3").exit_code == 0
    fields = {f["field"] for f in httpx2.get(f"{zotero.url}/itemTypeFields", params={"itemType": "conferencePaper"},
                                             trust_env=False).json()}
    assert all(fields <= set(data) and data["proceedingsTitle"] for data in in_collection(zotero))


def test_zotero_9_is_read_only_and_said_before_ranking(zotero9, monkeypatch, tmp_path, caplog):
    server = _serve_example_library(zotero9, monkeypatch, tmp_path, caplog)
    result = run(server, "-n", "5")
    assert result.exit_code == 2
    assert "zotero:local-api: this Zotero's local API is read-only (writes need Zotero 10 or newer)" in result.stderr
    assert "-l zotero:user/<id>" in result.stderr and "Using the bundled" not in result.stderr
    assert writes(server) == []
    dry = run(server, "-n", "5", "--dry-run")
    assert dry.exit_code == 0 and "read-only" in dry.stderr and "create 5" in dry.stdout


def test_another_database_answering_mid_sync_is_a_clear_error(zotero):
    writer = ZoteroWriter(zotero_web.client_for("zotero:local-api"))
    writer.access = LocalWriteAccess(writer.library, notify=lambda message: None)
    assert writer.items()  # the reads fix the server ID
    new_item = {**writer.template("preprint"), "title": "A new paper"}
    writer.access.ensure_key()  # Zotero's dialog answered
    zotero.server_id = "aNotherDbId1"  # e.g. another Zotero profile was opened
    with pytest.raises(connectors.SourceError, match="serves another database"):  # on a read
        writer.ensure_collection(TO)
    with pytest.raises(LocalWriteError, match="serves another database.*nothing more was written"):  # on a write
        writer.create_items([new_item])
    assert not library(zotero).collections and writes(zotero)[-1].headers["Zotero-Server-Id"] == SERVER_ID
    assert not any(o["data"].get("title") == "A new paper" for o in library(zotero).items.values())


def test_key_store_keeps_keys_per_server_and_survives_a_corrupt_file(tmp_path, caplog):
    store = LocalKeyStore(tmp_path / "keys.json")
    assert store.get("A") is None
    store.put("A", "k" * 32)
    store.put("B", "m" * 32)
    assert (store.get("A"), store.get("B")) == ("k" * 32, "m" * 32)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600 and "k" * 32 not in repr(store)
    store.forget("A")
    assert store.get("A") is None and store.get("B") == "m" * 32
    store.path.write_text("{not json")
    assert store.get("B") is None and "unreadable" in caplog.text


def test_an_unanswered_dialog_times_out_with_a_clear_error(zotero):
    zotero.dialog = "ignore"
    zotero.dialog_wait = 1.0
    library_client = zotero_web.client_for("zotero:local-api")
    access = LocalWriteAccess(library_client, notify=lambda message: None, authorize_timeout=0.2)
    with pytest.raises(LocalWriteError, match="nobody answered Zotero's authorisation dialog within 0.2 s"):
        access.ensure_key()
    assert library_client.zot.client.timeout.read == 30  # pyzotero's own timeout is back for other requests


@pytest.mark.parametrize("answer", ["late-always", "late-allow"])
def test_a_dialog_answered_too_late_leaves_no_key_behind(zotero, answer):
    """The user answers after litrank stopped waiting: Zotero makes the key anyway (in its
    profile's localAPIKeys.json); the next run uses it instead of asking again."""
    zotero.dialog_answers = [answer]
    zotero.dialog_wait = 1.0
    library_client = zotero_web.client_for("zotero:local-api")
    access = LocalWriteAccess(library_client, notify=lambda message: None, authorize_timeout=0.2)
    with pytest.raises(LocalWriteError, match="the next run uses the key Zotero grants then"):
        access.ensure_key()
    deadline = time.monotonic() + 10
    while not zotero.keys and time.monotonic() < deadline:  # the fake's dialog is answered a second later
        time.sleep(0.05)
    late_key = next(iter(zotero.keys))
    stored = json.loads((zotero.profile_dir / "localAPIKeys.json").read_text())["keys"]
    assert [(k["appName"], k["remember"]) for k in stored] == [("litrank", answer == "late-always")]

    result = run(zotero, "-n", "3")
    assert result.exit_code == 0, result.stderr
    # No new dialog for the late key; a late one-write key serves the first write (the collection)
    # and Zotero asks once more for the batch of items.
    assert zotero.dialogs == ["litrank"] * (1 if answer == "late-always" else 2)
    assert "after an earlier run stopped waiting" in result.stderr and late_key not in result.stderr
    assert writes(zotero)[0].headers["Zotero-Api-Key"] == late_key
    assert len(in_collection(zotero)) == 3
    if answer == "late-always":  # kept for later syncs, like a key received in time
        assert LocalKeyStore().get(SERVER_ID) == late_key
    else:  # the one-write key was used up: nothing of it is left in Zotero
        assert late_key not in zotero.keys and late_key not in (zotero.profile_dir / "localAPIKeys.json").read_text()


def test_a_late_key_that_zotero_refuses_is_skipped(zotero):
    """A key in localAPIKeys.json that this Zotero no longer takes (another database's, or
    cleared meanwhile): litrank asks for a new one."""
    zotero.grant(remember=True)
    zotero.keys.clear()  # still in the file, no longer valid
    result = run(zotero, "-n", "3")
    assert result.exit_code == 0, result.stderr
    assert zotero.dialogs == ["litrank"] and len(in_collection(zotero)) == 3


def test_a_key_that_cannot_be_kept_still_serves_this_sync(zotero, tmp_path, monkeypatch):
    not_a_directory = tmp_path / "config-file"
    not_a_directory.write_text("")
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(not_a_directory))
    result = run(zotero, "-n", "3")
    assert result.exit_code == 0, result.stderr
    assert "but the key could not be kept in" in result.stderr and "Zotero will ask again next time" in result.stderr
    assert len(in_collection(zotero)) == 3 and zotero.dialogs == ["litrank"]


def test_a_trashed_pick_is_disliked_and_never_created_again_through_the_local_api(zotero):
    """Zotero 10's local API serves <library>/items/trash as the Web API does."""
    from connectors.files.feedback_store import FeedbackStore

    assert run(zotero, "-n", "4").exit_code == 0
    gone = in_collection(zotero)[0]
    lib = library(zotero)
    lib.version += 1
    obj = lib.items[gone["key"]]
    obj["data"]["deleted"] = 1
    obj["version"] = obj["data"]["version"] = lib.version
    for _ in range(3):
        result = CliRunner().invoke(main, ["sync", "-l", "zotero:local-api", "--model", "similarity", "-n", "4",
                                           "--to", TO], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        assert [o["data"]["title"] for o in lib.items.values()].count(gone["title"]) == 1
        assert "1 of litrank's items is in your Zotero trash" in result.stderr
    assert (gone["title"], -1, "zotero-trash") in {(e.title, e.judgement, e.source) for e in FeedbackStore().entries()}


def test_sync_into_a_group_library_through_the_local_api(zotero):
    """Zotero 10's local API writes group libraries at /api/groups/<id> with the same key flow."""
    group = zotero.add_library(Library("groups", 4711, "Lab"))
    for index, paper in enumerate(connectors.load(EXAMPLE_LIBRARY)):
        group.add("items", item_data(paper, index))
    result = CliRunner().invoke(main, ["sync", "-l", "zotero:local-api/groups/4711", "--model", "similarity",
                                       "--no-feedback", "--to", TO, "-n", "3"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert "created 3" in result.stderr and "zotero:local-api/groups/4711" in result.stderr
    ours = [o["data"] for o in group.items.values() if {"tag": "litrank"} in o["data"].get("tags", [])]
    assert len(ours) == 3
    assert not [o for o in library(zotero).items.values() if {"tag": "litrank"} in o["data"].get("tags", [])]
    assert all(r.path.startswith("/groups/4711/") for r in writes(zotero))


def test_keys_granted_to_litrank_are_found_in_every_zotero_profile(tmp_path, monkeypatch):
    from connectors.zotero.profiles import granted_local_keys

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("APPDATA", raising=False)
    profiles = tmp_path / ".zotero" / "zotero"
    for name, keys in {"a.default": [{"key": "K1", "appName": "litrank", "remember": False, "createdAt": "2026-12-01"},
                                     {"key": "K2", "appName": "other app", "remember": True, "createdAt": "2026-12-02"},
                                     {"key": "K3", "appName": "litrank", "remember": True, "createdAt": "2026-11-30"}],
                       "b.work": [{"key": "K4", "appName": "litrank", "remember": True, "createdAt": "2026-12-03"},
                                  {"appName": "litrank", "remember": True}]}.items():
        (profiles / name).mkdir(parents=True)
        (profiles / name / "prefs.js").write_text("")
        (profiles / name / "localAPIKeys.json").write_text(json.dumps({"keys": keys}))
    (profiles / "c.broken").mkdir()
    (profiles / "c.broken" / "prefs.js").write_text("")
    (profiles / "c.broken" / "localAPIKeys.json").write_text("{not json")
    found = granted_local_keys("litrank")
    assert [(k.key, k.remember, k.profile.name) for k in found] == [
        ("K4", True, "b.work"), ("K3", True, "a.default"), ("K1", False, "a.default")]
    assert "K4" not in repr(found[0])
