"""arxiv: collections through the real `arxiv` client against a fake arXiv API on loopback
(tests/arxiv_server.py): categories by date, searches, ids, paging, 429/503 with Retry-After,
the on-disk cache, --offline, and `litrank fetch` / `litrank rank -c arxiv:...`."""
from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from click.testing import CliRunner

import connectors
from connectors.online import arxiv_source
from connectors.online.http_cache import CachedSession, retry_after_seconds
from recommender.cli import main
from tests.fakes.arxiv_server import FakeArxiv

pytest.importorskip("arxiv")
TODAY = dt.date(2026, 12, 1)


@pytest.fixture
def fake(httpserver, monkeypatch):
    handler = FakeArxiv()
    httpserver.expect_request("/api/query").respond_with_handler(handler)
    monkeypatch.setenv("LITRANK_ARXIV_API", httpserver.url_for("/api/query"))
    monkeypatch.setenv("LITRANK_ARXIV_DELAY", "0")
    monkeypatch.delenv("LITRANK_OFFLINE", raising=False)
    monkeypatch.setattr(arxiv_source, "_since", lambda options, today=None: _since(options, TODAY))
    monkeypatch.setattr("connectors.online.http_cache.time.sleep", lambda seconds: handler.requests.append({"slept": seconds}))
    return handler


_since = arxiv_source._since


def test_a_category_gives_the_newest_submissions_as_papers(fake):
    papers = connectors.load("arxiv:cs.LG?days=7")
    assert [p.id for p in papers] == ["2511.20001", "2511.20002", "2511.20003"]  # 11-20 is older; q-bio is not cs.LG
    first = papers[0]
    assert first.arxiv_id == "2511.20001" and first.venue == "arXiv" and first.year == 2026
    assert first.title == "Discrete Flow Matching for Masked Diffusion Language Models"
    assert first.authors == ["Ada Lovelace", "Alan Turing"] and first.doi == "10.48550/arxiv.2511.20001"
    assert first.url == "https://arxiv.org/abs/2511.20001" and first.fields["pdf"].endswith("/pdf/2511.20001v2")
    assert fake.requests[0]["search_query"] == "cat:cs.LG" and fake.requests[0]["sortBy"] == "submittedDate"
    assert [p.id for p in connectors.load("arxiv:cs.LG?since=2026-11-15")][-1] == "2511.20004"


def test_ids_and_searches(fake):
    assert [p.id for p in connectors.load("arxiv:2511.20005,2511.20002v1")] == ["2511.20002", "2511.20005"]
    found = connectors.load("arxiv:search?query=all:diffusion&max=10")
    assert {p.id for p in found} == {"2511.20001", "2511.20002"}


def test_paging_follows_total_results(fake, monkeypatch):
    import arxiv

    original = arxiv.Client.__init__
    monkeypatch.setattr(arxiv.Client, "__init__", lambda self, **kw: original(self, **{**kw, "page_size": 2}))
    fake.failures, fake.fail_from_page = [(502, {})], 1  # a 5xx in the middle of the results
    papers = connectors.load("arxiv:cs.LG?days=30")
    assert len(papers) == 4 and [r["start"] for r in fake.requests if "start" in r] == ["0", "2", "2"]
    assert [r.get("status") for r in fake.requests if "start" in r] == [None, 502, None]


def test_rate_limits_and_server_errors_are_waited_out(fake):
    fake.failures = [(429, {"Retry-After": "7"}), (503, {})]
    assert len(connectors.load("arxiv:cs.LG")) == 3
    assert {"slept": 7.0} in fake.requests and {"slept": 2.0} in fake.requests  # Retry-After, then backoff 2^1
    fake.failures = [(503, {})] * 12  # more than the session (5 tries) and the client (2 rounds) make
    with pytest.raises(connectors.SourceError, match="HTTP 503"):
        connectors.load("arxiv:search?query=all:protein")


def test_a_rerun_is_served_from_the_cache_and_offline_needs_no_network(fake, monkeypatch):
    first = connectors.load("arxiv:cs.LG")
    sent = len(fake.requests)
    again = connectors.load("arxiv:cs.LG")
    assert [p.id for p in again] == [p.id for p in first] and len(fake.requests) == sent
    monkeypatch.setenv("LITRANK_OFFLINE", "1")
    assert len(connectors.load("arxiv:cs.LG")) == 3 and len(fake.requests) == sent
    with pytest.raises(connectors.SourceError, match="offline, and no cached answer"):
        connectors.load("arxiv:cs.CV")


def test_no_network_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("LITRANK_ARXIV_API", "http://127.0.0.1:9/api/query")  # nothing listens on port 9
    monkeypatch.setenv("LITRANK_ARXIV_DELAY", "0")
    result = CliRunner().invoke(main, ["fetch", "arxiv:cs.LG", "-o", "never.jsonl"])
    assert result.exit_code == 2
    assert "arxiv: cannot reach 127.0.0.1:9" in result.stderr and "--offline" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_uris_and_options():
    for uri, message in [("arxiv:", "not an arXiv source"), ("arxiv:search", "needs ?query="),
                         ("arxiv:cs.LG?since=yesterday", "--since wants a date"),
                         ("arxiv:cs.LG?days=0", "--days must be at least 1")]:
        with pytest.raises(connectors.SourceError, match=re.escape(message)):
            connectors.load(uri)


def test_retry_after_as_seconds_or_date():
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_fetch_round_trips_to_jsonl_and_ranks(fake, tmp_path):
    out = tmp_path / "week.jsonl"
    result = CliRunner().invoke(main, ["fetch", "arxiv:cs.LG", "--days", "7", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "Wrote 3 papers from arxiv:cs.LG?days=7" in result.stderr
    saved = connectors.load(out)
    assert [p.id for p in saved] == ["2511.20001", "2511.20002", "2511.20003"]
    assert saved[0].arxiv_id == "2511.20001" and saved[0].authors == ["Ada Lovelace", "Alan Turing"]
    assert saved[0].url == "https://arxiv.org/abs/2511.20001" and saved[0].fields["pdf"].endswith("/pdf/2511.20001v2")
    ranked = CliRunner().invoke(main, ["rank", "-c", "arxiv:cs.LG", "--days", "7", "-n", "0", "--format", "jsonl"])
    assert ranked.exit_code == 0, ranked.stderr
    picks = [json.loads(line) for line in ranked.stdout.splitlines()]
    assert picks[0]["id"] in {"2511.20001", "2511.20002"} and picks[-1]["id"] == "2511.20003"
    both = CliRunner().invoke(main, ["fetch", "arxiv:cs.LG", "--days", "7", "--since", "2026-11-01", "-o", str(out)])
    assert both.exit_code == 2 and "not both" in both.stderr


def test_cached_session_keeps_answers_but_not_errors(tmp_path, httpserver, monkeypatch):
    monkeypatch.setattr("connectors.online.http_cache.time.sleep", lambda seconds: None)
    httpserver.expect_request("/missing").respond_with_data("no such paper", status=404)
    httpserver.expect_request("/broken").respond_with_data("down", status=500)
    session = CachedSession("test", cache_path=tmp_path / "c.sqlite", max_retries=1)
    assert session.get(httpserver.url_for("/missing")).status_code == 404
    again = session.get(httpserver.url_for("/missing"))
    assert again.status_code == 404 and again.text == "no such paper" and session.cache_hits == 1
    assert session.get(httpserver.url_for("/broken")).status_code == 500
    assert session.get(httpserver.url_for("/broken")).status_code == 500 and session.cache_hits == 1


def test_network_progress_only_on_a_terminal(fake, monkeypatch):
    import sys

    from connectors.online import http_cache
    from recommender.cli.common import network_progress

    seen = []
    with network_progress():  # stderr is not a terminal here: nothing is shown, nothing listens
        assert http_cache.REQUEST_LISTENERS == []
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with network_progress():
        http_cache.REQUEST_LISTENERS.append(lambda source, url: seen.append(source))
        connectors.load("arxiv:cs.LG")
        http_cache.REQUEST_LISTENERS.pop()
        assert len(http_cache.REQUEST_LISTENERS) == 1  # the status line's own listener
    assert http_cache.REQUEST_LISTENERS == [] and seen == ["arxiv"]
