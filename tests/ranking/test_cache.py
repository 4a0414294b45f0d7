"""`litrank cache info|clear`, and the embedding cache shared by concurrent runs."""
from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from connectors.online import http_cache
from recommender.cli import main
from recommender.models import embeddings
from tests.ranking.test_embeddings import FakeModel


def _embedder(model_dir: Path, cache_dir: Path) -> embeddings.SentenceEmbedder:
    embedder = embeddings.SentenceEmbedder(str(model_dir), cache_dir=cache_dir, batch_size=4)
    embedder._st, embedder._dim = FakeModel(), 8
    return embedder


def _embed_in_a_process(model_dir: str, cache_dir: str, texts: list[str], result) -> None:
    embeddings.embeddings_available = lambda: True  # a worker process of its own: no monkeypatch there
    embedder = _embedder(Path(model_dir), Path(cache_dir))
    vectors = embedder.embed(texts)
    result.put((texts[0], embedder.n_embedded, embedder.n_cached, vectors.tobytes(), embedder._db_failed))


@pytest.fixture
def model_dir(tmp_path) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text("{}")
    return directory


def cli(*args):
    return CliRunner().invoke(main, list(args))


def test_info_then_clear_embeddings_and_http(model_dir, tmp_path, httpserver, monkeypatch):
    monkeypatch.setattr(embeddings, "embeddings_available", lambda: True)
    cache_root = Path(os.environ["LITRANK_CACHE_DIR"])
    _embedder(model_dir, embeddings.default_cache_dir()).embed([f"text {i}" for i in range(30)])
    httpserver.expect_request("/paper/1").respond_with_json({"title": "A paper"})
    with http_cache.CachedSession("test") as session:
        assert session.get(httpserver.url_for("/paper/1")).json() == {"title": "A paper"}
        session.get(httpserver.url_for("/paper/1"))
        assert session.requests_sent == 1 and session.cache_hits == 1
    report = json.loads(cli("cache", "info", "--format", "json").output)
    (model,) = report["embeddings"]["models"]
    assert model["vectors"] == 30 and model["dim"] == 8 and model["model_id"].startswith("path:")
    assert model["bytes"] > 30 * 8 * 4 and Path(model["path"]).is_relative_to(cache_root)
    assert report["http"]["answers"] == 1 and report["http"]["sources"] == {"localhost": 1}
    table = cli("cache", "info").output
    assert "30 texts, 8 dimensions" in table and "1 answers (localhost 1)" in table

    result = cli("cache", "clear", "--http")
    assert result.exit_code == 0 and "Remote answers: removed 1" in result.output
    assert "Embeddings" not in result.output
    assert json.loads(cli("cache", "info", "--format", "json").output)["embeddings"]["models"][0]["vectors"] == 30
    result = cli("cache", "clear")
    assert result.exit_code == 0 and "Embeddings: removed 1 cache file" in result.output
    after = json.loads(cli("cache", "info", "--format", "json").output)
    assert after["embeddings"]["models"] == [] and after["http"]["answers"] == 0
    assert not list(embeddings.default_cache_dir().glob("*.sqlite*"))
    # Nothing else of the user's state lives in the cache directory; clearing twice is fine.
    assert cli("cache", "clear").exit_code == 0


def test_two_concurrent_runs_share_one_cache(model_dir, tmp_path, monkeypatch):
    """Two processes embed overlapping texts into the same cache at once: both get every
    vector, the same vector for the same text, and the cache ends with the union."""
    cache_dir = tmp_path / "shared-cache"
    first = [f"paper {i}" for i in range(0, 400)]
    second = [f"paper {i}" for i in range(200, 600)]
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [context.Process(target=_embed_in_a_process, args=(str(model_dir), str(cache_dir), texts, results))
               for texts in (first, second)]
    for worker in workers:
        worker.start()
    answers = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    blocks = {}
    for first_text, n_embedded, n_cached, blob, cache_failed in answers:
        assert not cache_failed, f"the run starting with {first_text!r} could not use the shared cache"
        assert n_embedded + n_cached == 400
        blocks[first_text] = np.frombuffer(blob, dtype=np.float32).reshape(400, 8)
        assert np.allclose(np.linalg.norm(blocks[first_text], axis=1), 1)
    # The 200 texts both asked for got the same vectors in both processes.
    assert np.array_equal(blocks["paper 0"][200:], blocks["paper 200"][:200])
    (summary,) = embeddings.cache_summary(cache_dir)
    assert summary["vectors"] == 600 and "error" not in summary
    monkeypatch.setattr(embeddings, "embeddings_available", lambda: True)
    again = _embedder(model_dir, cache_dir)
    again.embed(first + second)
    assert again.n_embedded == 0 and again.n_cached == 600
