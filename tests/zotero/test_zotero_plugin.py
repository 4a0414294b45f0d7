"""`litrank zotero-plugin`: the plugin's .xpi, and `answer` run as the plugin runs it (a real
subprocess, JSON in and out) on Zotero's own item JSON."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import DATA, REPO

ITEMS = [entry["data"] for entry in json.loads((DATA / "zotero-api" / "items_doc.json").read_text(encoding="utf-8"))]
PLUGIN_FIXTURES = DATA / "zotero-plugin"
RECOMMENDED = {"key": "RECOMM01", "path": "Sherlock/Recommended"}


def answer(request, *arguments: str) -> tuple[int, dict, str]:
    """``litrank zotero-plugin answer`` as the plugin runs it: the exit code, the reply, stderr."""
    text = request if isinstance(request, str) else json.dumps(request)
    done = subprocess.run([sys.executable, "-m", "recommender", "zotero-plugin", "answer", *arguments], input=text,
                          capture_output=True, text=True, cwd=REPO, check=False, timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


def first_request(top: int = 5) -> dict:
    return {"v": 1, "library": copy.deepcopy(ITEMS), "picks": [], "top": top,
            "candidates": {"source": "examples/icml2026"}, "recommended": {"key": None, "path": RECOMMENDED["path"]}}


def applied(reply: dict, picks: list[dict] = ()) -> list[dict]:
    """The litrank items after the plugin applied ``reply``: created ones get a key and the
    Recommended collection, updated ones their Extra, removed ones leave the collection."""
    items = {item["key"]: copy.deepcopy(item) for item in picks}
    for change in reply["update"]:
        items[change["key"]]["extra"] = change["extra"]
        items[change["key"]]["collections"] = [RECOMMENDED["key"]]
    for change in reply["remove"]:
        items[change["key"]]["extra"] = change["extra"]
        items[change["key"]]["collections"] = []
    for number, created in enumerate(reply["create"], start=len(items)):
        data = copy.deepcopy(created["data"])
        data.update(key=f"PICK{number:04d}", version=1, collections=[RECOMMENDED["key"]])
        items[data["key"]] = data
    return sorted(items.values(), key=lambda item: item["key"])


def test_answer_turns_real_item_json_into_five_new_picks():
    code, reply, _ = answer(first_request())
    assert code == 0 and reply["v"] == 1 and "error" not in reply
    assert len(reply["create"]) == 5 and reply["update"] == [] and reply["remove"] == []
    assert [pick["rank"] for pick in reply["picks"]] == [1, 2, 3, 4, 5]
    assert all(pick["key"] is None for pick in reply["picks"])
    scores = [pick["score"] for pick in reply["picks"]]
    assert scores == sorted(scores, reverse=True)
    for pick, created in zip(reply["picks"], reply["create"]):
        data = created["data"]
        assert data["title"] == pick["title"] and data["itemType"] in {"conferencePaper", "journalArticle", "preprint"}
        assert data["tags"] == [{"tag": "litrank"}]
        lines = data["extra"].splitlines()
        assert lines[0].startswith(f"litrank: rank {pick['rank']} of 70, score ")
        assert f"litrank: in {RECOMMENDED['path']}" in lines
        assert "key" not in data and "version" not in data
    assert reply["feedback"] == {"liked": 0, "disliked": 0}
    assert reply["summary"].startswith("5 picks of 70 papers; 5 new")


def test_a_trashed_pick_is_never_proposed_again_and_counts_as_a_dislike():
    code, first, _ = answer(first_request())
    assert code == 0
    picks = applied(first)
    trashed = picks[2]
    trashed["deleted"] = True
    second = first_request() | {"picks": picks, "recommended": RECOMMENDED}
    code, reply, _ = answer(second)
    assert code == 0
    assert trashed["title"] not in [pick["title"] for pick in reply["picks"]]
    assert trashed["title"] not in [created["data"]["title"] for created in reply["create"]]
    assert trashed["key"] not in [change["key"] for change in reply["update"] + reply["remove"]]
    assert reply["feedback"] == {"liked": 0, "disliked": 1}
    kept = {pick["key"] for pick in picks if not pick.get("deleted")}
    assert {pick["key"] for pick in reply["picks"] if pick["key"]} == kept  # found again, not created twice
    assert len(reply["create"]) == 1  # the one that takes the trashed pick's place

    # Applied, the same request again writes nothing: idempotent.
    third = second | {"picks": applied(reply, picks)}
    code, again, _ = answer(third)
    assert code == 0 and again["create"] == [] and again["update"] == [] and again["remove"] == []
    assert trashed["title"] not in [pick["title"] for pick in again["picks"]]


def test_a_liked_pick_teaches_and_a_pick_dragged_out_is_a_dislike():
    code, first, _ = answer(first_request())
    picks = applied(first)
    picks[0]["tags"].append({"tag": "litrank:liked"})
    dragged = picks[1]
    dragged["collections"] = []  # the user took it out of Recommended
    code, reply, _ = answer(first_request() | {"picks": picks, "recommended": RECOMMENDED})
    assert code == 0
    assert reply["feedback"] == {"liked": 1, "disliked": 1}
    assert "re-ranked with your 2 judgements (1 liked, 1 disliked)" in reply["summary"]
    assert dragged["title"] not in [pick["title"] for pick in reply["picks"]]
    assert dragged["key"] not in [change["key"] for change in reply["update"]]
    # The liked pick joined the library for this run (no longer a candidate) and stays put.
    assert picks[0]["key"] not in [change["key"] for change in reply["update"] + reply["remove"]]


def test_picks_of_another_collections_recommended_are_no_dislikes():
    code, first, _ = answer(first_request())
    elsewhere = applied(first)
    for item in elsewhere:  # as if litrank had put them into another collection's Recommended
        item["collections"] = ["OTHER001"]
        item["extra"] = item["extra"].replace(f"litrank: in {RECOMMENDED['path']}", "litrank: in Theory/Recommended")
    code, reply, _ = answer(first_request() | {"picks": elsewhere, "recommended": RECOMMENDED})
    assert code == 0
    assert reply["feedback"] == {"liked": 0, "disliked": 0}
    assert not {item["key"] for item in elsewhere} & {change["key"] for change in reply["update"] + reply["remove"]}


def test_only_litrank_items_are_ever_updated_or_taken_out():
    code, first, _ = answer(first_request(top=3))
    picks = applied(first)
    # A user's own item that happens to sit in the Recommended collection (no litrank tag).
    stranger = copy.deepcopy(ITEMS[1]) | {"collections": [RECOMMENDED["key"]]}
    code, reply, _ = answer(first_request(top=1) | {"picks": picks + [stranger], "recommended": RECOMMENDED})
    assert code == 0
    touched = {change["key"] for change in reply["update"] + reply["remove"]}
    assert stranger["key"] not in touched
    assert touched <= {pick["key"] for pick in picks}
    assert len(reply["remove"]) == 2  # the two picks that fell out of the top 1
    assert all(change["extra"].splitlines()[-1] == f"litrank: dropped from {RECOMMENDED['path']}"
               for change in reply["remove"])


def test_candidates_can_be_zotero_items_too():
    candidates = [item for item in ITEMS if item["itemType"] in ("journalArticle", "book")]
    library = [item for item in ITEMS if item not in candidates]
    request = first_request(top=3) | {"library": library, "candidates": {"items": candidates}}
    code, reply, _ = answer(request)
    assert code == 0 and len(reply["picks"]) == 3
    assert {pick["title"] for pick in reply["picks"]} <= {item["title"] for item in candidates}


@pytest.mark.parametrize(("request_text", "code", "words"), [
    ("not json", "bad_request", "not JSON"),
    (json.dumps({"v": 2}), "bad_request", "version"),
    (json.dumps([1, 2]), "bad_request", "JSON object"),
    (json.dumps(first_request() | {"top": -1}), "bad_request", "'top'"),
    (json.dumps(first_request() | {"candidates": {}}), "bad_request", "'candidates'"),
    (json.dumps(first_request() | {"library": "refs.bib"}), "bad_request", "'library'"),
    (json.dumps(first_request() | {"library": []}), "bad_request", "no papers"),
    (json.dumps(first_request() | {"candidates": {"source": "no/such/file.jsonl"}}), "source_failed", "no/such/file"),
    (json.dumps(first_request() | {"candidates": {"source": "zotero:nowhere"}}), "source_failed", "zotero:nowhere"),
])
def test_a_bad_request_or_source_is_one_json_error_and_exit_2(request_text, code, words):
    exit_code, reply, stderr = answer(request_text)
    assert exit_code == 2
    assert reply["v"] == 1 and reply["error"]["code"] == code and words in reply["error"]["message"]
    assert "\n" not in reply["error"]["message"]
    assert "Traceback" not in stderr


def test_the_request_the_plugin_builds_is_answered():
    """tests/data/zotero-plugin/request.json is what the plugin's JavaScript builds from
    items.json (tests/plugin/ checks that side): both sides test one contract."""
    path = PLUGIN_FIXTURES / "request.json"
    if not path.exists():
        pytest.fail("tests/data/zotero-plugin/request.json is missing")
    request = json.loads(path.read_text(encoding="utf-8"))
    code, reply, _ = answer(request)
    assert code == 0, reply
    assert set(reply) == {"v", "picks", "create", "update", "remove", "feedback", "summary"}
    assert len(reply["picks"]) == request["top"]
    litrank_keys = {item["key"] for item in request["picks"]}
    assert {change["key"] for change in reply["update"] + reply["remove"]} <= litrank_keys
    trashed = [item for item in request["picks"] if item.get("deleted")]
    assert not {item["title"] for item in trashed} & {pick["title"] for pick in reply["picks"]}
    assert reply["feedback"]["disliked"] >= len(trashed)
    liked = [item["key"] for item in request["picks"] if {"tag": "litrank:liked"} in item["tags"]]
    assert liked and not set(liked) & {change["key"] for change in reply["remove"]}  # a liked pick stays
    # The reply the node tests apply (tests/plugin/) has the shape of this real one, element by element.
    written = json.loads((PLUGIN_FIXTURES / "reply.json").read_text(encoding="utf-8"))
    assert set(written) == set(reply)
    for part in ("picks", "create", "update", "remove"):
        assert {frozenset(element) for element in written[part]} <= {frozenset(element) for element in reply[part]} \
            or not reply[part], part
    assert set(written["create"][0]["data"]) <= set(reply["create"][0]["data"]) | {"tags", "extra"}


# ------------------------------------------------------------------------------------ the .xpi


def build(tmp_path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recommender", "zotero-plugin", "build", *arguments],
                          capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120)


def test_the_xpi_is_reproducible_and_zotero_7_to_10_accept_its_manifest(tmp_path):
    assert build(tmp_path, "-o", "one.xpi").returncode == 0
    assert build(tmp_path, "-o", "two.xpi", "--update-json", "updates.json").returncode == 0
    one, two = (tmp_path / "one.xpi").read_bytes(), (tmp_path / "two.xpi").read_bytes()
    assert one == two
    archive = zipfile.ZipFile(tmp_path / "one.xpi")
    names = archive.namelist()
    assert {"manifest.json", "bootstrap.js", "prefs.js"} <= set(names)
    assert any(name.endswith(".ftl") for name in names) and any(name.endswith(".xhtml") for name in names)
    manifest = json.loads(archive.read("manifest.json"))
    zotero = manifest["applications"]["zotero"]
    assert manifest["manifest_version"] == 2 and zotero["id"] and zotero["update_url"].startswith("https://")
    assert zotero["strict_min_version"] == "7.0"
    assert zotero["strict_max_version"].split(".")[0] in ("10", "11") or zotero["strict_max_version"] == "10.*"
    from recommender.version import __version__

    assert manifest["version"] == __version__
    prefs = archive.read("prefs.js").decode("utf-8")
    assert f'pref("extensions.litrank.python", {json.dumps(sys.executable)});' in prefs
    updates = json.loads((tmp_path / "updates.json").read_text(encoding="utf-8"))
    (offer,) = updates["addons"][zotero["id"]]["updates"]
    import hashlib

    assert offer["update_hash"] == "sha256:" + hashlib.sha256(two).hexdigest()
    assert offer["update_link"].endswith("/two.xpi") and offer["version"] == __version__


def test_the_xpi_runs_the_interpreter_it_is_told(tmp_path):
    assert build(tmp_path, "-o", "a.xpi", "--python", "C:\\Python312\\python.exe").returncode == 0
    prefs = zipfile.ZipFile(tmp_path / "a.xpi").read("prefs.js").decode("utf-8")
    assert 'pref("extensions.litrank.python", "C:\\\\Python312\\\\python.exe");' in prefs


def test_a_bad_build_target_is_one_line_and_exit_2(tmp_path):
    wrong = build(tmp_path, "-o", "litrank.zip")
    assert wrong.returncode == 2 and "should end in .xpi" in wrong.stderr
    nowhere = build(tmp_path, "-o", str(tmp_path / "missing" / "litrank.xpi"))
    assert nowhere.returncode == 2 and "does not exist" in nowhere.stderr and "Traceback" not in nowhere.stderr
