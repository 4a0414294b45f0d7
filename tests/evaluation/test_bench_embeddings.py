"""benchmarks/bench_embeddings.py with ``--model static``: the default install's table, measured
without the embeddings extra."""
from __future__ import annotations

import re

from benchmarks import bench_embeddings


def test_the_static_table_is_measured_without_the_extra(monkeypatch, capsys):
    import recommender.models.embeddings as embeddings

    monkeypatch.setattr(embeddings, "embeddings_available", lambda: False)
    texts = bench_embeddings.sample_texts(40)
    result = bench_embeddings.measure_static(texts)
    assert result["texts"] == len(texts) == 40 and result["model"].startswith("static:static-fitted-minilm-256#")
    assert result["load_seconds"] >= 0 and result["cold_seconds"] > 0
    assert bench_embeddings.main(["--texts", "40", "--model", "static"]) == 0
    assert re.search(r"static:static-fitted-minilm-256#\w+: load [\d.]+ s; \d+ texts/s \([\d.]+ s\); no cache",
                     capsys.readouterr().out)
    assert bench_embeddings.main(["--texts", "40", "--model", "default"]) == 2  # that one needs the extra
