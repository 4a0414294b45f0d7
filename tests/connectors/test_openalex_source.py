"""openalex: collections through the real pyalex client against a fake OpenAlex API on loopback
(tests/openalex_server.py): a venue-year, DOIs, cursor paging, 429 with Retry-After, cache."""
from __future__ import annotations

import pytest

import connectors
from tests.fakes.openalex_server import FakeOpenAlex

pytest.importorskip("pyalex")


@pytest.fixture
def fake(httpserver, monkeypatch):
    handler = FakeOpenAlex()
    httpserver.expect_request("/works").respond_with_handler(handler)
    monkeypatch.setenv("LITRANK_OPENALEX_API", httpserver.url_for("").rstrip("/"))
    monkeypatch.delenv("LITRANK_OFFLINE", raising=False)
    monkeypatch.setattr("connectors.online.http_cache.time.sleep", lambda seconds: handler.requests.append({"slept": seconds}))
    return handler


def test_a_venue_year_with_abstracts_rebuilt(fake, monkeypatch):
    import pyalex

    original = pyalex.Works.paginate
    monkeypatch.setattr(pyalex.Works, "paginate", lambda self, **kw: original(self, **{**kw, "per_page": 2}))
    fake.failures, fake.fail_from_page = [(502, {})], 1  # the second page fails once
    papers = connectors.load("openalex:source/S4306420609?year=2024")
    assert [p.id for p in papers] == ["10.5555/jmlr.2024.001", "10.5555/jmlr.2024.002", "10.5555/jmlr.2024.003",
                                      "W1000000004"]
    first = papers[0]
    assert first.abstract == "We train masked diffusion language models that generate text by parallel unmasking."
    assert first.authors == ["Ada Lovelace", "Alan Turing"] and first.year == 2024
    assert first.venue == "Journal of Machine Learning Research" and first.fields["pdf"] == "https://example.org/1.pdf"
    assert papers[3].abstract == "" and papers[3].url == "https://openalex.org/W1000000004"
    assert [(r.get("cursor"), r.get("status")) for r in fake.requests if "slept" not in r] == [
        ("*", None), ("2", 502), ("2", None)]


def test_dois_rate_limit_and_cache(fake, monkeypatch):
    fake.failures = [(429, {"Retry-After": "2"})]
    papers = connectors.load("openalex:doi/10.5555/JMLR.2023.009,https://doi.org/10.5555/jmlr.2024.003")
    assert {p.id for p in papers} == {"10.5555/jmlr.2023.009", "10.5555/jmlr.2024.003"}
    assert {"slept": 2.0} in fake.requests
    sent = len(fake.requests)
    monkeypatch.setenv("LITRANK_OFFLINE", "1")
    again = connectors.load("openalex:doi/10.5555/JMLR.2023.009,https://doi.org/10.5555/jmlr.2024.003")
    assert len(again) == 2 and len(fake.requests) == sent


def test_bad_uris(fake):
    with pytest.raises(connectors.SourceError, match=r"needs \?year=YYYY"):
        connectors.load("openalex:source/S4306420609")
    with pytest.raises(connectors.SourceError, match="not an OpenAlex source"):
        connectors.load("openalex:venue/JMLR")
    with pytest.raises(connectors.SourceError, match="no works"):
        connectors.load("openalex:doi/10.9999/none")
    fake.failures = [(500, {})] * 6
    with pytest.raises(connectors.SourceError, match="HTTP 500"):
        connectors.load("openalex:doi/10.5555/jmlr.2024.002")
