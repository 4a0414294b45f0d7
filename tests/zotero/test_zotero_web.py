"""The Zotero Web API / local API reader (connectors/zotero/web.py), through the real pyzotero,
against a fake Zotero API v3 on a loopback HTTP server (tests/zotero_server.py)."""
from __future__ import annotations

import logging
import os
import socket
import traceback

import pytest
from pyzotero import zotero

import connectors
from connectors.errors import SourceError
from connectors.zotero import web as zotero_web
from connectors.zotero.items import paper_from_item
from tests.fakes.zotero_server import FakeZoteroAPI, recorded, sample_library

KEY = "Zk3ySecretValue0123456789"  # the API key the fake server accepts
USER = "zotero:user/475425"
RECORDED_KEYS = {item["key"] for item in recorded("items_doc.json")}
SKIPPED_KEYS = {"NOTE0001", "PDF00001", "TRASH001", "TM8QRS36"}  # note, standalone PDF, trashed, child attachment


@pytest.fixture(autouse=True)
def clean_environment(tmp_path, monkeypatch, caplog):
    """No key, endpoint or configuration file of the user's own leaks into a test, and every
    "litrank" record reaches caplog (the CLI's tests leave that logger not propagating)."""
    monkeypatch.setattr(logging.getLogger("litrank"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="litrank")
    for name in (zotero_web.API_KEY_ENV, zotero_web.API_URL_ENV, zotero_web.LOCAL_API_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))


@pytest.fixture(scope="module")
def web_server():
    with FakeZoteroAPI(api_key=KEY, max_limit=7) as server:
        yield server


@pytest.fixture(scope="module")
def local_server():
    with FakeZoteroAPI(local=True, max_limit=7) as server:
        yield server


@pytest.fixture
def web(web_server, monkeypatch):
    """The Web API with the sample library as user 475425 and group 169947, 7 objects per page."""
    web_server.reset()
    web_server.add_library(sample_library("users", 475425))
    web_server.add_library(sample_library("groups", 169947))
    monkeypatch.setenv(zotero_web.API_URL_ENV, web_server.url)
    monkeypatch.setenv(zotero_web.API_KEY_ENV, KEY)
    return web_server


@pytest.fixture
def local(local_server, monkeypatch):
    """Zotero 7's local API (under /api, no key) with the sample library as the local user."""
    local_server.reset()
    local_server.add_library(sample_library("users", 475425))
    monkeypatch.setenv(zotero_web.LOCAL_API_ENV, local_server.url)
    return local_server


@pytest.fixture
def sleeps():
    return []


def client(uri, sleeps, **kwargs):
    return zotero_web.client_for(uri, sleep=sleeps.append, **kwargs)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def by_id(papers):
    return {paper.id: paper for paper in papers}


def starts(server, path):
    return [call.params.get("start", "0") for call in server.calls(path)]


def assert_secret_absent(secret, error, caplog, capsys):
    """The secret is in no message, repr, traceback, log record or output; the message is one line."""
    message = str(error.value)
    assert "\n" not in message
    printed = capsys.readouterr()
    for text in (message, repr(error.value), "".join(traceback.format_exception(error.value)),
                 caplog.text, printed.out, printed.err):
        assert secret not in text


# -- reading --------------------------------------------------------------------------------------
def test_user_library_is_read_page_by_page_through_pyzotero(web, sleeps):
    library = client(USER, sleeps)
    assert isinstance(library.zot, zotero.Zotero) and library.zot.endpoint == web.url
    papers = library.papers()

    assert len(papers) == 21 and {p.id for p in papers} == RECORDED_KEYS | {"SFILM001"}
    assert not SKIPPED_KEYS & {p.id for p in papers}
    # the server gives 7 objects a page: pyzotero followed Link rel="next" for the other pages
    assert starts(web, "/users/475425/items/top") == ["0", "7", "14", "21"]
    assert starts(web, "/users/475425/collections") == ["0", "7", "14"]
    assert all(call.headers["Authorization"] == f"Bearer {KEY}" and call.headers["Zotero-Api-Version"] == "3"
               for call in web.requests)
    assert sleeps == []
    # oldest addition first
    assert [papers[0].id, papers[-1].id] == ["U52JBZ4X", "SFILM001"]

    papers = by_id(papers)
    babylon = papers["PQKBRC33"]
    assert babylon.title == "Sherlock Holmes in Babylon"
    assert babylon.authors == ["R. Creighton Buck"]
    assert (babylon.year, babylon.venue, babylon.doi) == (1980, "The American Mathematical Monthly", "10.2307/2321200")
    assert (babylon.source, babylon.entry_type, babylon.date_added) == (USER, "journalArticle", "2011-02-02T22:25:04Z")
    assert babylon.fields["collections"] == "Sherlock Holmes"
    assert babylon.fields["volume"] == "87" and babylon.fields["pages"] == "335-345"
    assert papers["6MCAN2NC"].fields["collections"] == \
        "Non-English items\nNon-English items/sherlock films\nSherlock Holmes"
    assert papers["Z8N84QAJ"].authors == ["Arthur Conan Doyle"]
    assert papers["Z8N84QAJ"].keywords[:2] == ["Detective and mystery stories, English", "Fiction"]
    assert papers["X42A7DEE"].authors == ["Institute of Physics (Great Britain)"]
    assert papers["33TK9NH9"].authors[:2] == ["Márcio D. Lima", "Shaoli Fang"] and papers["33TK9NH9"].year == 2011
    film = papers["SFILM001"]
    assert (film.authors, film.year, film.doi) == (["Alan Barnes"], 2002, "10.1234/sherlock.2002")
    assert film.fields["collections"] == "Non-English items/sherlock films"


def test_papers_are_those_of_the_shared_item_mapping(web, sleeps):
    paths = zotero_web.collection_paths([c["data"] for c in recorded("collections_doc.json")])
    assert paths["TVPC4XK4"] == "Non-English items/sherlock films" and paths["M7MNCCXU"] == "LoC/Digital Newspaper project"
    expected = {item["key"]: paper_from_item(item["data"], USER, [paths[k] for k in item["data"]["collections"]])
                for item in recorded("items_doc.json")}
    papers = by_id(client(USER, sleeps).papers())
    assert all(papers[key] == paper for key, paper in expected.items())


def test_group_library(web, sleeps):
    papers = client("zotero:group/169947", sleeps).papers()
    assert len(papers) == 21 and {p.source for p in papers} == {"zotero:group/169947"}
    assert by_id(papers)["ICK5M93W"].title == "Form and Ideology in Crime Fiction"
    assert {call.path.split("/")[1:3] == ["groups", "169947"] for call in web.requests} == {True}


def test_collection_with_its_subcollections(web, sleeps):
    papers = client(f"{USER}?collection=Non-English items", sleeps).papers()
    assert sorted(p.id for p in papers) == ["6MCAN2NC", "SFILM001"]
    assert {p.source for p in papers} == {f"{USER}?collection=Non-English items"}
    assert web.calls("/users/475425/collections/QM6T3KHX/items/top")
    assert web.calls("/users/475425/collections/TVPC4XK4/items/top")
    assert not web.calls("/users/475425/items/top")

    sub = client(f"{USER}?collection=Non-English%20items/sherlock%20films", sleeps).papers()
    assert sorted(p.id for p in sub) == ["6MCAN2NC", "SFILM001"]
    sciences = client(f"{USER}?collection=sciences (miscellaneous)", sleeps).papers()  # case-insensitive fallback
    assert len(sciences) == 12 and "33TK9NH9" in by_id(sciences)
    sherlock = client(f"{USER}?collection=Sherlock Holmes", sleeps).papers()  # 20 + a note and a trashed item
    assert {p.id for p in sherlock} == RECORDED_KEYS
    assert starts(web, "/users/475425/collections/9KH9TNSJ/items/top") == ["0", "7", "14"]


def test_unknown_collection_names_the_ones_there_are(web, sleeps):
    with pytest.raises(SourceError, match=r"no collection 'Nope' in this library \(its collections: .*Sherlock Holmes"):
        client(f"{USER}?collection=Nope", sleeps).papers()


def test_public_library_needs_no_key(web, monkeypatch, sleeps):
    monkeypatch.delenv(zotero_web.API_KEY_ENV)
    web.libraries[("users", 475425)].public = True
    assert len(client(USER, sleeps).papers()) == 21
    assert all("Authorization" not in call.headers for call in web.requests)


def test_key_from_the_configuration_file(web, monkeypatch, tmp_path, caplog, sleeps):
    monkeypatch.delenv(zotero_web.API_KEY_ENV)
    config = tmp_path / "config" / "config.ini"
    config.parent.mkdir()
    config.write_text(f'[zotero]\napi_key = "{KEY}"\n', encoding="utf-8")
    config.chmod(0o600)
    assert zotero_web.config_path() == config and zotero_web.find_api_key() == KEY
    assert len(client(USER, sleeps).papers()) == 21
    config.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="litrank"):
        zotero_web.find_api_key()
    assert "other users can read it" in caplog.text and KEY not in caplog.text


# -- rate limits ------------------------------------------------------------------------------------
def test_429_with_retry_after_is_waited_out(web, sleeps):
    web.inject(429, {"Retry-After": "1"}, path="/items/top", start=7)
    assert len(client(USER, sleeps).papers()) == 21
    assert starts(web, "/users/475425/items/top") == ["0", "7", "7", "14", "21"]
    assert len(sleeps) == 1 and 0.5 < sleeps[0] <= 1.0


def test_429_without_retry_after_is_retried_after_a_pause(web, sleeps):
    web.inject(429, path="/collections")
    assert len(client(USER, sleeps).papers()) == 21
    assert sleeps == [2.0]


def test_503_with_retry_after_is_retried(web, sleeps):
    web.inject(503, {"Retry-After": "2"}, times=2, path="/items/top", start=14)
    assert len(client(USER, sleeps).papers()) == 21
    assert sleeps == [2.0, 2.0]
    assert starts(web, "/users/475425/items/top") == ["0", "7", "14", "14", "14", "21"]


def test_backoff_on_a_successful_response_delays_the_next_request(web, sleeps):
    web.inject(None, {"Backoff": "5"}, path="/collections", start=0)
    assert len(client(USER, sleeps).papers()) == 21
    assert len(sleeps) == 1 and 4.5 < sleeps[0] <= 5.0


def test_persistent_503_gives_up_after_bounded_attempts(web, sleeps, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    web.inject(503, times=100, path="/collections")
    with pytest.raises(SourceError, match=r"^zotero:user/475425: the Zotero API is unavailable \(HTTP 503\) "
                                          r"after 4 attempts; try again later$") as error:
        client(USER, sleeps).papers()
    assert sleeps == [2.0, 4.0, 8.0] and len(web.requests) == 4
    assert_secret_absent(KEY, error, caplog, capsys)


def test_a_very_long_wait_fails_instead_of_hanging(web, sleeps):
    web.inject(429, {"Retry-After": "3600"}, path="/collections")
    with pytest.raises(SourceError, match="asked litrank to wait 3600 s before its next request; try again later"):
        client(USER, sleeps).papers()
    assert sleeps == []


# -- errors, and the key in none of them ------------------------------------------------------------
def test_wrong_key(web, monkeypatch, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    wrong = "WrongKeyWrongKey12345678"
    monkeypatch.setenv(zotero_web.API_KEY_ENV, wrong)
    with pytest.raises(SourceError, match=r"refused the API key \(HTTP 403\).*ZOTERO_API_KEY.*"
                                          r"https://www.zotero.org/settings/keys") as error:
        connectors.load(USER)
    assert_secret_absent(wrong, error, caplog, capsys)


def test_private_library_without_a_key_says_how_to_create_one(web, monkeypatch, caplog, capsys):
    monkeypatch.delenv(zotero_web.API_KEY_ENV)
    with pytest.raises(SourceError, match=r"not public and no Zotero API key is set \(HTTP 403\): create a key "
                                          r"with read access at https://www.zotero.org/settings/keys and set "
                                          r"the ZOTERO_API_KEY environment variable"):
        connectors.load(USER)


def test_no_such_library(web, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SourceError, match=r"^zotero:group/999: no such Zotero group library \(HTTP 404\)") as error:
        connectors.load("zotero:group/999")
    assert_secret_absent(KEY, error, caplog, capsys)


def test_network_error(monkeypatch, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(zotero_web.API_KEY_ENV, KEY)
    monkeypatch.setenv(zotero_web.API_URL_ENV, f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(SourceError, match=r"^zotero:user/475425: cannot reach the Zotero API at http://127.0.0.1: ") \
            as error:
        connectors.load(USER)
    assert_secret_absent(KEY, error, caplog, capsys)


def test_a_response_echoing_the_key_is_redacted(web, sleeps, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    web.inject(502, times=10, path="/collections", body=f"proxy error: upstream got 'Authorization: Bearer {KEY}'")
    with pytest.raises(SourceError, match=r"unavailable \(HTTP 502\)") as error:
        client(USER, sleeps).papers()
    assert "<redacted>" in caplog.text  # pyzotero's message (with the body) was logged, redacted
    assert_secret_absent(KEY, error, caplog, capsys)


@pytest.mark.parametrize("uri, key", [(f"{USER}?key={KEY}", None), (f"{USER}?{KEY}", None),
                                      (USER, f"{KEY}\nX-Other: 1"), (USER, f"with space {KEY}")])
def test_malformed_keys_and_uris_are_refused_without_echoing_the_key(web, uri, key, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SourceError) as error:
        zotero_web.client_for(uri, api_key=key).papers()
    assert_secret_absent(KEY, error, caplog, capsys)
    assert web.requests == []


def test_no_key_in_repr_or_source(web, sleeps):
    library = client(USER, sleeps)
    assert repr(library) == "ZoteroLibrary('zotero:user/475425')" and KEY not in repr(library.zot)
    assert {p.source for p in library.papers()} == {USER}


@pytest.mark.parametrize("uri", ["zotero:user/abc", "zotero:group/", "zotero:users/1", "zotero:user/1?collection=",
                                 "zotero:user/1?tag=x", "zotero:web/group/1", "zotero:web/groups/x"])
def test_malformed_uris(uri):
    with pytest.raises(SourceError, match=r"zotero:(user|group|users)"):
        zotero_web.parse_uri(uri)


def test_uri_parsing_keeps_plus_and_decodes_percent():
    target = zotero_web.parse_uri("zotero:group/42?collection=C%2B%2B/Papers+Notes/")
    assert (target.library_type, target.library_id, target.local) == ("group", 42, False)
    assert target.collection == "C++/Papers+Notes" and target.source == "zotero:group/42?collection=C++/Papers+Notes"
    assert zotero_web.parse_uri("zotero:local-api") == zotero_web.Target("user", 0, True, None, "zotero:local-api")
    # The API's own paths name the same Web API libraries.
    assert zotero_web.parse_uri("zotero:web/groups/42") == zotero_web.Target("group", 42, False, None,
                                                                            "zotero:web/groups/42")
    web_user = zotero_web.parse_uri("zotero:web/users/7?collection=A")
    assert (web_user.library_type, web_user.library_id, web_user.local, web_user.collection) == ("user", 7, False, "A")


# -- the local API ------------------------------------------------------------------------------------
def test_local_api(local, sleeps):
    library = client("zotero:local-api", sleeps)
    assert library.zot.local and library.zot.endpoint == local.url and local.url.endswith("/api")
    papers = library.papers()
    assert len(papers) == 21 and {p.source for p in papers} == {"zotero:local-api"}
    assert by_id(papers)["PQKBRC33"].authors == ["R. Creighton Buck"]
    # pyzotero strips the /api prefix from the local API's next links and puts it back
    assert starts(local, "/users/0/items/top") == ["0", "7", "14", "21"]
    assert all("Authorization" not in call.headers for call in local.requests)


def test_local_api_collection(local):
    papers = connectors.load("zotero:local-api?collection=Non-English items")
    assert sorted(p.id for p in papers) == ["6MCAN2NC", "SFILM001"]


def test_local_api_not_running(monkeypatch):
    monkeypatch.setenv(zotero_web.LOCAL_API_ENV, f"http://127.0.0.1:{closed_port()}/api")
    with pytest.raises(SourceError) as error:
        connectors.load("zotero:local-api")
    assert str(error.value) == (
        "zotero:local-api: Zotero's local API is not reachable: start Zotero 7 and enable 'Allow other "
        "applications on this computer to communicate with Zotero' (Settings → Advanced)")


def test_local_api_disabled(local):
    local.local_enabled = False
    with pytest.raises(SourceError, match=r"refused the request \(HTTP 403\): start Zotero 7 and enable "
                                          r"'Allow other applications"):
        connectors.load("zotero:local-api")


# -- end to end ------------------------------------------------------------------------------------------
def test_connectors_load_end_to_end(web):
    assert os.environ[zotero_web.API_KEY_ENV] == KEY
    papers = connectors.load(USER)
    assert len(papers) == 21
    assert by_id(papers)["R39UWNFK"].doi == "10.1109/plasma.2002.1030588"
    assert by_id(papers)["R39UWNFK"].authors == ["V. Leveille", "M.I. Boulos", "D. Gravelle"]
    both = connectors.load_many([USER, "zotero:group/169947"])
    assert len(both) == 21  # the same papers twice: kept once by the identity rule


def test_three_429s_exhaust_pyzotero_and_the_wrapper_carries_on(web, sleeps):
    web.inject(429, {"Retry-After": "1"}, times=3, path="/items/top", start=0)
    assert len(client(USER, sleeps).papers()) == 21
    assert starts(web, "/users/475425/items/top") == ["0", "0", "0", "0", "7", "14", "21"]
    assert len(sleeps) == 3 and all(0.5 < s <= 1.0 for s in sleeps)


# -- the fake server itself ---------------------------------------------------------------------------
def test_fake_server_speaks_api_v3(web):
    import json
    import urllib.error
    import urllib.request

    def get(path, **headers):
        request = urllib.request.Request(web.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, response.headers, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode()

    status, headers, body = get("/users/475425/items?limit=5&start=5", **{"Zotero-API-Key": KEY})
    assert status == 200 and headers["Total-Results"] == "24" and len(body) == 5  # all but the trashed one
    assert headers["Zotero-API-Version"] == "3" and headers["Last-Modified-Version"] == "5"
    assert 'start=10>; rel="next"' in headers["Link"] and 'rel="first"' in headers["Link"]
    assert get(f"/users/475425/items/trash?key={KEY}")[2][0]["key"] == "TRASH001"
    status, headers, body = get(f"/users/475425/items/top?key={KEY}&itemType=-attachment&limit=100")
    assert status == 200 and headers["Total-Results"] == "22" and len(body) == 7  # this server caps limit at 7
    assert get("/users/475425/items/top", Authorization="Bearer nope")[:3:2] == (403, "Invalid key")
    assert get("/users/475425/items/top")[:3:2] == (403, "Forbidden")
    assert get("/users/475425/collections/QM6T3KHX/collections", **{"Zotero-API-Key": KEY})[2][0]["key"] == "TVPC4XK4"
    assert get("/users/475425/items", **{"Zotero-API-Key": KEY, "If-Modified-Since-Version": "5"})[0] == 304
    assert get(f"/users/475425/items?key={KEY}&format=atom")[0] == 400
    request = urllib.request.Request(f"{web.url}/users/475425/items", data=b"[]", method="POST")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request)
    assert error.value.code == 501


def test_a_collection_deleted_while_reading_is_a_clear_error_on_both_apis(tmp_path, monkeypatch):
    """The Web API answers 404 for a collection it does not know, Zotero's local API 400."""
    from tests.fakes.zotero_server import FakeZoteroAPI, sample_library

    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))
    for local in (False, True):
        with FakeZoteroAPI(api_key=None if local else KEY, local=local) as fake:
            fake.add_library(sample_library("users", 475425, public=True))
            monkeypatch.setenv(zotero_web.LOCAL_API_ENV if local else zotero_web.API_URL_ENV, fake.url)
            library = zotero_web.client_for("zotero:local-api" if local else "zotero:user/475425")
            with pytest.raises(SourceError) as error:
                library.top_items("GONE1234")
            assert ("HTTP 400" if local else "HTTP 404") in str(error.value)
