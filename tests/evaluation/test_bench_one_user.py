"""The whole-process benchmark against arxiv-sanity-lite's rule: a child's time and peak memory
are its own, the rule ranks real papers, and the docs table is replaced in place."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_one_user
from tests.conftest import DATA, EXAMPLE_LIBRARY


def test_a_childs_peak_memory_is_its_own_when_the_benchmark_process_is_small():
    # A child's ru_maxrss starts at its parent's peak when it was forked (Linux carries it
    # across exec), so the benchmark's own process stays small; here a small process measures.
    measure = "\n".join([
        "import json, sys",
        "from benchmarks.bench_one_user import run",
        "small = run([sys.executable, '-c', 'pass'])",
        "big = run([sys.executable, '-c', ALLOCATE])",
        "print(json.dumps([small, big]))",
    ]).replace("ALLOCATE", repr("import sys; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
                                "sys.stdout.write('ok')"))
    result = subprocess.run([sys.executable, "-c", measure], capture_output=True, text=True, check=True,
                            cwd=Path(bench_one_user.__file__).parents[1])
    small, big = json.loads(result.stdout)
    assert big["stdout"] == "ok" and big["seconds"] > 0
    assert big["peak_mb"] > 300 > 100 > small["peak_mb"]
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


def test_each_embedder_writes_its_own_table_and_leaves_the_other(tmp_path):
    """Words alone and the static table have a table each in the docs, each between its own
    markers: writing one leaves the other as it was."""
    page = tmp_path / "benchmarks.md"
    none_start, none_end = bench_one_user.docs_markers("none")
    static_start, static_end = bench_one_user.docs_markers("static")
    assert static_start != none_start and "static" in static_start
    page.write_text(f"{none_start}\nwords\n{none_end}\n\n{static_start}\nstatic\n{static_end}\n", encoding="utf-8")
    results = {"command": "python -m benchmarks.bench_one_user --embedder static", "machine_cores": 2, "repeats": 5,
               "big_repeats": 3, "before_commit": "abc1234", "table": "| new | static |"}
    bench_one_user.write_docs(bench_one_user.docs_text(results), page, embedder="static")
    text = page.read_text(encoding="utf-8")
    assert f"{none_start}\nwords\n{none_end}" in text
    assert "| new | static |" in text and "\nstatic\n" not in text
    assert "`python -m benchmarks.bench_one_user --embedder static`, 2-core machine, medians of 5 runs (3 at " \
           "30,000)" in text and "*before* is commit abc1234" in text
