"""The whole-process benchmark against arxiv-sanity-lite's rule: a child's time and peak memory
are its own, the rule ranks real papers, and the docs table is replaced in place."""
from __future__ import annotations

import json
import sys

import pytest

from benchmarks import bench_one_user
from tests.conftest import DATA, EXAMPLE_LIBRARY


def test_a_childs_peak_memory_is_its_own_not_this_process():
    small = bench_one_user.run([sys.executable, "-c", "pass"])
    big = bench_one_user.run([sys.executable, "-c", "import sys; b = bytearray(300 * 2**20); sys.stdout.write('ok')"])
    assert big["stdout"] == "ok" and big["seconds"] > 0
    assert big["peak_mb"] > 300 > small["peak_mb"]
    with pytest.raises(RuntimeError, match="failed"):
        bench_one_user.run([sys.executable, "-c", "raise SystemExit(3)"])


def test_the_rule_ranks_the_collection_by_its_svm(tmp_path):
    pytest.importorskip("sklearn")
    import connectors

    library, collection = tmp_path / "library.jsonl", tmp_path / "collection.jsonl"
    connectors.dump(connectors.load(EXAMPLE_LIBRARY), library)
    connectors.dump(connectors.load(DATA / "report-collection.jsonl"), collection)
    result = bench_one_user.run([sys.executable, "-c", bench_one_user.RULE, str(library), str(collection)])
    rows = [json.loads(line) for line in result["stdout"].splitlines()]
    ids = {paper.id for paper in connectors.load(collection)}
    assert len(rows) == 14 and {row["id"] for row in rows} == ids
    assert [row["score"] for row in rows] == sorted((row["score"] for row in rows), reverse=True)


def test_the_docs_table_is_replaced_between_its_markers(tmp_path):
    page = tmp_path / "benchmarks.md"
    start, end = bench_one_user.DOCS_START, bench_one_user.DOCS_END
    page.write_text(f"# Benchmarks\n\nbefore\n\n{start}\nold table\n{end}\n\nafter\n", encoding="utf-8")
    bench_one_user.write_docs("| new | table |", page)
    bench_one_user.write_docs("| newer | table |", page)
    assert page.read_text(encoding="utf-8") == f"# Benchmarks\n\nbefore\n\n{start}\n| newer | table |\n{end}\n\nafter\n"
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no"):
        bench_one_user.write_docs("x", bare)
    assert bare.read_text(encoding="utf-8") == "no markers\n"
