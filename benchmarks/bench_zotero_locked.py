"""Reading a running Zotero's database: in place against a whole copy, on a generated 1 GB file.

    python -m benchmarks.bench_zotero_locked              # 1,024 MB, 20,000 papers
    python -m benchmarks.bench_zotero_locked --mb 200 --items 5000

The database is the real Zotero 6 library of ``../shared/data/zotero-sqlite`` grown with papers
from the shared conference lists and with ``syncCache`` rows (the JSON of synced objects Zotero
keeps; with the full-text index, what makes real databases big) to the size asked for, in a
temporary directory. A second process then holds it as a running Zotero does
(``locking_mode=EXCLUSIVE`` after a write), and ``zotero_sqlite.load`` reads it:

* rollback journal (Zotero ≤ 9), Zotero idle: read in place (``immutable=1``) against the
  earlier way, a copy of the whole file (``READ_LOCKED_IN_PLACE = False``), alternately,
  ``--repeats`` times each (median);
* WAL, everything checkpointed: read in place;
* WAL with commits still in the log: a copy is needed (a copy-on-write clone where the file
  system offers one); timed too.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.author_continuity import DEFAULT_CONFERENCES
from connectors.zotero import sqlite as zotero_sqlite

SHARED_DB = DEFAULT_CONFERENCES.parent / "zotero-sqlite" / "real-library-schema120.sqlite"
# Holds the database as Zotero does until its standard input closes.
HOLDER = """
import sqlite3, sys
holder = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "wal":
    holder.execute("PRAGMA journal_mode=WAL")
holder.execute("PRAGMA locking_mode=EXCLUSIVE")
holder.execute("PRAGMA wal_autocheckpoint=0")
holder.execute("UPDATE version SET version=version WHERE schema='userdata'")  # a write takes the lock
if sys.argv[3] == "checkpoint":
    holder.execute("PRAGMA wal_checkpoint(TRUNCATE)")
elif sys.argv[3] == "pending":
    holder.execute("UPDATE items SET version=version+1 WHERE itemID IN (SELECT itemID FROM items LIMIT 100)")
print("held", flush=True)
sys.stdin.read()
"""


def papers_for(count: int):
    files = sorted(DEFAULT_CONFERENCES.glob("*.jsonl.gz"))
    rows = (json.loads(line) for path in files for line in gzip.open(path, "rt", encoding="utf-8"))
    return list(itertools.islice((r for r in rows if r.get("title") and r.get("abstract")), count))


def build(target: Path, megabytes: int, items: int) -> None:
    from tests.zotero_fixtures import add_item

    shutil.copyfile(SHARED_DB, target)
    connection = sqlite3.connect(target, isolation_level=None)
    connection.execute("BEGIN")
    for number, paper in enumerate(papers_for(items)):
        authors = [tuple(a.rsplit(" ", 1)) if " " in a else ("", a) for a in paper.get("authors", [])[:8]]
        add_item(connection, f"B{number:07d}", "conferencePaper",
                 {"title": paper["title"], "abstractNote": paper["abstract"], "date": str(paper.get("year", "")),
                  "proceedingsTitle": paper.get("venue", ""), "url": paper.get("url", "")},
                 creators=authors, added="2025-01-01 10:00:00")
    connection.execute("COMMIT")
    blob = json.dumps({"key": "X", "data": {"abstractNote": "x" * 8000}})
    number = 0
    while target.stat().st_size < megabytes * 2**20:
        connection.execute("BEGIN")
        connection.executemany("INSERT INTO syncCache VALUES (1, ?, 3, 1, ?)",
                               ((f"S{n:07d}", blob) for n in range(number, number + 5000)))
        connection.execute("COMMIT")
        number += 5000
    connection.close()


def timed_load(database: Path, in_place: bool) -> float:
    zotero_sqlite.READ_LOCKED_IN_PLACE = in_place
    start = time.perf_counter()
    papers = zotero_sqlite.load(database)
    elapsed = time.perf_counter() - start
    zotero_sqlite.READ_LOCKED_IN_PLACE = True
    assert len(papers) > 0
    return elapsed


def held(database: Path, mode: str, state: str) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(database), mode, state],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def release(holder: subprocess.Popen) -> None:
    holder.stdin.close()
    holder.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="database size in MB (default 1024)")
    parser.add_argument("--items", type=int, default=20000, help="papers added (default 20,000)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not SHARED_DB.exists():
        sys.exit("needs ../shared/data/zotero-sqlite/real-library-schema120.sqlite beside the repository")
    with tempfile.TemporaryDirectory(prefix="litrank-bench-zotero-") as tmp:
        database = Path(tmp) / "zotero.sqlite"
        start = time.perf_counter()
        build(database, args.mb, args.items)
        size = database.stat().st_size / 2**20
        n_papers = len(zotero_sqlite.load(database))
        print(f"generated {size:,.0f} MB, {n_papers:,} papers, in {time.perf_counter() - start:.0f} s")

        holder = held(database, "delete", "idle")
        in_place, copied = [], []
        for _ in range(args.repeats):
            copied.append(timed_load(database, in_place=False))
            in_place.append(timed_load(database, in_place=True))
        release(holder)
        a, b = statistics.median(in_place), statistics.median(copied)
        print(f"rollback journal, Zotero running and idle: in place {a:.2f} s, whole copy {b:.2f} s "
              f"(copy / in place: {b / a:.1f}x; the copy also writes {size:,.0f} MB to {tempfile.gettempdir()})")

        holder = held(database, "wal", "checkpoint")
        wal_in_place = statistics.median(timed_load(database, in_place=True) for _ in range(args.repeats))
        release(holder)
        holder = held(database, "wal", "pending")
        wal_pending = statistics.median(timed_load(database, in_place=True) for _ in range(args.repeats))
        release(holder)
        print(f"WAL, Zotero running, log checkpointed: in place {wal_in_place:.2f} s; "
              f"commits still in the log: copy {wal_pending:.2f} s")
        os.sync()


if __name__ == "__main__":
    main()
