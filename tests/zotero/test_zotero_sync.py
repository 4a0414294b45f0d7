"""``litrank sync`` and connectors/zotero/writer.py, through the real pyzotero, against the fake
Zotero API (tests/zotero_server.py) with its write side: the bundled ICML 2026 list ranked
against the example diffusion library, served as a Zotero user library."""
from __future__ import annotations

import functools
import logging

import pytest
from click.testing import CliRunner

import connectors
from connectors.zotero import web as zotero_web
from connectors.zotero.writer import ZoteroWriter
from recommender.cli import main
from tests.conftest import EXAMPLE_LIBRARY
from tests.fakes.zotero_server import FakeZoteroAPI, Library, sample_library

KEY = "Zk3ySecretWriteKey0123456789"
USER_ID = 475425
USER = f"zotero:user/{USER_ID}"
TO = "Reading list: ICML 2026"


def item_data(paper, index: int) -> dict:
    first, _, last = (paper.authors[0] if paper.authors else "Anon").rpartition(" ")
    return {"key": f"LIB{index:05d}", "version": 1, "itemType": "journalArticle", "title": paper.title,
            "creators": [{"creatorType": "author", "firstName": first, "lastName": last}],
            "abstractNote": paper.abstract, "date": str(paper.year or ""), "DOI": paper.doi, "url": paper.url,
            "publicationTitle": paper.venue, "extra": "", "tags": [], "collections": [], "relations": {},
            "dateAdded": f"2024-01-01T00:{index // 60:02d}:{index % 60:02d}Z",
            "dateModified": "2024-01-01T00:00:00Z"}


@pytest.fixture(scope="module")
def server():
    with FakeZoteroAPI(api_key=KEY, writes=True) as fake:
        yield fake


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def api(server, monkeypatch, tmp_path, sleeps, caplog):
    """User 475425's library holds the example diffusion library; every wait is recorded."""
    server.reset()
    library = server.add_library(Library("users", USER_ID, "diffusion"))
    for index, paper in enumerate(connectors.load(EXAMPLE_LIBRARY)):
        library.add("items", item_data(paper, index))
    for name in (zotero_web.API_URL_ENV, zotero_web.LOCAL_API_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(zotero_web.API_URL_ENV, server.url)
    monkeypatch.setenv(zotero_web.API_KEY_ENV, KEY)
    monkeypatch.setenv(zotero_web.CONFIG_DIR_ENV, str(tmp_path / "config"))
    monkeypatch.setattr(zotero_web, "client_for", functools.partial(zotero_web.client_for, sleep=sleeps.append))
    monkeypatch.setattr(logging.getLogger("litrank"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="litrank")
    return server


def run(*args):
    result = CliRunner().invoke(main, ["sync", "-l", USER, "--model", "similarity", "--no-feedback", *args],
                                catch_exceptions=False)
    assert KEY not in result.stdout + result.stderr
    return result


def library(server) -> Library:
    return server.libraries[("users", USER_ID)]


def collection_key(server, path=TO) -> str:
    keys = [k for k, c in library(server).collections.items() if c["data"]["name"] == path.split("/")[-1]]
    assert len(keys) == 1
    return keys[0]


def ours(server) -> list[dict]:
    return [o["data"] for o in library(server).items.values()
            if any(t["tag"] == "litrank" for t in o["data"].get("tags", []))]


def in_collection(server, path=TO) -> list[dict]:
    key = collection_key(server, path)
    return [o["data"] for o in library(server).items.values() if key in o["data"].get("collections", [])]


def writes(server) -> list:
    return [r for r in server.requests if r.method != "GET"]


def test_dry_run_then_sync_creates_exactly_n_items_in_the_collection(api, caplog):
    result = run("--to", TO, "-n", 6, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "create 6, add 0, update 0, remove 0" in result.stdout
    assert result.stdout.count("  create  #") == 6 and "(to be created)" in result.stdout
    assert writes(api) == [] and not library(api).collections

    result = run("--to", TO, "-n", 6)
    assert result.exit_code == 0, result.stderr
    assert "created 6, added 0, updated 0, removed 0" in result.stderr
    items = in_collection(api)
    assert len(items) == 6 and len(ours(api)) == 6
    assert {i["itemType"] for i in items} == {"conferencePaper"}
    assert all(i["proceedingsTitle"] and i["extra"].startswith("litrank: rank ") for i in items)
    assert any("litrank: title derived from the abstract" in i["extra"] for i in items)
    # one collection POST and one item POST (the collections are set in the new items)
    assert [(r.method, r.path) for r in writes(api)] == [("POST", f"/users/{USER_ID}/collections"),
                                                         ("POST", f"/users/{USER_ID}/items")]
    assert all(r.headers.get("Zotero-Write-Token") for r in writes(api))
    assert KEY not in caplog.text


def test_second_run_is_idempotent_and_keeps_the_users_edits(api):
    assert run("--to", TO, "-n", 5).exit_code == 0
    before = {i["key"] for i in ours(api)}
    api.requests.clear()
    result = run("--to", TO, "-n", 5)
    assert result.exit_code == 0, result.stderr
    assert "created 0, added 0, updated 0, removed 0" in result.stderr
    assert {i["key"] for i in ours(api)} == before and writes(api) == []

    # the user edits a title and adds a line to extra; litrank's score line is stale
    item = library(api).items[sorted(before)[0]]["data"]
    item["title"] = "My own title"
    item["extra"] = "Read: yes\n" + item["extra"].replace("score ", "score 9")
    result = run("--to", TO, "-n", 5)
    assert "created 0, added 0, updated 1, removed 0" in result.stderr, result.stderr
    item = library(api).items[item["key"]]["data"]
    assert item["title"] == "My own title" and item["extra"].startswith("Read: yes\nlitrank: rank ")
    assert "score 9" not in item["extra"] and len(ours(api)) == 5


def test_picks_that_fell_out_leave_the_collection_not_the_library(api):
    assert run("--to", TO, "-n", 6).exit_code == 0
    result = run("--to", TO, "-n", 4)
    assert "created 0, added 0, updated 0, removed 2" in result.stderr, result.stderr
    assert len(in_collection(api)) == 4 and len(ours(api)) == 6
    result = run("--to", TO, "-n", 6)  # they come back: added again, not duplicated
    assert "created 0, added 2, updated 0, removed 0" in result.stderr, result.stderr
    assert len(in_collection(api)) == 6 and len(ours(api)) == 6


def test_nested_collection_path_creates_the_parents(api):
    result = run("--to", "litrank/ICML 2026", "-n", 3)
    assert result.exit_code == 0, result.stderr
    parent, child = collection_key(api, "litrank"), collection_key(api, "litrank/ICML 2026")
    assert library(api).collections[child]["data"]["parentCollection"] == parent
    assert len(in_collection(api, "litrank/ICML 2026")) == 3
    assert run("--to", "litrank/ICML 2026", "-n", 3).exit_code == 0
    assert len(library(api).collections) == 2 and len(ours(api)) == 3


def test_a_slash_inside_a_collection_name_is_written_escaped(api):
    """`--to 'Lab\\/Group picks/ICML'`: a collection "Lab/Group picks" holding "ICML"."""
    result = run("--to", "Lab\\/Group picks/ICML", "-n", 2)
    assert result.exit_code == 0, result.stderr
    names = {c["data"]["name"]: c["data"] for c in library(api).collections.values()}
    assert set(names) == {"Lab/Group picks", "ICML"}
    assert names["ICML"]["parentCollection"] == next(k for k, c in library(api).collections.items()
                                                     if c["data"]["name"] == "Lab/Group picks")
    assert len(in_collection(api, "ICML")) == 2
    assert run("--to", "Lab\\/Group picks/ICML", "-n", 2).exit_code == 0  # found again, not created twice
    assert len(library(api).collections) == 2 and len(ours(api)) == 2


def test_a_429_and_a_412_are_survived_without_duplicates(api, sleeps):
    api.inject(429, {"Retry-After": "3"}, method="POST", path="/items")
    result = run("--to", TO, "-n", 5)
    assert result.exit_code == 0, result.stderr
    assert 3.0 in sleeps and len(ours(api)) == 5 and len(in_collection(api)) == 5
    posts = [r for r in writes(api) if r.path.endswith("/items")]
    assert len(posts) == 2 and posts[0].headers["Zotero-Write-Token"] == posts[1].headers["Zotero-Write-Token"]

    api.inject(412, method="POST", path="/items")  # the next write: the 4 → 6 run's creation
    result = run("--to", TO, "-n", 7)
    assert result.exit_code == 0, result.stderr
    assert "created 2" in result.stderr and len(ours(api)) == 7 and len(in_collection(api)) == 7


def test_a_lost_answer_then_a_reused_write_token_does_not_duplicate(api):
    """The batch went through but its answer was lost: the retry (same token) gets a 412, the
    writer refetches, finds the items and sends nothing more."""
    client = zotero_web.client_for(USER)
    tokens = iter(["collection-token", "items-token", "items-token", "fresh-token"])
    writer = ZoteroWriter(client, new_token=lambda: next(tokens))
    key, _ = writer.ensure_collection("Lost")
    items = [{"itemType": "preprint", "title": f"Paper {i}", "url": f"https://example.org/{i}", "tags": []}
             for i in range(3)]
    first = writer.create_items(items, key)
    assert len(first.written) == 3 and not first.failures
    again = writer.create_items(items, key)  # the same token: 412, then refetch
    assert len(again.written) == 3 and not again.failures
    assert len([o for o in library(api).items.values() if o["data"]["title"].startswith("Paper ")]) == 3
    assert next(tokens) == "fresh-token"  # nothing was sent again


def test_a_per_object_412_is_refetched_and_retried_once(api):
    writer = ZoteroWriter(zotero_web.client_for(USER))
    key, _ = writer.ensure_collection("Conflicts")
    stale = writer.items()[:3]
    changed = library(api).items[stale[0]["key"]]  # someone else changed it meanwhile
    changed["version"] = changed["data"]["version"] = library(api).version = 99
    report = writer.add_to_collection(stale, key)
    assert not report.failures and len(report.written) == 3
    assert len([o for o in library(api).items.values() if key in o["data"]["collections"]]) == 3


def test_failed_second_half_is_reported_and_a_rerun_heals(api):
    api.fail_second_half = 1
    result = run("--to", TO, "-n", 6)
    assert result.exit_code == 1
    failed = [line for line in result.stderr.splitlines() if line.startswith("error: not written:")]
    assert len(failed) == 3 and all("HTTP 500" in line for line in failed)
    assert "created 3," in result.stderr and len(ours(api)) == 3
    created_titles = {i["title"] for i in ours(api)}
    assert not any(title in line for title in created_titles for line in failed)
    result = run("--to", TO, "-n", 6)
    assert result.exit_code == 0, result.stderr
    assert "created 3, added 0" in result.stderr and len(ours(api)) == 6 and len(in_collection(api)) == 6


def test_sixty_picks_go_in_two_batches(api):
    result = run("--to", TO, "-n", 60)
    assert result.exit_code == 0, result.stderr
    posts = [r for r in writes(api) if r.path.endswith("/items")]
    assert len(posts) == 2 and len(ours(api)) == 60 and len(in_collection(api)) == 60
    assert len({r.headers["Zotero-Write-Token"] for r in posts}) == 2


def test_local_database_target_exits_2_with_the_alternatives(api):
    result = CliRunner().invoke(main, ["sync", "-l", "zotero:local", "--to", TO], catch_exceptions=False)
    assert result.exit_code == 2
    assert "never writes" in result.stderr and "Web API" in result.stderr and "BibTeX" in result.stderr
    assert "local API" in result.stderr and writes(api) == []


def test_the_key_never_appears_even_when_refused(api, monkeypatch, caplog):
    api.inject(403, method="POST", body=f"Invalid key {KEY}")
    result = run("--to", TO, "-n", 2)
    assert result.exit_code == 2 and "refused the API key" in result.stderr
    assert KEY not in result.stderr + result.stdout + caplog.text


def test_503_retry_after_and_backoff_on_success_are_honoured(api, sleeps):
    api.inject(503, {"Retry-After": "5"}, method="POST", path="/collections")
    api.inject(None, {"Backoff": "7"}, method="POST", path="/collections")  # on the retried, successful answer
    result = run("--to", TO, "-n", 3)
    assert result.exit_code == 0, result.stderr
    assert sleeps == [5.0, 7.0]  # the items POST waited out the Backoff
    assert len(library(api).collections) == 1 and len(ours(api)) == 3 and len(in_collection(api)) == 3


def test_the_learned_model_syncs_idempotently(api):
    result = CliRunner().invoke(main, ["sync", "-l", USER, "--to", TO, "-n", 4], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    again = CliRunner().invoke(main, ["sync", "-l", USER, "--to", TO, "-n", 4], catch_exceptions=False)
    assert "created 0, added 0, updated 0, removed 0" in again.stderr, again.stderr
    assert len(ours(api)) == 4


def sync_with_feedback(*args):
    result = CliRunner().invoke(main, ["sync", "-l", USER, "--model", "similarity", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result


def test_zotero_feedback_tags_and_removals_become_judgements(api):
    from connectors.files.feedback_store import FeedbackStore

    sync_with_feedback("-n", "5", "--to", TO)
    picks = in_collection(api)
    assert len(picks) == 5
    removed, disliked = picks[0], picks[1]
    removed["collections"] = []  # the user takes one pick out of the reading list ...
    disliked["tags"] = disliked["tags"] + [{"tag": "litrank:disliked"}]  # ... and marks another
    result = sync_with_feedback("-n", "5", "--to", TO)
    assert "Read 2 judgements from your Zotero items (0 liked, 2 disliked, removed or trashed)." in result.stderr
    now = {data["title"] for data in in_collection(api)}
    assert len(now) == 5 and removed["title"] not in now and disliked["title"] not in now
    stored = {(entry.title, entry.judgement, entry.source) for entry in FeedbackStore().entries()}
    assert {(removed["title"], -1, "zotero"), (disliked["title"], -1, "zotero")} <= stored


def test_a_liked_pick_stays_in_the_reading_list(api):
    sync_with_feedback("-n", "5", "--to", TO)
    liked = in_collection(api)[0]
    liked["tags"] = liked["tags"] + [{"tag": "litrank:liked"}]
    result = sync_with_feedback("-n", "5", "--to", TO)
    assert "(1 liked, 0 disliked, removed or trashed)" in result.stderr
    now = {data["key"]: data for data in in_collection(api)}
    assert liked["key"] in now  # it joined the library for the ranking, and is not taken out for it
    assert "litrank: dropped from" not in now[liked["key"]]["extra"]


def test_picks_litrank_drops_are_not_taken_for_dislikes(api):
    sync_with_feedback("-n", "5", "--to", TO)
    sync_with_feedback("-n", "3", "--to", TO)  # litrank takes two picks out itself
    result = sync_with_feedback("-n", "5", "--to", TO)
    assert "from your Zotero items" not in result.stderr
    assert len(in_collection(api)) == 5


def test_the_writer_reports_each_answered_write_for_progress(api):
    told = []
    writer = ZoteroWriter(zotero_web.client_for(USER), on_written=lambda kind, n: told.append((kind, n)))
    key, _ = writer.ensure_collection("Progress")
    items = [{"itemType": "preprint", "title": f"Paper {i}", "url": f"https://example.org/p{i}", "tags": []}
             for i in range(70)]
    writer.create_items(items, key)
    assert told == [("collections", 1), ("items", 50), ("items", 20)]


def test_sync_shows_its_stages_and_the_objects_sent_on_a_terminal(api, monkeypatch):
    import rich.status

    shown, updates = [], []
    original_init, original_update = rich.status.Status.__init__, rich.status.Status.update
    monkeypatch.setattr("recommender.cli.common._shows_progress", lambda: True)  # as on a terminal
    monkeypatch.setattr(rich.status.Status, "__init__",
                        lambda self, status, **kw: shown.append(str(status)) or original_init(self, status, **kw))
    monkeypatch.setattr(rich.status.Status, "update",
                        lambda self, status=None, **kw: updates.append(str(status)) or original_update(self, status, **kw))
    result = run("--to", TO, "-n", 60)
    assert result.exit_code == 0, result.stderr
    assert shown[0] == "Reading the library..." and shown[-1].startswith("Writing to zotero:user/")
    assert any(s.startswith("Reading the items of") for s in shown)
    assert [u.split(": ", 1)[1] for u in updates] == ["50 of 60 items sent...", "60 of 60 items sent..."]


def _trash(api, key: str, deleted: bool) -> None:
    """What Zotero does when the user moves an item to the trash (or restores it): the item's
    ``deleted`` flag, and a new version for it and the library."""
    lib = library(api)
    lib.version += 1
    obj = lib.items[key]
    if deleted:
        obj["data"]["deleted"] = 1
    else:
        obj["data"].pop("deleted", None)
    obj["version"] = obj["data"]["version"] = lib.version


def test_a_pick_moved_to_the_trash_stays_gone_counts_as_disliked_and_comes_back_when_restored(api):
    from connectors.files.feedback_store import FeedbackStore

    sync_with_feedback("-n", "5", "--to", TO)
    gone = in_collection(api)[0]
    _trash(api, gone["key"], True)
    for _ in range(3):  # three syncs: never created again, never in the collection again
        result = sync_with_feedback("-n", "5", "--to", TO)
        titles = [o["data"]["title"] for o in library(api).items.values()]
        assert titles.count(gone["title"]) == 1
        shown = [data for data in in_collection(api) if not data.get("deleted")]  # Zotero hides the trash
        assert gone["title"] not in {data["title"] for data in shown} and len(shown) == 5
        assert "1 of litrank's items is in your Zotero trash: counted as disliked, never created again" in result.stderr
    stored = {(entry.title, entry.judgement, entry.source) for entry in FeedbackStore().entries()}
    assert (gone["title"], -1, "zotero-trash") in stored
    # Even with stored feedback ignored, the plan does not create a trashed pick again.
    dry = CliRunner().invoke(main, ["sync", "-l", USER, "--model", "similarity", "--no-feedback", "-n", "5",
                                    "--to", TO, "--dry-run"], catch_exceptions=False)
    assert "(in your trash: not re-created)" in dry.stdout and "in the trash (not re-created) 1" in dry.stdout

    _trash(api, gone["key"], False)  # the user restores it
    result = sync_with_feedback("-n", "5", "--to", TO)
    assert "1 pick restored from the Zotero trash: no longer counted as disliked." in result.stderr
    assert (gone["title"], -1, "zotero-trash") not in {(e.title, e.judgement, e.source) for e in FeedbackStore().entries()}
    titles = [o["data"]["title"] for o in library(api).items.values()]
    assert titles.count(gone["title"]) == 1  # ours again: found, never duplicated
    assert "in your Zotero trash" not in result.stderr


def test_a_key_without_write_access_is_refused_before_anything_is_ranked(api):
    api.key_writes = False
    result = run("--to", TO, "-n", "3")
    assert result.exit_code == 2
    assert "the API key may read but not write your library; litrank sync needs write access" in result.stderr
    assert "Allow write access" in result.stderr and KEY not in result.stderr
    assert "Ranked" not in result.stderr and not api.calls(r"/users/\d+/items(/top)?")  # nothing read or ranked
    assert ours(api) == [] and not [r for r in api.requests if r.method != "GET"]
    dry = run("--to", TO, "-n", "3", "--dry-run")  # a dry run writes nothing: it needs no write access
    assert dry.exit_code == 0 and "create 3" in dry.stdout


def test_a_key_of_another_user_is_named(api, monkeypatch):
    other = api.add_library(Library("users", 999, "someone else"))
    assert other.id == 999
    result = CliRunner().invoke(main, ["sync", "-l", "zotero:user/999", "--model", "similarity", "--no-feedback",
                                       "--to", TO], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"the API key belongs to user {USER_ID}, not to user 999" in result.stderr


def test_a_locked_library_409_is_waited_out_like_a_503(api, sleeps):
    api.inject(409, method="POST", path="/items", times=2, body="Library is locked")
    result = run("--to", TO, "-n", 4)
    assert result.exit_code == 0, result.stderr
    assert "created 4" in result.stderr and len(ours(api)) == 4  # the same write token: nothing twice
    assert len(sleeps) >= 2


def test_a_library_locked_for_good_says_so(api, sleeps):
    api.inject(409, method="POST", path="/items", times=10, body="Library is locked")
    result = run("--to", TO, "-n", 4)
    assert result.exit_code == 2
    assert "the library stayed locked (HTTP 409) through 4 attempts" in result.stderr and ours(api) == []


def test_the_fake_versions_each_object_and_compares_preconditions_as_the_dataserver(api):
    import requests

    lib = library(api)
    before = lib.version
    url = f"{api.url}/users/{USER_ID}/items"
    headers = {"Zotero-API-Key": KEY, "Content-Type": "application/json"}
    objects = [{"itemType": "preprint", "title": f"Versioned {i}", "tags": []} for i in range(3)]
    answer = requests.post(url, json=objects, headers=headers, timeout=10)
    versions = [answer.json()["successful"][str(i)]["version"] for i in range(3)]
    assert versions == [before + 1, before + 2, before + 3]
    assert answer.headers["Last-Modified-Version"] == str(before + 3)
    stale = requests.post(url, json=objects[:1], timeout=10,
                          headers={**headers, "If-Unmodified-Since-Version": str(before)})
    assert stale.status_code == 412  # the library changed after that version
    ahead = requests.post(url, json=[{"itemType": "preprint", "title": "Ahead", "tags": []}], timeout=10,
                          headers={**headers, "If-Unmodified-Since-Version": str(lib.version + 5)})
    assert ahead.status_code == 200  # not "modified since": the dataserver compares with >


def test_the_fake_web_api_deletes_as_the_dataserver_does(server):
    """DELETE through pyzotero's Web API client: a read-only key is refused (403), then one item
    by its own version and several by the library's version."""
    from pyzotero import errors as pz
    from pyzotero import zotero

    server.reset()
    library = server.add_library(sample_library("users", USER_ID))
    zot = zotero.Zotero(USER_ID, "user", KEY)
    zot.endpoint = server.url
    item = library.items["PQKBRC33"]["data"]
    server.key_writes = False
    with pytest.raises(pz.UserNotAuthorisedError, match="Write access denied"):
        zot.delete_item(item)
    server.key_writes = True
    zot.delete_item(item)
    assert "PQKBRC33" not in library.items
    with pytest.raises(pz.PreConditionFailedError, match="modified since"):
        zot.delete_item([library.items["TRASH001"]["data"]], last_modified=library.version - 1)
    zot.delete_item([library.items["TRASH001"]["data"], library.items["PDF00001"]["data"]],
                    last_modified=library.version)
    assert not {"TRASH001", "PDF00001"} & set(library.items)


@pytest.mark.parametrize("uri", ["zotero:group/4711", "zotero:web/groups/4711"])
def test_sync_into_a_group_library_through_the_web_api(api, uri):
    """A group library (both spellings) is read and written under /groups/<id>; the user's own
    library is left alone."""
    group = api.add_library(Library("groups", 4711, "Lab"))
    for index, paper in enumerate(connectors.load(EXAMPLE_LIBRARY)):
        group.add("items", item_data(paper, index))
    result = CliRunner().invoke(main, ["sync", "-l", uri, "--model", "similarity", "--no-feedback", "--to", TO,
                                       "-n", "3"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert f"created 3, added 0, updated 0, removed 0 in '{TO}' of {uri}." in result.stderr
    assert len([o for o in group.items.values() if {"tag": "litrank"} in o["data"].get("tags", [])]) == 3
    assert not ours(api) and all(r.path.startswith("/groups/4711/") for r in writes(api))


def test_quiet_sync_prints_nothing_but_writes_everything(api):
    result = CliRunner().invoke(main, ["-q", "sync", "-l", USER, "--model", "similarity", "--no-feedback", "--to", TO,
                                       "-n", "3"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stderr == "" and result.stdout == ""
    assert len(in_collection(api)) == 3
