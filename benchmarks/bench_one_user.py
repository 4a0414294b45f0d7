"""One user's ranking against the rules of the tools they would otherwise use, on the same inputs.

    python -m benchmarks.bench_one_user                 # 500-paper library x 3,000-paper collection
    python -m benchmarks.bench_one_user --collection 50000 --repeats 1 --no-embeddings

Side by side, each timed in this process after one warm-up run (median of ``--repeats``):

* **arxiv-sanity-lite's rule**: TF-IDF of title + abstract + authors (its ``compute.py``
  settings: word 1–2-grams, 10,000 features, min_df 5, max_df 0.5, sublinear tf) fitted on
  library + collection, then a linear SVM per user (``LinearSVC(class_weight="balanced",
  C=0.01, tol=1e-6)``, library = positives) scoring the collection by its decision function;
* **zotero-arxiv-daily's rule**: sentence-embedding cosine of each candidate to every library
  paper, weighted by ``1 / (1 + log10(rank + 1))`` of the library paper's recency (newest
  first), summed; with the all-MiniLM-L6-v2 embeddings from litrank's cache (warm: embedding
  cost is ``benchmarks.bench_embeddings``'s subject);
* **litrank**'s default hybrid model, without and (when the extra is installed) with the same
  cached embeddings: from scratch (the collection's representations fitted in the run, as
  ``litrank rank -c papers.jsonl`` does) and against a prebuilt collection index (``litrank
  index``; only the library is transformed and scored);

and the whole ``litrank rank`` process (import time included) for the same inputs, against
the JSONL collection and against its ``.litrank`` index. Prints seconds, ratios to the
arxiv-sanity-lite rule, peak RSS, and whether each of the issue's targets is met.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import connectors
from benchmarks.author_continuity import DEFAULT_CONFERENCES
from benchmarks.bench_rank_speed import COLLECTION_FILES, LIBRARY_FILES

TARGET_IN_PROCESS = 1.0  # seconds, 3,000 x 500, after warm-up
TARGET_CLI = 2.5  # seconds, the whole `litrank rank` process
TARGET_BIG = 10.0  # seconds, 50,000 x 500


def arxiv_sanity_rule(library, collection) -> np.ndarray:
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


def zotero_arxiv_daily_rule(library_vectors: np.ndarray, collection_vectors: np.ndarray) -> np.ndarray:
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", type=int, default=500)
    parser.add_argument("--collection", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conferences", type=Path, default=DEFAULT_CONFERENCES)
    parser.add_argument("--no-embeddings", action="store_true",
                        help="Leave out the embedding rows (embedding a large collection the first time takes long).")
    args = parser.parse_args(argv)
    if not args.conferences.is_dir():
        print("needs ../shared/data/conferences", file=sys.stderr)
        return 2
    library, collection = sample(args.conferences, args.library, args.collection)
    shape = f"{args.library:,} x {args.collection:,}"
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
            lambda: zotero_arxiv_daily_rule(embedder.embed(texts[: len(library)]), embedder.embed(texts[len(library):])),
            args.repeats)
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
    target = TARGET_IN_PROCESS if args.collection <= 3000 else TARGET_BIG
    for name in ("litrank hybrid, with index", "litrank hybrid, from scratch"):
        verdict = "met" if rows[name] < target else "NOT met"
        print(f"  target for {name} at {shape}: < {target:.1f} s in-process: {verdict}")

    litrank = Path(sys.executable).with_name("litrank")
    if litrank.exists():
        with tempfile.TemporaryDirectory() as tmp:
            library_path, collection_path = Path(tmp) / "library.bib", Path(tmp) / "collection.jsonl"
            index_path = Path(tmp) / "collection.litrank"
            connectors.dump(library, library_path)
            connectors.dump(collection, collection_path)
            subprocess.run([str(litrank), "-q", "index", str(collection_path), "-o", str(index_path), "--embedder",
                            "none"], check=True, capture_output=True)
            for label, source in (("with index", index_path), ("from the JSONL", collection_path)):
                command = [str(litrank), "-q", "rank", "-l", str(library_path), "-c", str(source), "-n", "20",
                           "--format", "jsonl", "--no-feedback", "--embedder", "none"]
                runs = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    subprocess.run(command, check=True, capture_output=True)
                    runs.append(time.perf_counter() - started)
                cli = statistics.median(runs)
                verdict = "met" if cli < TARGET_CLI else "NOT met"
                print(f"  litrank rank {label}, whole process: {cli:.2f} s (runs {', '.join(f'{r:.2f}' for r in runs)});"
                      f" target < {TARGET_CLI} s: {verdict}")
            importtime = subprocess.run([sys.executable, "-X", "importtime", "-c", "import recommender.cli"],
                                        capture_output=True, text=True).stderr.splitlines()
            total = max((int(line.split("|")[1]) for line in importtime if line.startswith("import time:")
                         and line.split("|")[1].strip().isdigit()), default=0)
            print(f"  import of the CLI (-X importtime, largest cumulative): {total / 1e6:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
