"""Shared test helpers: where the fixtures and the read-only shared data live."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# ../shared (read-only real-world data, beside the repository; users never have it). CI runs the
# tests that read it a second time with $LITRANK_TEST_SHARED naming a missing folder, as on a
# clean clone without it: they must skip, never fail.
SHARED = Path(os.environ.get("LITRANK_TEST_SHARED") or REPO.parent / "shared")
SEEDS = SHARED / "seeds"
CONFERENCES = SHARED / "data" / "conferences"
EXAMPLE_LIBRARY = REPO / "examples" / "diffusion-library.bib"


def require(path: Path) -> Path:
    """Skip the test, with the reason, when shared data is not beside the repository."""
    if not path.exists():
        pytest.skip(f"shared data not found at ../shared/{path.relative_to(SHARED) if path.is_relative_to(SHARED) else path}")
    return path


@pytest.fixture
def seeds() -> Path:
    return require(SEEDS)


@pytest.fixture(autouse=True)
def isolated_user_state(tmp_path_factory, monkeypatch):
    """Keep the feedback store and caches of a test run out of the user's own directories, and
    rank without embeddings unless a test asks for them (the embeddings extra is installed in CI,
    where `litrank rank` would otherwise pick it up)."""
    state = tmp_path_factory.mktemp("litrank-state")
    monkeypatch.setenv("LITRANK_DATA_DIR", str(state / "data"))
    monkeypatch.setenv("LITRANK_CACHE_DIR", str(state / "cache"))
    monkeypatch.setenv("LITRANK_EMBEDDER", "none")
    # `--offline` sets $LITRANK_OFFLINE for the rest of the process: restored after every test.
    monkeypatch.setenv("LITRANK_OFFLINE", "0")
    # An empty settings file, so that no litrank.toml of the machine's changes a test's defaults.
    (state / "litrank.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("LITRANK_CONFIG", str(state / "litrank.toml"))
