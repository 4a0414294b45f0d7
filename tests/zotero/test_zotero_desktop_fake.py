"""The fake Zotero desktop app (tests/zotero_desktop.py) itself: raw HTTP requests, and pyzotero's
own local-mode client (``authorize_local``, writes, errors) against it."""
from __future__ import annotations

import json

import httpx2
import pytest
from pyzotero import errors as pz
from pyzotero import zotero

from tests.fakes.zotero_desktop import FakeZoteroDesktop
from tests.fakes.zotero_server import sample_library

SERVER_ID = "sPMHtLD6HHBd"
ARTICLE = {"itemType": "journalArticle", "title": "Written through the local API",
           "creators": [{"creatorType": "author", "firstName": "Ada", "lastName": "Local"}]}
KEY_HEADERS = ("Zotero-API-Key", "Authorization")


@pytest.fixture(scope="module")
def desktop_server():
    with FakeZoteroDesktop() as server:
        yield server


@pytest.fixture(scope="module")
def zotero9_server():
    with FakeZoteroDesktop(version=9) as server:
        yield server


@pytest.fixture
def desktop(desktop_server):
    desktop_server.reset()
    desktop_server.add_library(sample_library("users", 475425))
    return desktop_server


@pytest.fixture
def zotero9(zotero9_server):
    zotero9_server.reset()
    zotero9_server.add_library(sample_library("users", 475425))
    return zotero9_server


@pytest.fixture(scope="module")
def http():
    with httpx2.Client(trust_env=False) as client:
        yield client


def client(server, **kwargs) -> zotero.Zotero:
    zot = zotero.Zotero(0, "user", local=True, **kwargs)
    zot.endpoint = server.url
    return zot


def post_items(http, server, headers=None, params=None, body=(ARTICLE,)):
    return http.post(f"{server.url}/users/0/items", json=list(body), headers=headers or {}, params=params)


def titles(server) -> list[str]:
    return [o["data"].get("title") for o in server.libraries[("users", 475425)].items.values()]


# -- Zotero 10: server ID -------------------------------------------------------------------------
def test_answers_of_endpoints_carry_the_server_id_early_errors_do_not(desktop, http):
    """As Zotero 10's server_localAPI.js: the endpoint handlers set Zotero-Server-ID, so a 401
    or an error raised before a handler runs has none."""
    root = http.get(f"{desktop.url}/")
    assert root.status_code == 200 and root.headers["Zotero-Server-ID"] == SERVER_ID
    bare = http.get(desktop.url)  # /api without the slash: not an endpoint
    missing = http.get(f"{desktop.url}/users/0/items/NOPE1234")
    unchanged = http.get(f"{desktop.url}/users/0/items", headers={"If-Modified-Since-Version": "999"})
    no_key = post_items(http, desktop, {"Zotero-Server-ID": SERVER_ID})
    assert [r.status_code for r in (bare, missing, unchanged, no_key)] == [404, 404, 304, 401]
    assert [r.headers.get("Zotero-Server-ID") for r in (bare, missing, unchanged, no_key)] == \
           [None, SERVER_ID, SERVER_ID, None]


def test_another_server_id_is_refused_for_reads_and_writes(desktop, http):
    other = {"Zotero-Server-ID": "other-db", "Zotero-API-Key": desktop.grant()}
    read = http.get(f"{desktop.url}/users/0/items", headers=other)
    write = post_items(http, desktop, other)
    assert (read.status_code, write.status_code) == (412, 412)
    assert "Zotero-Server-ID does not match" in read.text and "Zotero-Server-ID does not match" in write.text
    assert "Written through the local API" not in titles(desktop)
    with pytest.raises(pz.ServerIDMismatchError):
        client(desktop, server_id="other-db").items()
    assert len(client(desktop, server_id=SERVER_ID).items(limit=3)) == 3


# -- Zotero 10: write authorisation -----------------------------------------------------------------
def test_write_checks_server_id_then_key(desktop, http):
    no_id = post_items(http, desktop, {"Zotero-API-Key": desktop.grant()})
    assert no_id.status_code == 428 and "Zotero-Server-ID not provided" in no_id.text
    no_key = post_items(http, desktop, {"Zotero-Server-ID": SERVER_ID})
    bad_key = post_items(http, desktop, {"Zotero-Server-ID": SERVER_ID, "Zotero-API-Key": "nope"})
    assert (no_key.status_code, bad_key.status_code) == (401, 401)
    assert "API key required" in no_key.text and "Invalid or expired API key" in bad_key.text
    for answer in (no_key, bad_key):
        assert answer.headers["WWW-Authenticate"] == 'Zotero-API-Key realm="Zotero Local API"'
    assert "Written through the local API" not in titles(desktop)
    bearer = post_items(http, desktop, {"Zotero-Server-ID": SERVER_ID, "Authorization": f"Bearer {desktop.grant()}"})
    query = post_items(http, desktop, {"Zotero-Server-ID": SERVER_ID}, params={"key": desktop.grant()})
    assert (bearer.status_code, query.status_code) == (200, 200)
    assert titles(desktop).count("Written through the local API") == 2


def test_group_libraries_read_without_key_and_write_with_one(desktop, http):
    group = desktop.add_library(sample_library("groups", 169947))
    assert http.get(f"{desktop.url}/groups/169947/items", params={"limit": 2}).status_code == 200
    url, headers = f"{desktop.url}/groups/169947/collections", {"Zotero-Server-ID": SERVER_ID}
    assert http.post(url, json=[{"name": "From litrank"}], headers=headers).status_code == 401
    created = http.post(url, json=[{"name": "From litrank"}], headers={**headers, "Zotero-API-Key": desktop.grant()})
    assert created.status_code == 200 and created.json()["success"]["0"] in group.collections


def test_authorize_local_then_create_items(desktop):
    zot = client(desktop)
    answer = zot.authorize_local("litrank")
    assert answer["remember"] is True and len(answer["key"]) == 32 and answer["key"].isalnum()
    assert zot.local_api_key == answer["key"] and desktop.keys == {answer["key"]: True}
    assert desktop.dialogs == ["litrank"]
    for n in (1, 2):  # an "Always Allow" key lasts
        created = zot.create_items([{**ARTICLE, "title": f"Local {n}"}])
        assert list(created["success"]) == ["0"] and created["failed"] == {}
    writes = desktop.calls("/users/0/items")
    assert [w.method for w in writes] == ["POST", "POST"]
    assert all(w.headers["Zotero-Server-Id"] == SERVER_ID and w.headers["Zotero-Api-Key"] == answer["key"]
               for w in writes)
    assert {"Local 1", "Local 2"} <= set(titles(desktop))


def test_write_without_key_raises_key_required(desktop):
    with pytest.raises(pz.LocalAPIKeyRequiredError, match="API key required"):
        client(desktop).create_items([ARTICLE])
    assert "Written through the local API" not in titles(desktop)


def test_denied_dialog(desktop, http):
    desktop.dialog_answers = ["deny"]
    zot = client(desktop)
    with pytest.raises(pz.LocalAPIDeniedError):
        zot.authorize_local("litrank")
    assert zot.local_api_key is None and desktop.keys == {} and desktop.dialogs == ["litrank"]
    desktop.dialog = "deny"
    raw = http.post(f"{desktop.url}/local/authorize", json={"appName": "x"}, headers={"Zotero-Server-ID": SERVER_ID})
    assert raw.status_code == 403 and raw.json() == {"denied": True}
    assert raw.headers["Zotero-Server-ID"] == SERVER_ID


def test_allow_once_key_is_single_use(desktop):
    desktop.dialog_answers = ["allow"]
    zot = client(desktop)
    assert zot.authorize_local("litrank")["remember"] is False
    assert zot.create_items([ARTICLE])["success"]
    assert desktop.keys == {}
    with pytest.raises(pz.LocalAPIKeyRequiredError, match="Invalid or expired API key"):
        zot.create_items([{**ARTICLE, "title": "Second write"}])
    assert "Second write" not in titles(desktop)
    assert zot.authorize_local("litrank")["remember"] is True  # the queue is empty: the default "always"


def test_revoke_all_clears_always_allow_keys(desktop):
    zot = client(desktop, local_api_key=desktop.grant())
    zot.create_items([ARTICLE])
    desktop.revoke_all()
    with pytest.raises(pz.LocalAPIKeyRequiredError):
        zot.create_items([ARTICLE])
    assert titles(desktop).count("Written through the local API") == 1


def test_authorize_rate_limit(desktop, http):
    now = [1000.0]
    desktop.clock = lambda: now[0]
    zot = client(desktop)
    headers = {"Zotero-Server-ID": SERVER_ID}
    assert http.post(f"{desktop.url}/local/authorize", json={}, headers=headers).status_code == 400  # no dialog
    for _ in range(5):
        zot.authorize_local("litrank")
        now[0] += 10
    assert len(desktop.dialogs) == 5 and len(desktop.keys) == 5
    now[0] = 1045.0
    with pytest.raises(pz.TooManyRequestsError, match="retry in 15s"):
        zot.authorize_local("litrank")
    raw = http.post(f"{desktop.url}/local/authorize", json={"appName": "x"}, headers=headers)
    assert raw.status_code == 429 and raw.headers["Retry-After"] == "15"
    assert raw.headers["Zotero-Server-ID"] == SERVER_ID and len(desktop.dialogs) == 5
    now[0] = 1060.0  # the first dialog's minute is over
    assert zot.authorize_local("litrank")["key"] in desktop.keys
    with pytest.raises(pz.TooManyRequestsError):
        zot.authorize_local("litrank")


def test_authorize_needs_server_id_and_app_name(desktop, http):
    url = f"{desktop.url}/local/authorize"
    headers = {"Zotero-Server-ID": SERVER_ID}
    assert http.post(url, json={"appName": "litrank"}).status_code == 428
    for body in ({}, {"appName": ""}, {"appName": 7}, ["litrank"]):
        assert http.post(url, json=body, headers=headers).status_code == 400, body
    assert http.post(url, content=b"{not json", headers=headers).status_code == 400
    assert http.get(url, headers=headers).status_code == 400
    assert desktop.dialogs == [] and desktop.keys == {}


def test_reset_forgets_desktop_state(desktop):
    desktop.grant()
    desktop.dialog_answers += ["allow", "deny"]
    desktop.dialog, desktop.server_id, desktop.clock = "allow", "changed", lambda: 0.0
    client(desktop).authorize_local("litrank")
    desktop.reset()
    assert (desktop.keys, desktop.dialogs, desktop.dialog_answers, desktop._dialog_times) == ({}, [], [], [])
    assert (desktop.dialog, desktop.server_id) == ("always", SERVER_ID) and desktop.clock() > 0


def test_local_api_switched_off(desktop, http):
    desktop.local_enabled = False
    answer = http.get(f"{desktop.url}/users/0/items")
    assert answer.status_code == 403 and answer.headers["Zotero-Server-ID"] == SERVER_ID


# -- item types -------------------------------------------------------------------------------------
def test_no_item_template_but_item_type_fields(desktop):
    zot = client(desktop)
    with pytest.raises(pz.CallDoesNotExistError):
        zot.item_template("conferencePaper")
    fields = zot.item_type_fields("conferencePaper")
    names = [f["field"] for f in fields]
    assert names[0] == "title" and "proceedingsTitle" in names and "publicationTitle" not in names
    assert {"field": "proceedingsTitle", "localized": "Proceedings Title"} in fields
    assert {"field": "abstractNote", "localized": "Abstract"} in fields
    web_template = json.loads(desktop._template("/items/new", {"itemType": "conferencePaper"}).get_data())
    assert set(names) == set(web_template) - {"itemType", "creators", "tags", "collections", "relations"}
    assert len(names) == len(set(names))
    creators = zot.item_creator_types("book")
    assert creators[0] == {"creatorType": "author", "localized": "Author"}
    assert {"creatorType": "seriesEditor", "localized": "Series Editor"} in creators
    with pytest.raises(pz.UnsupportedParamsError):
        zot.item_type_fields("notAType")


# -- Zotero 7-9 -------------------------------------------------------------------------------------
def test_zotero9_is_read_only_without_server_id(zotero9, http):
    answers = [http.get(f"{zotero9.url}/"), http.get(f"{zotero9.url}/users/0/items"),
               post_items(http, zotero9, {"Zotero-Server-ID": SERVER_ID, "Zotero-API-Key": "k"}),
               http.post(f"{zotero9.url}/local/authorize", json={"appName": "litrank"})]
    assert [a.status_code for a in answers] == [200, 200, 400, 404]
    assert all("Zotero-Server-ID" not in a.headers for a in answers)
    assert answers[2].text == "Endpoint does not support method\n"
    assert answers[2].headers["Content-Type"].startswith("text/plain")
    assert http.patch(f"{zotero9.url}/users/0/items/SFILM001", json={}).status_code == 400
    zot = client(zotero9)
    assert len(zot.items(limit=2)) == 2 and zot.server_id is None
    with pytest.raises(pz.UnsupportedParamsError, match="Zotero-Server-ID"):
        zot._ensure_server_id()
    with pytest.raises(pz.UnsupportedParamsError):
        zot.authorize_local("litrank")
    assert zotero9.dialogs == [] and "Written through the local API" not in titles(zotero9)


def test_delete_items_and_collections_as_zotero_does(desktop, http):
    """pyzotero's delete_item / delete_collection against Zotero 10's local API semantics:
    one object by its own version, several by the library's; children and subcollections go
    with their parent; items stay when their collection goes."""
    zot = client(desktop, local_api_key=desktop.grant())
    library = desktop.libraries[("users", 475425)]
    parent = library.items["PQKBRC33"]
    children = [k for k, o in library.items.items() if o["data"].get("parentItem") == "PQKBRC33"]
    assert children
    stale = {"key": "PQKBRC33", "version": parent["version"] - 1}
    with pytest.raises(pz.PreConditionFailedError):  # 412: the item is newer than the version sent
        zot.delete_item(stale)
    zot.delete_item(parent["data"])
    assert "PQKBRC33" not in library.items and not set(children) & set(library.items)

    collection = next(c for c in library.collections.values() if c["data"]["name"] == "Non-English items")
    sub = [k for k, c in library.collections.items() if c["data"].get("parentCollection") == collection["key"]]
    members = [k for k, o in library.items.items() if collection["key"] in o["data"].get("collections", [])]
    version = library.version
    zot.delete_collection([collection["data"]], last_modified=version)
    assert collection["key"] not in library.collections and not set(sub) & set(library.collections)
    assert all(k in library.items and collection["key"] not in library.items[k]["data"]["collections"]
               for k in members)
    assert library.version == version + 1

    headers = {"Zotero-Server-ID": SERVER_ID, "Zotero-API-Key": next(iter(desktop.keys))}
    url = f"{desktop.url}/users/0/items"
    assert http.delete(url, params={"itemKey": "TRASH001"}, headers=headers).status_code == 428
    old = {**headers, "If-Unmodified-Since-Version": str(version)}
    assert http.delete(url, params={"itemKey": "TRASH001"}, headers=old).status_code == 412  # the library moved on
    now = {**headers, "If-Unmodified-Since-Version": str(library.version)}
    assert http.delete(url, headers=now).status_code == 400
    assert http.delete(url, params={"itemKey": ",".join(["AAAAAAAA"] * 51)}, headers=now).status_code == 413
    gone = http.delete(url, params={"itemKey": "TRASH001,NOSUCHKY"}, headers=now)
    assert gone.status_code == 204 and gone.headers["Last-Modified-Version"] == str(library.version)
    assert "TRASH001" not in library.items
    assert http.delete(f"{url}/NOSUCHKY", headers=now).status_code == 404
    keyless = {k: v for k, v in now.items() if k != "Zotero-API-Key"}
    assert http.delete(f"{url}/PDF00001", headers=keyless).status_code == 401  # a delete is a write
    assert http.delete(f"{url}/PDF00001", headers=now).status_code == 204 and "PDF00001" not in library.items
