"""One user's ranking against the simplest peer, arxiv-sanity-lite's rule, whole processes.

    python -m benchmarks.bench_one_user                          # the four comparisons below
    python -m benchmarks.bench_one_user --before ../litrank-old  # and an earlier checkout beside them
    python -m benchmarks.bench_one_user --write-docs             # the table into docs/benchmarks.md
    python -m benchmarks.bench_one_user --embedder static --write-docs  # the default install's table there
    python -m benchmarks.bench_one_user --in-process             # in-process, with zotero-arxiv-daily's rule

**The rule** (arxiv-sanity-lite's): TF-IDF of title + abstract with word 1–2-grams and 20,000
features, fitted on library + collection, then ``LinearSVC(C=0.01, class_weight="balanced")``
with the library as positives, scoring the collection; a ``python -c`` script of its own that
imports only json, numpy and scikit-learn and reads the same JSONL files.

**The inputs**: the library is the first 500 papers with an abstract of the shared conference
lists (files in name order), the collections the last 3,000 and the last 30,000 papers.

**The comparisons**, each command a whole process, run alternately with the rule (``--repeats``
times at 3,000 papers, ``--big-repeats`` at 30,000) and reported as medians:

1. ``litrank rank`` of the 3,000 papers from their JSONL (cold: the collection indexed in the run);
2. the same against a prebuilt ``.litrank`` index of them (``litrank index --embedder none``);
3. 30,000 papers from their JSONL, time and peak memory;
4. the index on disk (KB a paper) and reading it (``read_index``) against reading the JSONL
   (``connectors.load``): the median over ``LOAD_ROUNDS`` processes a build, the builds
   alternating, of each process's median of 5 reads.

Every ``litrank rank`` runs ``-n 20 --format jsonl --no-feedback --embedder none`` (embedding
is ``benchmarks.bench_embeddings``'s subject); ``--embedder static`` runs the default install's
dense channel instead, index included, and writes ``one_user_static.json`` (and with
``--write-docs`` its own table in the docs, between its own markers). Peak memory is each process's maximum resident
set (``os.wait4``'s ``ru_maxrss``, as ``/usr/bin/time`` reports it): this process stays small
(the inputs are written by a child) so that a child's figure is its own. Each litrank build
keeps its compiled modules in a folder of the run (``PYTHONPYCACHEPREFIX``), as an installed
one has them: timed runs do not compile litrank's sources again. ``--before DIR`` also
runs the litrank of another checkout (``PYTHONPATH=DIR``) and checks that both print the same
picks. Results go to ``benchmarks/results/one_user.json``.

Length: the whole-process comparisons and the older in-process one (``--in-process``) share
their inputs and rules; the benchmarks folder holds its 15 modules already.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFERENCES = ROOT.parent / "shared" / "data" / "conferences"
RESULTS = ROOT / "benchmarks" / "results" / "one_user.json"
DOCS = ROOT / "docs" / "benchmarks.md"
DOCS_START, DOCS_END = "<!-- bench_one_user: start -->", "<!-- bench_one_user: end -->"


def docs_markers(embedder: str) -> tuple[str, str]:
    """The comments around an embedder's table in the docs (words alone: the original pair)."""
    if embedder == "none":
        return DOCS_START, DOCS_END
    return f"<!-- bench_one_user {embedder}: start -->", f"<!-- bench_one_user {embedder}: end -->"
N_LIBRARY, N_SMALL, N_BIG = 500, 3000, 30000
LOAD_ROUNDS = 3  # processes a build reading the 3,000-paper index (and its JSONL), medians of 5 reads each
GOALS = {"cold": 0.5, "index": 0.35, "big": 0.5, "big_memory": 1.0, "index_seconds": 0.6, "kb_per_paper": 3.0,
         "load_ratio": 1.0}

RULE = """
import json, sys
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.svm import LinearSVC

def read(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]

library, collection = read(sys.argv[1]), read(sys.argv[2])
texts = [paper.get("title", "") + " " + paper.get("abstract", "") for paper in library + collection]
features = TfidfVectorizer(ngram_range=(1, 2), max_features=20000).fit_transform(texts)
labels = np.zeros(features.shape[0])
labels[: len(library)] = 1
scores = LinearSVC(class_weight="balanced", C=0.01).fit(features, labels).decision_function(features[len(library):])
for i in np.argsort(-scores)[:20]:
    print(json.dumps({"id": collection[i]["id"], "score": float(scores[i])}))
"""

PREPARE = """
import sys
from pathlib import Path
import connectors
conferences, directory = Path(sys.argv[1]), Path(sys.argv[2])
papers = [paper for path in sorted(conferences.glob("*.jsonl.gz")) for paper in connectors.load(path)]
library = [paper for paper in papers if paper.abstract.strip()][:{n_library}]
connectors.dump(library, directory / "library.jsonl")
for name, n in (("small", {n_small}), ("big", {n_big})):
    connectors.dump(papers[-n:], directory / f"{{name}}.jsonl")
"""

LOAD_TIMES = """
import statistics, sys, time
import connectors
from recommender.ranking import read_index
def median(load, path):
    load(path)
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        load(path)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)
print(median(connectors.load, sys.argv[1]), median(read_index, sys.argv[2]))
"""


def run(command: list[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """One whole process: wall seconds, peak resident MB (ru_maxrss) and what it printed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:4])} ... failed: {err.read().decode(errors='replace')[-500:]}")
        return {"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024, "stdout": out.read().decode()}


def litrank_command(checkout: Path | None, bytecode: Path | None = None) -> tuple[list[str], dict]:
    """The ``litrank`` of this checkout, or of another (its sources first on the path; the
    commands run in the inputs' folder, so the working directory adds none).

    ``bytecode``: the folder its compiled modules are kept in. An installed litrank, like the
    scikit-learn the rule imports, has them; a checkout run where ``PYTHONDONTWRITEBYTECODE``
    is set would compile every module in every run (0.03-0.05 s of each 3,000-paper ranking).
    The first run of a build (its index) writes them; the runs that are timed read them."""
    env = dict(os.environ, PYTHONPATH=str(Path(checkout or ROOT).resolve()))
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return [sys.executable, "-c", "from recommender.cli import run; run()"], env


def picks(stdout: str) -> list[str]:
    return [json.loads(line)["id"] for line in stdout.splitlines() if line.strip()]


def summary(runs: list[dict]) -> dict:
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "peak_mb": statistics.median(r["peak_mb"] for r in runs),
            "runs": [round(r["seconds"], 3) for r in runs]}


def compare(args, directory: Path) -> dict:
    """The four comparisons; returns every figure (see the module docstring)."""
    library = directory / "library.jsonl"
    builds = {"litrank": None} | ({"before": args.before} if args.before else {})
    results: dict = {"inputs": {"library": N_LIBRARY, "small": N_SMALL, "big": N_BIG}, "machine_cores": os.cpu_count()}
    indexes = {}
    for build, checkout in builds.items():
        command, env = litrank_command(checkout, directory / f"bytecode-{build}")
        for size in ("small", "big"):
            path = directory / f"{build}-{size}.litrank"
            made = run(command + ["-q", "index", str(directory / f"{size}.jsonl"), "-o", str(path), "--embedder",
                                  args.embedder], env, directory)
            indexes[build, size] = path
            n = N_SMALL if size == "small" else N_BIG
            results[f"{build}_index_{size}"] = {"seconds": made["seconds"], "peak_mb": made["peak_mb"],
                                                 "bytes": path.stat().st_size,
                                                 "kb_per_paper": path.stat().st_size / 1024 / n}
    # Reading, once every index is built: LOAD_ROUNDS processes a build, the builds alternating
    # (read right after building the 30,000-paper index, one build's figure was 0.03 s off).
    loads: dict = {}
    for load_round in range(LOAD_ROUNDS):
        for build, checkout in list(builds.items())[:: 1 if load_round % 2 == 0 else -1]:
            _, env = litrank_command(checkout, directory / f"bytecode-{build}")
            read = run([sys.executable, "-c", LOAD_TIMES, str(directory / "small.jsonl"),
                        str(indexes[build, "small"])], env, directory)
            loads.setdefault(build, []).append(tuple(map(float, read["stdout"].split())))
    for build, measured in loads.items():
        results[f"{build}_load"] = {"jsonl_seconds": statistics.median(jsonl for jsonl, _ in measured),
                                    "index_seconds": statistics.median(index for _, index in measured)}
    rank_options = ["-q", "rank", "-l", str(library), "-n", "20", "--format", "jsonl", "--no-feedback", "--embedder",
                    args.embedder, "-c"]
    jobs = {"cold": ("small", "jsonl"), "index": ("small", "litrank"), "big": ("big", "jsonl")}
    runs: dict = {}
    for job, (size, kind) in jobs.items():
        repeats = args.big_repeats if size == "big" else args.repeats
        for repeat in range(repeats):
            # The rule has no index: its JSONL runs are its time against the index too.
            order = ([] if kind == "litrank" else [("rule", None)]) + list(builds.items())
            # Who goes first alternates, and so does who follows whom (a rotation kept this
            # checkout before --before's in every repeat).
            for name, checkout in order if repeat % 2 == 0 else order[::-1]:
                if name == "rule":
                    command, env = [sys.executable, "-c", RULE, str(library), str(directory / f"{size}.jsonl")], None
                else:
                    command, env = litrank_command(checkout, directory / f"bytecode-{name}")
                    source = indexes[name, size] if kind == "litrank" else directory / f"{size}.jsonl"
                    command = command + rank_options + [str(source)]
                result = run(command, env, directory)
                runs.setdefault((job, name), []).append(result)
                print(f"  {job:5s} {name:7s} {result['seconds']:6.2f} s {result['peak_mb']:7.0f} MB", file=sys.stderr)
    for (job, name), measured in runs.items():
        results[f"{job}_{name}"] = summary(measured)
    results["index_rule"] = results["cold_rule"]
    for job in jobs:
        for build in builds:
            row = results[f"{job}_{build}"]
            row["ratio"] = row["seconds"] / results[f"{job}_rule"]["seconds"]
    if args.before:
        results["same_picks"] = {job: picks(runs[job, "litrank"][0]["stdout"])
                                 == picks(runs[job, "before"][0]["stdout"]) for job in jobs}
    return results


def table(results: dict) -> str:
    """The Markdown table of ``results`` (medians; ratios are litrank's time over the rule's)."""
    builds = ["litrank"] + (["before"] if "before_load" in results else [])
    heads = {"litrank": "litrank", "before": "before (`--before`)"}

    def cell(build: str, job: str) -> str:
        row = results[f"{job}_{build}"]
        return f"{row['seconds']:.2f} s, {row['peak_mb']:,.0f} MB ({row['ratio']:.2f}×)"

    goal = {"cold": f"≤ {GOALS['cold']}×", "index": f"≤ {GOALS['index']}× and < {GOALS['index_seconds']} s",
            "big": f"≤ {GOALS['big']}×, memory ≤ the rule's"}
    names = {"cold": "3,000 × 500, from JSONL (cold)", "index": "3,000 × 500, against a `.litrank` index",
             "big": "30,000 × 500, from JSONL"}
    lines = ["| job | " + " | ".join(heads[b] for b in builds) + " | the rule | goal | met |",
             "| --- |" + " --- |" * (len(builds) + 3)]
    for job in ("cold", "index", "big"):
        rule = results[f"{job}_rule"]
        new = results[f"{job}_litrank"]
        met = new["ratio"] <= GOALS[job] and (job != "index" or new["seconds"] < GOALS["index_seconds"]) and \
            (job != "big" or new["peak_mb"] <= rule["peak_mb"])
        rule_cell = f"{rule['seconds']:.2f} s, {rule['peak_mb']:,.0f} MB"
        lines.append(f"| {names[job]} | " + " | ".join(cell(b, job) for b in builds)
                     + f" | {rule_cell} | {goal[job]} | {'yes' if met else 'no'} |")
    for size, n in (("small", N_SMALL), ("big", N_BIG)):
        sizes = " | ".join(f"{results[f'{b}_index_{size}']['bytes'] / 1e6:.1f} MB "
                           f"({results[f'{b}_index_{size}']['kb_per_paper']:.1f} KB a paper)" for b in builds)
        kb = results[f"litrank_index_{size}"]["kb_per_paper"]
        lines.append(f"| index of {n:,} papers on disk | {sizes} | | ≤ {GOALS['kb_per_paper']:.0f} KB a paper | "
                     f"{'yes' if kb <= GOALS['kb_per_paper'] else 'no'} |")
    loads = " | ".join(f"{results[f'{b}_load']['index_seconds']:.3f} s vs {results[f'{b}_load']['jsonl_seconds']:.3f} s"
                       for b in builds)
    load = results["litrank_load"]
    lines.append(f"| reading the 3,000-paper index vs its JSONL | {loads} | | no slower than the JSONL | "
                 f"{'yes' if load['index_seconds'] <= load['jsonl_seconds'] * GOALS['load_ratio'] else 'no'} |")
    return "\n".join(lines)


def write_docs(text: str, docs: Path = DOCS, embedder: str = "none") -> None:
    start, end = docs_markers(embedder)
    page = docs.read_text(encoding="utf-8")
    if start not in page or end not in page:
        raise SystemExit(f"{docs} has no {start} ... {end} block to replace")
    before, rest = page.split(start, 1)
    docs.write_text(before + start + "\n" + text + "\n" + end + rest.split(end, 1)[1], encoding="utf-8")


def docs_text(results: dict) -> str:
    """The docs' paragraph of one run: its command, the machine, the repeats, then its table."""
    cores = f"{results['machine_cores']}-core machine"
    before = f"; *before* is commit {results['before_commit']}" if results.get("before_commit") else ""
    return (f"`{results['command']}`, {cores}, medians of {results['repeats']} runs ({results['big_repeats']} at "
            f"30,000); ratios are litrank's time over the rule's in the same run{before}:\n\n{results['table']}")


def whole_processes(args) -> int:
    if not args.conferences.is_dir():
        print("needs ../shared/data/conferences", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        prepare = PREPARE.format(n_library=N_LIBRARY, n_small=N_SMALL, n_big=N_BIG)
        run([sys.executable, "-c", prepare, str(args.conferences), str(directory)], litrank_command(None)[1], directory)
        results = compare(args, directory)
    results["table"] = table(results)
    if args.before:
        commit = subprocess.run(["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True)
        results["before_commit"] = commit.stdout.strip() if commit.returncode == 0 else None
    repeats = f" --repeats {args.repeats}" if args.repeats != 5 else ""
    before = " --before CHECKOUT" if args.before else ""  # (the path is this machine's; the commit is said)
    embedder = f" --embedder {args.embedder}" if args.embedder != "none" else ""
    results["command"] = f"python -m benchmarks.bench_one_user{repeats}{before}{embedder}"
    results["embedder"] = args.embedder
    results["repeats"], results["big_repeats"] = args.repeats, args.big_repeats
    print(results["table"])
    if args.before:
        print(f"the same 20 picks as --before: {results['same_picks']}")
    output = RESULTS if args.embedder == "none" else RESULTS.with_name(f"one_user_{args.embedder}.json")
    output.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.write_docs:
        write_docs(docs_text(results), embedder=args.embedder)
    return 0


# The in-process comparison (--in-process): imports made where used, so that the process that
# runs the whole-process comparisons stays small (its children's peak memory is their own).
def arxiv_sanity_rule(library, collection):
    import itertools

    import numpy as np
    from sklearn import svm
    from sklearn.feature_extraction.text import TfidfVectorizer

    def text(paper):
        return " ".join([paper.title, paper.abstract, " ".join(paper.authors)])

    vectorizer = TfidfVectorizer(strip_accents="unicode", lowercase=True, analyzer="word", stop_words="english",
                                 token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b", ngram_range=(1, 2),
                                 max_features=10000, norm="l2", use_idf=True, smooth_idf=True, sublinear_tf=True,
                                 max_df=0.5, min_df=5)
    X = vectorizer.fit_transform([text(p) for p in itertools.chain(library, collection)]).astype(np.float32)
    y = np.zeros(X.shape[0])
    y[: len(library)] = 1
    classifier = svm.LinearSVC(class_weight="balanced", max_iter=10000, tol=1e-6, C=0.01)
    classifier.fit(X, y)
    return classifier.decision_function(X[len(library):])


def zotero_arxiv_daily_rule(library_vectors, collection_vectors):
    import numpy as np

    decay = 1 / (1 + np.log10(np.arange(len(library_vectors)) + 1))
    decay = decay / decay.sum()
    return (collection_vectors @ library_vectors.T * decay).sum(axis=1) * 10


def litrank_rule(library, collection, embedder=None):
    """``collection``: papers (from scratch) or a CollectionIndex (prebuilt)."""
    from recommender.ranking import Ranker, make_model

    return Ranker(make_model("hybrid", embedder)).rank(library, collection, top=20)


def litrank_index(collection, embedder=None):
    from recommender.ranking import make_model

    return make_model("hybrid", embedder).index_builder().build(collection)


def timed(function, repeats: int) -> tuple[float, list[float]]:
    function()  # warm-up: imports, caches, first-call costs
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs), runs


def sample(conferences: Path, n_library: int, n_collection: int):
    import dataclasses
    import itertools
    import random

    import connectors
    from benchmarks.bench_rank_speed import COLLECTION_FILES, LIBRARY_FILES

    rng = random.Random(0)
    library = rng.sample([p for name in LIBRARY_FILES for p in connectors.load(conferences / name)], n_library)
    pool = [p for name in COLLECTION_FILES for p in connectors.load(conferences / name)]
    # A larger collection takes more conference lists (never the library's), so that its papers
    # are distinct ones, with a vocabulary that grows as a real one does.
    others = iter(sorted(path for path in conferences.glob("*.jsonl.gz")
                         if path.name not in LIBRARY_FILES + COLLECTION_FILES))
    while len(pool) < n_collection and (path := next(others, None)) is not None:
        pool += connectors.load(path)
    rng.shuffle(pool)
    collection = list(itertools.islice(itertools.cycle(pool), n_collection))
    if n_collection > len(pool):  # repeated papers get ids of their own, as distinct submissions would
        collection = [p if i < len(pool) else dataclasses.replace(p, id=f"{p.id}#{i}")
                      for i, p in enumerate(collection)]
    return library, collection


def in_process(args) -> int:
    """The in-process comparison: each rule and litrank timed in this process after a warm-up."""
    import itertools
    import resource

    if not args.conferences.is_dir():
        print("needs ../shared/data/conferences", file=sys.stderr)
        return 2
    library, collection = sample(args.conferences, args.library, args.collection)
    rows: dict[str, float] = {}
    print(f"one user, {args.library:,}-paper library x {args.collection:,}-paper collection, in-process after "
          f"warm-up (median of {args.repeats}):")
    rows["arxiv-sanity-lite rule"], runs = timed(lambda: arxiv_sanity_rule(library, collection), args.repeats)
    print(f"  {'arxiv-sanity-lite rule':32s} {rows['arxiv-sanity-lite rule']:7.2f} s")
    embedder = None
    if args.no_embeddings:
        print("  (no embeddings: --no-embeddings)")
    else:
        try:
            from recommender.models.embeddings import SentenceEmbedder, embeddings_available

            if embeddings_available():
                embedder = SentenceEmbedder()
        except Exception as exc:  # the extra is optional: say why the embedding rows are missing
            print(f"  (no embeddings: {exc})")
    if embedder is not None:
        texts = [p.text for p in itertools.chain(library, collection)]
        embedder.embed(texts)  # fill the cache once; every timed run below reads it
        rows["zotero-arxiv-daily rule"], _ = timed(
            lambda: zotero_arxiv_daily_rule(embedder.embed(texts[: len(library)]),
                                            embedder.embed(texts[len(library):])), args.repeats)
        print(f"  {'zotero-arxiv-daily rule (cached)':32s} {rows['zotero-arxiv-daily rule']:7.2f} s")
    started = time.perf_counter()
    index = litrank_index(collection)
    index_seconds = time.perf_counter() - started
    rows["litrank hybrid, from scratch"], _ = timed(lambda: litrank_rule(library, collection), args.repeats)
    rows["litrank hybrid, with index"], _ = timed(lambda: litrank_rule(library, index), args.repeats)
    if embedder is not None:
        dense_index = litrank_index(collection, embedder)
        rows["litrank hybrid + embeddings, from scratch"], _ = timed(
            lambda: litrank_rule(library, collection, embedder), args.repeats)
        rows["litrank hybrid + embeddings, with index"], _ = timed(
            lambda: litrank_rule(library, dense_index, embedder), args.repeats)
    for name in [name for name in rows if name.startswith("litrank")]:
        print(f"  {name:42s} {rows[name]:7.2f} s")
    print(f"  (building the index once: {index_seconds:.2f} s)")
    print(f"  peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    base = rows["arxiv-sanity-lite rule"]
    for name, seconds in rows.items():
        if name != "arxiv-sanity-lite rule":
            print(f"  {name} / arxiv-sanity-lite rule: {seconds / base:.2f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="Runs of each 3,000-paper job (default 5).")
    parser.add_argument("--big-repeats", type=int, default=3, help="Runs of each 30,000-paper job (default 3).")
    parser.add_argument("--before", type=Path, help="Another litrank checkout to run beside this one.")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"Replace the embedder's table in {DOCS.relative_to(ROOT)} (words alone and the static "
                             "table have one each).")
    parser.add_argument("--embedder", default="none", choices=["none", "static"],
                        help="litrank's --embedder in every index and rank (default none; 'static': the default "
                             "install's dense channel, results in one_user_static.json).")
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES)
    parser.add_argument("--in-process", action="store_true", help="The older in-process comparison instead.")
    parser.add_argument("--library", type=int, default=500, help="(--in-process) library size")
    parser.add_argument("--collection", type=int, default=3000, help="(--in-process) collection size")
    parser.add_argument("--no-embeddings", action="store_true", help="(--in-process) leave out the embedding rows.")
    args = parser.parse_args(argv)
    return in_process(args) if args.in_process else whole_processes(args)


if __name__ == "__main__":
    sys.exit(main())
