"""openreview: collections through the real openreview-py client against a fake API v2 on
loopback (tests/openreview_server.py): accepted papers, all submissions, paging, 429 with
Retry-After, the cache and --offline, and the CLI."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import connectors
from recommender.cli import main
from tests.fakes.openreview_server import FakeOpenReview

pytest.importorskip("openreview")
VENUE = "ICLR.cc/2026/Conference"


@pytest.fixture
def fake(httpserver, monkeypatch):
    handler = FakeOpenReview()
    httpserver.expect_request("/notes").respond_with_handler(handler)
    monkeypatch.setenv("LITRANK_OPENREVIEW_API", httpserver.url_for("").rstrip("/"))
    for name in ("OPENREVIEW_USERNAME", "OPENREVIEW_PASSWORD", "LITRANK_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("connectors.online.http_cache.time.sleep", lambda seconds: handler.requests.append({"slept": seconds}))
    return handler


def test_accepted_papers_of_a_venue(fake):
    papers = connectors.load(f"openreview:{VENUE}")
    assert [p.title for p in papers] == ["Masked Diffusion Language Models Scale", "Consistency Training for Video Diffusion",
                                         "Conservative Offline Reinforcement Learning"]
    first = papers[0]
    assert first.id == "Ab01xYz001" and first.venue == "ICLR" and first.year == 2026
    assert first.authors == ["Ada Lovelace", "Alan Turing"] and first.keywords == ["diffusion", "language models"]
    assert first.url == "https://openreview.net/forum?id=Ab01xYz001"
    assert first.fields["pdf"] == "https://openreview.net/pdf/Ab01xYz001.pdf" and first.fields["status"] == "Poster"
    assert papers[1].fields["status"] == "Oral"
    assert fake.requests[0]["content.venueid"] == VENUE and fake.requests[0]["count"] == "true"


def test_all_submissions_and_paging_through_a_5xx(fake):
    fake.page_size = 2
    fake.failures, fake.fail_from_page = [(503, {})], 1  # the second page fails once
    papers = connectors.load(f"openreview:{VENUE}?include=submissions")
    assert len(papers) == 4 and "status" not in papers[3].fields
    pages = [r for r in fake.requests if "slept" not in r]
    assert [(r.get("after"), r.get("status")) for r in pages] == [
        (None, None), ("Ab02xYz002", 503), ("Ab02xYz002", None), ("Ab04xYz004", None)]


def test_rate_limit_is_waited_out_and_a_rerun_is_cached(fake, monkeypatch):
    fake.failures = [(429, {"Retry-After": "3"})]
    assert len(connectors.load(f"openreview:{VENUE}")) == 3
    assert {"slept": 3.0} in fake.requests
    sent = len(fake.requests)
    assert len(connectors.load(f"openreview:{VENUE}")) == 3 and len(fake.requests) == sent
    monkeypatch.setenv("LITRANK_OFFLINE", "1")
    assert len(connectors.load(f"openreview:{VENUE}")) == 3
    with pytest.raises(connectors.SourceError, match="offline, and no cached answer"):
        connectors.load("openreview:NeurIPS.cc/2026/Conference")


def test_bad_venues_are_clear_errors(fake):
    with pytest.raises(connectors.SourceError, match="no accepted papers for ICML.cc/2026/Conference"):
        connectors.load("openreview:ICML.cc/2026/Conference")
    with pytest.raises(connectors.SourceError, match="name a venue"):
        connectors.load("openreview:")
    with pytest.raises(connectors.SourceError, match="--include takes"):
        connectors.load(f"openreview:{VENUE}?include=rejected")


def test_rank_and_fetch_from_the_cli(fake, tmp_path):
    ranked = CliRunner().invoke(main, ["rank", "-c", f"openreview:{VENUE}", "-n", "0", "--format", "jsonl"])
    assert ranked.exit_code == 0, ranked.stderr
    picks = [json.loads(line) for line in ranked.stdout.splitlines()]
    assert len(picks) == 3 and picks[-1]["title"] == "Conservative Offline Reinforcement Learning"
    out = tmp_path / "iclr.jsonl"
    fetched = CliRunner().invoke(main, ["fetch", f"openreview:{VENUE}", "--include", "submissions", "-o", str(out)])
    assert fetched.exit_code == 0, fetched.stderr
    assert len(connectors.load(out)) == 4 and "Wrote 4 papers" in fetched.stderr
