"""``litrank evaluate``: ranking quality on human judgements (CSFCube, one query paper or composite
researcher-shaped libraries), on your own library, and on the author-continuity proxy."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

import connectors
from recommender import defaults
from recommender.cli.common import fail, load_sources, make_embedder, say
from recommender.report import formats as report

BENCHMARKS = ("library", "csfcube", "csfcube-composite", "csfcube-short", "csfcube-feedback", "author-continuity")
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
              help="csfcube: expert relevance judgements (the measure litrank is tuned by); csfcube-composite: "
                   "the same judgements, libraries of 5-20 papers on several topics and publication lists of "
                   "16-47 composed from them (main-line lists also scored on each side: main topic, side "
                   "interests; the default's lead over each baseline ± its paired standard error); "
                   "csfcube-short: the same libraries, each ranking short lists of "
                   "16 graded candidates (pairwise loss; the default's lead ± standard error); csfcube-feedback: "
                   "what judging the first 5, 10 or 20 picks buys on both (± standard error); library: how well "
                   "papers hidden from your own library are found again (a proxy); author-continuity: an "
                   "author's next papers from their earlier ones (a proxy, on conference lists given by --data).")
@click.option("--data", default=None, metavar="DIR",
              help="csfcube, csfcube-composite, csfcube-short, csfcube-feedback: the CSFCube directory (default $LITRANK_CSFCUBE_DIR); author-continuity: the "
                   "folder of <venue><year>.jsonl.gz conference lists (default $LITRANK_CONFERENCES_DIR).")
@click.option("--fold", type=click.Choice(CSFCUBE_FOLDS), default="fold1_test", show_default=True,
              help="csfcube, csfcube-composite, csfcube-short, csfcube-feedback: the fold the main table reports (litrank is tuned "
                   "on fold1_dev).")
@click.option("--methods", default=None, metavar="A,B,...",
              help="Only these methods (default: all, with the embedding ones when an embedder is in use).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="csfcube: only the first N query-facets of each fold (a quick check, not a result); "
                   "csfcube-composite: the first N libraries of each fold; csfcube-short: the first N short lists of "
                   "each kind and fold; csfcube-feedback: the first N tasks; "
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
@click.option("--embedder", default=None, metavar="NAME|PATH|static|none",
              help="Dense embeddings for litrank and the embedding baselines (default: the bundled model when the "
                   "embeddings extra is installed, else the static table; 'none' to leave them out). The CSFCube "
                   "benchmarks also show the static table's methods (static, hybrid+static: the default install) "
                   "beside any other embedder.")
@click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def evaluate(benchmark, data, fold, methods, limit, library_sources, collection_sources, holdout, repeats, seed,
             embedder, output_format):
    """Measure ranking quality: on expert judgements, on your library, or on author continuity.

    \b
      litrank evaluate --benchmark csfcube                  # human judgements; what the default model is tuned by
      litrank evaluate --benchmark csfcube --format json --embedder none
      litrank evaluate --benchmark csfcube-composite        # libraries of several topics, publication lists
      litrank evaluate --benchmark csfcube-short            # short lists of 16 graded candidates
      litrank evaluate --benchmark csfcube-feedback         # what judging the first k picks buys
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
        elif benchmark == "csfcube-composite":
            _csfcube_composite(_data_directory(data, "LITRANK_CSFCUBE_DIR", "csfcube"), fold, chosen, limit,
                               embedding_model, seed, output_format)
        elif benchmark == "csfcube-short":
            _csfcube_short(_data_directory(data, "LITRANK_CSFCUBE_DIR", "csfcube"), fold, chosen, limit,
                           embedding_model, seed, output_format)
        elif benchmark == "csfcube-feedback":
            _csfcube_feedback(_data_directory(data, "LITRANK_CSFCUBE_DIR", "csfcube"), fold, chosen, limit,
                              embedding_model, output_format)
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
    from recommender.evaluation.holdout import default_install_methods
    from recommender.evaluation.human_judgements import (
        EMBEDDING_METHODS,
        FACETS,
        LEXICAL_METHODS,
        evaluate_csfcube,
        summary,
    )

    data = csfcube.load(directory)
    methods = methods or (list(LEXICAL_METHODS) + default_install_methods(embedder)
                          + (list(EMBEDDING_METHODS) if embedder is not None else []))
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


LIST_COLUMNS = (("all", "lists"), ("balanced", "balanced"), ("main line", "main line"))


def _csfcube_composite(directory: Path, fold: str, methods, limit, embedder, seed: int, output_format: str) -> None:
    import time

    from connectors.files import csfcube
    from recommender.evaluation import composite

    started = time.perf_counter()
    data = csfcube.load(directory)
    methods = methods or composite.default_methods(embedder)
    folds = list(dict.fromkeys(["fold1_dev", "fold1_test"] if fold == "all" else ["fold1_dev", fold]))
    libraries = {name: composite.build_libraries(data, name, seed=seed)[:limit] for name in folds}
    publications = {name: composite.build_publication_libraries(data, name, seed=seed)[:limit] for name in folds}
    if embedder is not None:
        say("Embedding the libraries' papers (cached on disk: a second run embeds none)...")
    everything = [library for name in folds for library in libraries[name]]
    every_list = [library for name in folds for library in publications[name]]
    results = composite.evaluate_composite(data, everything + every_list, methods, embedder=embedder, seed=seed)
    by_fold = {name: composite.summary(results, libraries[name]) for name in folds}
    lists = {name: composite.publication_summary(results, publications[name]) for name in folds}
    if fold == "all":
        by_fold["all"] = composite.summary(results, everything)
        lists["all"] = composite.publication_summary(results, every_list)
        libraries["all"], publications["all"] = everything, every_list
    sides = {name: composite.main_line_sides(data, results, publications[name]) for name in by_fold}
    single, single_leads = _single_query(data, list(by_fold), methods, embedder, seed, limit)
    leads = {name: {"single query": single_leads.get(name, {}),
                    "composite": composite.leads(results, [library.name for library in libraries[name]]),
                    **{label: composite.leads(results, [library.name for library in publications[name]
                                                        if group == "all" or library.shape == group])
                       for group, label in LIST_COLUMNS}} for name in by_fold}
    seconds = round(time.perf_counter() - started, 1)
    if output_format == "json":
        payload = {"benchmark": "csfcube-composite", "fold": fold, "tuned_on": "fold1_dev", "seed": seed,
                   "embedder": getattr(embedder, "model_id", None) if embedder is not None else None,
                   "methods": by_fold[fold]["all"]["methods"],
                   "folds": {name: {"shape": composite.describe(libraries[name]), "composite": by_fold[name],
                                    "publications": {"shape": composite.describe(publications[name]), **lists[name],
                                                     "main line by topic": sides[name]},
                                    "single_query": single.get(name, {}), "leads": leads[name]}
                             for name in by_fold},
                   "libraries": {library.name: {"size": library.size, "shape": library.shape,
                                                "topics": [f"{q}_{f}" for q, f in library.query_facets],
                                                "collection": len(library.grades)} for library in everything + every_list},
                   "per_library": results, "seconds": seconds, "data": str(directory)}
        click.echo(json.dumps(payload, indent=2))
        return
    buckets = [f"{low}-{high}" for low, high in composite.BUCKETS]
    for name in by_fold:
        shape, lists_shape = composite.describe(libraries[name]), composite.describe(publications[name])
        columns = ["method", "single query", f"composite ({shape['libraries']})",
                   *(f"{b} ({by_fold[name][b]['libraries']})" for b in buckets),
                   *(f"{label} ({lists[name][group]['libraries']})" for group, label in LIST_COLUMNS)]
        groups = [by_fold[name][g] for g in ("all", *buckets)] + [lists[name][group] for group, _ in LIST_COLUMNS]
        rows = [[m, (f"{single[name][m]['ndcg%20']:.3f} / {single[name][m]['map']:.3f}" if m in single.get(name, {}) else "-"),
                 *(f"{group['methods'][m]['ndcg%20']:.3f} / {group['methods'][m]['map']:.3f}" for group in groups)]
                for m in methods]
        title = (f"CSFCube composite libraries, {name}: NDCG%20 / MAP ({shape.get('size_mean', 0)} papers and "
                 f"{shape.get('topics_mean', 0)} topics per library on average, collections of "
                 f"{shape.get('collection_mean', 0)}; publication lists: {lists_shape.get('size_mean', 0)} papers on "
                 f"{lists_shape.get('topics_mean', 0)} topics; litrank is tuned on fold1_dev)")
        click.echo(report.render_grid(title, columns, rows, width=140) + "\n", nl=False)
        if sides[name]["libraries"]:
            click.echo(_main_line_grid(name, sides[name], methods) + "\n", nl=False)
        if any(leads[name].values()):
            click.echo(_leads_grid(name, leads[name]) + "\n", nl=False)
    say(f"{len(everything) + len(every_list)} libraries, {len(methods)} methods in {seconds} s.")


def _leads_grid(fold: str, leads: dict, what: str = "NDCG%20 lead over a baseline") -> str:
    """The default rows' leads over the baselines, ± their paired standard errors."""
    groups = [group for group, by_default in leads.items() if by_default]
    pairs = list(dict.fromkeys((default, baseline) for group in groups for default, against in leads[group].items()
                               for baseline in against))
    rows = [[f"{default} - {baseline}",
             *(f"{cell['lead']:+.3f} ± {cell['se']:.3f}" if (cell := leads[group].get(default, {}).get(baseline))
               else "-" for group in groups)] for default, baseline in pairs]
    title = (f"How sure, {fold}: each default row's {what}, ± its standard error "
             f"(paired, library by library; a lead of more than about two of them is one the libraries agree on)")
    return report.render_grid(title, ["default - baseline", *groups], rows, width=140)


def _main_line_grid(fold: str, sides: dict, methods) -> str:
    """The main-line lists' table by topic (:func:`recommender.evaluation.composite.main_line_sides`)."""
    from recommender.evaluation import composite

    title = (f"Main-line lists, {fold} ({sides['libraries']}), by topic: NDCG%20 against the main topic alone and "
             f"the side topics alone (relevant papers left to find, a list: {sides['relevant']['main topic']} and "
             f"{sides['relevant']['side topics']}), and the share of the first 20% from the main topic's pool")
    rows = [[m, *(f"{sides['methods'][m][metric]:.3f}" for metric in composite.SIDE_METRICS)] for m in methods]
    return report.render_grid(title, ["method", "main topic", "side topics", "first 20% from main pool"], rows,
                              width=140)


def _csfcube_short(directory: Path, fold: str, methods, limit, embedder, seed: int, output_format: str) -> None:
    import time

    from connectors.files import csfcube
    from recommender.evaluation import composite, short_lists

    started = time.perf_counter()
    data = csfcube.load(directory)
    methods = methods or composite.default_methods(embedder)
    folds = list(dict.fromkeys(["fold1_dev", "fold1_test"] if fold == "all" else ["fold1_dev", fold]))
    lists = {name: short_lists.first_of_each_kind(short_lists.build_short_lists(data, name, seed=seed), limit)
             for name in folds}
    every = [short for name in folds for short in lists[name]]
    results = short_lists.evaluate_short_lists(data, every, methods, embedder=embedder, seed=seed)
    by_fold = {name: short_lists.summary(results, lists[name]) for name in folds}
    leads = {name: short_lists.leads(results, lists[name]) for name in folds}
    if fold == "all":
        by_fold["all"] = short_lists.summary(results, every)
        leads["all"] = short_lists.leads(results, every)
    seconds = round(time.perf_counter() - started, 1)
    if output_format == "json":
        click.echo(json.dumps({"benchmark": "csfcube-short", "fold": fold, "tuned_on": "fold1_dev", "seed": seed,
                               "per_grade": short_lists.PER_GRADE, "draws": short_lists.DRAWS,
                               "embedder": getattr(embedder, "model_id", None) if embedder is not None else None,
                               "methods": by_fold[fold]["all"]["methods"], "folds": by_fold, "leads": leads,
                               "per_list": results,
                               "seconds": seconds}, indent=2))
        return
    groups = ("single", "composite", "balanced", "main line", "all")
    for name, table in by_fold.items():
        columns = ["method", *(f"{group} ({table[group]['lists']})" for group in groups)]
        rows = [[m, *(f"{table[group]['methods'][m]:.3f}" for group in groups)] for m in methods]
        title = (f"CSFCube short lists, {name}: weighted pairwise loss, lower is better (each library ranks "
                 f"{short_lists.PER_GRADE} candidates of each grade; all = mean of the four; litrank is tuned on "
                 "fold1_dev)")
        click.echo(report.render_grid(title, columns, rows, width=140) + "\n", nl=False)
        if any(leads[name].values()):
            click.echo(_leads_grid(name, leads[name], "loss below a baseline's (the baseline's loss minus its own)")
                       + "\n", nl=False)
    say(f"{len(every)} short lists, {len(methods)} methods in {seconds} s.")


def _csfcube_feedback(directory: Path, fold: str, methods, limit, embedder, output_format: str) -> None:
    import time

    from connectors.files import csfcube
    from recommender.evaluation import feedback_gain

    if fold == "all":
        raise ValueError("csfcube-feedback reports one fold at a time (--fold fold1_dev or fold1_test)")
    started = time.perf_counter()
    data = csfcube.load(directory)
    tasks = feedback_gain.tasks(data, fold)[:limit]
    rankers = feedback_gain.default_methods(embedder)
    if methods:
        unknown = [m for m in methods if m not in rankers]
        if unknown:
            raise ValueError(f"unknown feedback methods {', '.join(unknown)}; choose from {', '.join(rankers)}")
        rankers = {m: rankers[m] for m in methods}
    results = feedback_gain.evaluate_feedback(data, tasks, rankers, feedback_gain.baseline(embedder))
    table = feedback_gain.summary(results, tasks)
    seconds = round(time.perf_counter() - started, 1)
    if output_format == "json":
        click.echo(json.dumps({"benchmark": "csfcube-feedback", "fold": fold, "tuned_on": "fold1_dev",
                               "embedder": getattr(embedder, "model_id", None) if embedder is not None else None,
                               "results": table, "per_task": results, "seconds": seconds}, indent=2))
        return
    click.echo(f"CSFCube {fold}, the first k picks judged (grade 2-3 liked, 0-1 disliked), the rest ranked again:")
    click.echo(feedback_gain.markdown(table))
    say(f"{len(tasks)} tasks, {len(rankers)} methods in {seconds} s.")


def _single_query(data, folds, methods, embedder, seed: int, limit) -> tuple[dict[str, dict], dict[str, dict]]:
    """The one-paper CSFCube protocol's all-facet figures for the same methods (``embedding-top3``
    is ``embedding`` with one library paper), and by fold the default rows' leads over the
    baselines, query-facet by query-facet (:func:`recommender.evaluation.composite.leads`)."""
    from recommender.evaluation import composite
    from recommender.evaluation.human_judgements import evaluate_csfcube, method_scorers, summary

    known = method_scorers(embedder, seed)
    same = {m: "embedding" if m == "embedding-top3" else m for m in methods}
    same = {m: single for m, single in same.items() if single in known}
    pairs = {name: data.query_facets(None if name == "all" else name)[:limit] for name in folds}
    results = evaluate_csfcube(data, list(dict.fromkeys(same.values())),
                               list(dict.fromkeys(p for ps in pairs.values() for p in ps)), embedder=embedder, seed=seed)
    out, leads = {}, {}
    for name, chosen in pairs.items():
        values = summary(results, chosen)
        out[name] = {m: values[single]["all"] for m, single in same.items()}
        per_item = {m: {f"{q}_{f}": results[single].per_query_facet[q, f] for q, f in chosen}
                    for m, single in same.items()}
        leads[name] = composite.leads(per_item, [f"{q}_{f}" for q, f in chosen])
    return out, leads


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
