"""``litrank evaluate``: ranking quality on human judgements (CSFCube), on your own library, and on
the author-continuity proxy."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

import connectors
from recommender import defaults
from recommender.cli.common import fail, load_sources, make_embedder, say
from recommender.report import formats as report

BENCHMARKS = ("library", "csfcube", "author-continuity")
CSFCUBE_FOLDS = ("fold1_test", "fold1_dev", "fold2_test", "fold2_dev", "all")
# Where the developers' data lies beside a source checkout (shared/data/ next to the repository:
# recommender/cli/evaluate.py -> parents[2] is the checkout, parents[3] the folder holding it).
_CHECKOUT_SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def _data_directory(given: str | None, environment: str, name: str) -> Path:
    """--data, else $environment, else the developers' shared/data/<name> beside the working
    directory or the source checkout."""
    if given:
        return Path(given)
    if os.environ.get(environment):
        return Path(os.environ[environment])
    for candidate in (Path.cwd().parent / "shared" / "data" / name, _CHECKOUT_SHARED / name):
        if candidate.is_dir():
            return candidate
    fail(f"no {name} data found; pass --data DIR (or set ${environment})")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default="library", show_default=True,
              help="csfcube: expert relevance judgements (the measure litrank is tuned by); library: how well "
                   "papers hidden from your own library are found again (a proxy); author-continuity: an "
                   "author's next papers from their earlier ones (a proxy, on conference lists given by --data).")
@click.option("--data", default=None, metavar="DIR",
              help="csfcube: the CSFCube directory (default $LITRANK_CSFCUBE_DIR); author-continuity: the "
                   "folder of <venue><year>.jsonl.gz conference lists (default $LITRANK_CONFERENCES_DIR).")
@click.option("--fold", type=click.Choice(CSFCUBE_FOLDS), default="fold1_test", show_default=True,
              help="csfcube: the fold the main table reports (litrank is tuned on fold1_dev).")
@click.option("--methods", default=None, metavar="A,B,...",
              help="Only these methods (default: all, with the embedding ones when an embedder is in use).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="csfcube: only the first N query-facets of each fold (a quick check, not a result); "
                   "author-continuity: a seeded sample of N authors per configuration.")
@click.option("-l", "--library", "library_sources", multiple=True, metavar="SOURCE",
              help="library: your library (repeatable). Default: the bundled example library.")
@click.option("-c", "--collection", "collection_sources", multiple=True, metavar="SOURCE",
              help="library: the collection to hide library papers in. Default: the bundled ICML 2026 list.")
@click.option("--holdout", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.2, show_default=True,
              help="library: share of the library hidden among the collection in each repeat.")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="library: random hold-outs to average.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the hold-out draws and of `random`.")
@click.option("--embedder", default=None, metavar="NAME|PATH|none",
              help="Dense embeddings for litrank and the embedding baselines (default: the bundled model when the "
                   "embeddings extra is installed; 'none' to leave them out).")
@click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def evaluate(benchmark, data, fold, methods, limit, library_sources, collection_sources, holdout, repeats, seed,
             embedder, output_format):
    """Measure ranking quality: on expert judgements, on your library, or on author continuity.

    \b
      litrank evaluate --benchmark csfcube                  # human judgements; what the default model is tuned by
      litrank evaluate --benchmark csfcube --format json --embedder none
      litrank evaluate                                      # hide 20% of the bundled library, find it again
      litrank evaluate -l refs.bib -c icml2026.jsonl --repeats 10
      litrank evaluate --benchmark author-continuity --limit 50

    All methods run on the same tasks in the same run. CSFCube reports NDCG%20 and MAP (the
    dataset's protocol) for all facets and per facet; the library and author-continuity
    benchmarks report nDCG@10, recall@10, recall@20 and MRR.
    """
    chosen = [m.strip() for m in methods.split(",") if m.strip()] if methods else None
    embedding_model = make_embedder(embedder)
    try:
        if benchmark == "csfcube":
            _csfcube(_data_directory(data, "LITRANK_CSFCUBE_DIR", "csfcube"), fold, chosen, limit, embedding_model,
                     seed, output_format)
        elif benchmark == "author-continuity":
            _author_continuity(_data_directory(data, "LITRANK_CONFERENCES_DIR", "conferences"), chosen, limit,
                               embedding_model, output_format)
        else:
            _library(library_sources, collection_sources, holdout, repeats, seed, chosen, embedding_model,
                     output_format)
    except (connectors.SourceError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))


def _csfcube(directory: Path, fold: str, methods, limit, embedder, seed: int, output_format: str) -> None:
    from connectors.files import csfcube
    from recommender.evaluation.human_judgements import (
        EMBEDDING_METHODS,
        FACETS,
        LEXICAL_METHODS,
        evaluate_csfcube,
        summary,
    )

    data = csfcube.load(directory)
    methods = methods or list(LEXICAL_METHODS) + (list(EMBEDDING_METHODS) if embedder is not None else [])
    folds = {name: data.query_facets(None if name == "all" else name) for name in ("fold1_dev", "fold1_test", "all")}
    if fold not in folds:
        folds[fold] = data.query_facets(fold)
    if limit:
        folds = {name: pairs[:limit] for name, pairs in folds.items()}
    needed = list(dict.fromkeys(pair for pairs in folds.values() for pair in pairs))
    if embedder is not None:
        say(f"Embedding up to {len({p for pair in needed for p in data.pool(*pair)} | {q for q, _ in needed})} "
                   "papers (cached on disk: a second run embeds none)...")
    results = evaluate_csfcube(data, methods, needed, embedder=embedder, seed=seed)
    by_fold = {name: summary(results, pairs) for name, pairs in folds.items()}
    if output_format == "json":
        payload = {"benchmark": "csfcube", "fold": fold, "query_facets": len(folds[fold]),
                   "methods": {m: {**values, "fold": fold} for m, values in by_fold[fold].items()},
                   "folds": {name: {"query_facets": len(folds[name]), "methods": values}
                             for name, values in by_fold.items()},
                   "tuned_on": "fold1_dev", "data": str(directory)}
        click.echo(json.dumps(payload, indent=2))
        return
    columns = ["method", "all NDCG%20", "all MAP", *(f"{facet} {metric}" for facet in FACETS
                                                      for metric in ("NDCG%20", "MAP"))]
    rows = [[m, *(f"{values[facet][metric]:.3f}" for facet in ("all", *FACETS) for metric in ("ndcg%20", "map"))]
            for m, values in by_fold[fold].items()]
    click.echo(report.render_grid(f"CSFCube {fold} ({len(folds[fold])} query-facets, expert-graded; "
                                  "litrank is tuned on fold1_dev)", columns, rows, width=140), nl=False)
    others = [name for name in by_fold if name != fold]
    rows = [[m, *(f"{by_fold[name][m]['all']['ndcg%20']:.3f} / {by_fold[name][m]['all']['map']:.3f}" for name in others)]
            for m in by_fold[fold]]
    click.echo("\n" + report.render_grid("All facets, NDCG%20 / MAP", ["method", *(f"{n} ({len(folds[n])})"
                                                                                  for n in others)], rows), nl=False)


def _author_continuity(conferences: Path, methods, limit, embedder, output_format: str) -> None:
    from recommender.evaluation.author_continuity_runs import DEFAULT_METHODS, markdown, run

    def progress(line: str) -> None:
        say(line)

    results = run(conferences, methods=methods or DEFAULT_METHODS, max_tasks=limit, embedder=embedder, read=connectors.load,
                  progress=progress)
    if output_format == "json":
        click.echo(json.dumps({"benchmark": "author-continuity", "results": results}, indent=2))
        return
    click.echo(markdown(results))


def _library(library_sources, collection_sources, holdout, repeats, seed, methods, embedder, output_format) -> None:
    from recommender.evaluation.holdout import BASELINES, METRICS, evaluate_methods, holdout_tasks
    from recommender.paper import IdentityIndex

    library, library_label = load_sources(library_sources, None, defaults.bundled_library,
                                          defaults.LIBRARY_DESCRIPTION, "library")
    collection, _ = load_sources(collection_sources, None, defaults.bundled_collection,
                                 defaults.COLLECTION_DESCRIPTION, "collection")
    library = [paper for paper in library if paper.text.strip()]
    known = IdentityIndex(library)
    collection = [paper for paper in collection if paper not in known]
    methods = methods or ["hybrid", "learned", *BASELINES] + (["recency_cosine_embedding"] if embedder else [])
    tasks = list(holdout_tasks(library, collection, holdout, repeats, seed))
    summaries = evaluate_methods(tasks, methods, embedder=embedder, seed=seed)
    measures = ("how well papers hidden from your own library are found again among the collection: a proxy "
                "for relevance (--benchmark csfcube measures expert judgements)")
    if output_format == "json":
        payload = {
            "benchmark": "library", "measures": measures,
            "methods": {m: {metric: round(s.mean(metric), 4) for metric in METRICS} for m, s in summaries.items()},
            "spread": {m: {metric: round(s.std(metric), 4) for metric in METRICS} for m, s in summaries.items()},
            "library": len(library), "collection": len(collection), "holdout": holdout, "repeats": repeats,
            "seed": seed,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    say(f"Measures {measures}.")
    click.echo(report.render_evaluation(summaries, METRICS, f"{len(library)} papers of {library_label} "
                                        f"({len(tasks[0][2])} hidden per repeat among {len(collection)} others, "
                                        f"{repeats} repeats, seed {seed})"), nl=False)
