"""``litrank rank`` and ``litrank report``: rank a collection against a library and write the
picks (table, JSON, JSONL, CSV, BibTeX) or the HTML report page."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import click

import connectors
from recommender import defaults
from recommender.cli.common import (
    OUTPUT_FILE,
    enrich_papers,
    fail,
    index_embedder,
    judgements,
    load_sources,
    make_embedder,
    model_options,
    network_progress,
    plural,
    read_collection_index,
    remote_options,
    remote_sources,
    say,
    stage,
    start_loading,
    zotero_sources,
)
from recommender.feedback import is_litrank_item
from recommender.report import formats as report

if TYPE_CHECKING:
    from recommender.ranking import Ranking
from recommender.defaults import DEFAULT_DIVERSITY

OUTPUT_FORMATS = ("table", "json", "jsonl", "csv", "bibtex", "html")
_FORMAT_BY_EXTENSION = {".bib": "bibtex", ".bibtex": "bibtex", ".json": "json", ".jsonl": "jsonl",
                        ".ndjson": "jsonl", ".csv": "csv", ".txt": "table", ".html": "html",
                        ".htm": "html"}


def _output_format(output: str | None, requested: str | None) -> str:
    if output is None or connectors.is_stdout(output):
        return requested or "table"
    suffix = Path(output).suffix.lower()
    if suffix == ".gz":
        suffix = Path(Path(output).stem).suffix.lower()
    implied = _FORMAT_BY_EXTENSION.get(suffix)
    if requested:
        # A .bib file holding JSON is a trap for whoever opens it next.
        if implied is not None and implied != requested:
            raise click.BadParameter(f"--format {requested} contradicts the extension of {output!r} ({implied}); "
                                     "make them agree or drop --format", param_hint="'--format'")
        return requested
    if implied is None:
        raise click.BadParameter(
            f"cannot tell the format of {output!r} from its extension; use --format "
            f"({', '.join(OUTPUT_FORMATS)}) or one of {', '.join(_FORMAT_BY_EXTENSION)}",
            param_hint="'--output'",
        )
    return _FORMAT_BY_EXTENSION[suffix]


def _source_options(function):
    """The options `rank` and `report` share: what to rank, against what, and how."""
    options = [
        click.option("-l", "--library", "library_sources", multiple=True, metavar="SOURCE",
                     help="Your library: a .bib, .jsonl, .json, .csv or .txt file, or a directory of them. "
                          "Repeatable. Default: the bundled example library."),
        click.option("-c", "--collection", "collection_sources", multiple=True, metavar="SOURCE",
                     help="The papers to rank, in any supported format, or a collection index built by "
                          "`litrank index` (.litrank; then the only source). Repeatable. "
                          "Default: the bundled ICML 2026 list."),
        click.option("--library-format", type=click.Choice(list(connectors.FORMATS)), default=None,
                     help="Read every --library source in this format instead of guessing from the extension."),
        click.option("--collection-format", type=click.Choice(list(connectors.FORMATS)), default=None,
                     help="Read every --collection source in this format instead of guessing from the extension."),
        model_options,
        remote_options,
        click.option("--diversity", type=click.FloatRange(0, 1), default=DEFAULT_DIVERSITY, show_default=True,
                     help="0 = score order (best on expert judgements); higher values push papers on a topic "
                          "already picked down the list (maximal marginal relevance)."),
        click.option("--no-feedback", is_flag=True,
                     help="Ignore stored likes/dislikes (litrank feedback) and litrank:liked/disliked keywords."),
        click.option("--enrich", is_flag=True,
                     help="First fetch abstracts for library papers that have none (arXiv, OpenAlex, Semantic "
                          "Scholar; cached), as `litrank enrich` does, in memory."),
        click.option("--zotero-dir", type=click.Path(file_okay=False), default=None,
                     help="Zotero data directory for -l zotero:local (default: Zotero's own, usually ~/Zotero; "
                          "also $LITRANK_ZOTERO_DIR)."),
        click.option("--zotero-collection", default=None, metavar="PATH",
                     help="Use only this Zotero collection (and its subcollections) of every zotero: library, "
                          "e.g. Reading/ML; the same as appending ?collection=PATH."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@click.command()
@_source_options
@click.option("-n", "--top", default=20, show_default=True, type=click.IntRange(min=0),
              help="How many picks to show; 0 for all.")
@click.option("-f", "--format", "output_format", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="Output format. Default: from the --output extension, else table. html: the report "
                   "page of `litrank report`.")
@click.option("-o", "--output", type=OUTPUT_FILE, default=None,
              help="Write the picks to FILE (atomically) instead of stdout; the format follows the "
                   "extension (.bib, .json, .jsonl, .csv, .txt, .html).")
@click.option("--explain", is_flag=True, help="Show the library papers each pick is close to and the terms they share.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Score on a local Dask cluster of N worker processes, the collection partitioned over them "
                   "(pip install 'litrank[dask]'); same picks as without.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Score on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786).")
def rank(output_format, output, workers, scheduler, **options):
    """Rank the papers of a collection by relevance to your library.

    Papers of the collection that are already in your library (same DOI, arXiv id, or title
    and first author) are left out and counted. Examples:

    \b
      litrank rank
      litrank rank -l refs.bib -c icml2026.jsonl -n 50 --explain
      litrank rank -l refs.bib -c examples/icml2026 -n 10 -o reading-list.bib
      litrank rank -c papers.csv -n 0 --format jsonl > picks.jsonl
      litrank rank -l refs.bib -c icml2026.jsonl -o picks.html
      litrank rank -l refs.bib -c arxiv:cs.LG --days 7
      litrank rank -l refs.bib -c openreview:ICLR.cc/2026/Conference
      litrank rank -l refs.bib -c arxiv-shards/ -n 50 --workers 2
    """
    output_format = _output_format(output, output_format)
    if workers and scheduler:
        raise click.UsageError("give --workers (a local cluster) or --scheduler (an existing one), not both")
    if (workers or scheduler) and output_format == "html":
        fail("the HTML page maps the whole collection, which a cluster run keeps on its workers; "
             "write another format, or rank without --workers/--scheduler")
    if (workers or scheduler) and options["model_name"] != "hybrid":
        fail(f"ranking on a cluster uses the hybrid model; --model {options['model_name']} runs without "
             "--workers/--scheduler")
    from recommender.scale.cluster import ClusterUnavailable, engine

    try:
        with engine(scheduler, workers) as runner:
            _rank_and_write(output_format, output, runner=runner if (workers or scheduler) else None, **options)
    except ClusterUnavailable as exc:
        fail(str(exc))


@click.command("report")
@_source_options
@click.option("-n", "--top", default=50, show_default=True, type=click.IntRange(min=0),
              help="How many picks the page lists; 0 for all (the map always shows every paper).")
@click.option("-o", "--output", type=OUTPUT_FILE, default="reading-list.html",
              show_default=True, help="The page to write (atomically).")
@click.option("--open", "open_page", is_flag=True, help="Open the page in your web browser when it is written.")
def report_command(output, open_page, **options):
    """Write the ranking as one self-contained HTML page: picks, reasons and a map.

    The page lists the picks (abstract one click away, links, copy-as-BibTeX), filters them
    by score and by the library paper they came from, and draws a map of your library and
    the collection with the picks numbered. It needs no network to view. Examples:

    \b
      litrank report
      litrank report -l refs.bib -c icml2026.jsonl -n 100 -o icml.html --open
    """
    to_stdout = connectors.is_stdout(output)
    if not to_stdout and Path(output).suffix.lower() not in (".html", ".htm"):
        fail(f"--output {output!r} should end in .html: the report is a web page")
    if open_page and to_stdout:
        fail("--open needs the page in a file: give -o FILE.html")
    _rank_and_write("html", output, explain=True, **options)
    if open_page:
        import webbrowser

        page = Path(output).resolve()
        try:
            opened = webbrowser.open(page.as_uri())
        except webbrowser.Error:
            opened = False
        if not opened:  # no browser here (a server, no display): say where the page is
            say(f"No web browser to open it here: the page is {page}")


def _rank_and_write(output_format, output, library_sources, collection_sources, top, explain, library_format,
                    collection_format, model_name, embedder, since, days, include, offline, diversity, no_feedback,
                    enrich, zotero_dir, zotero_collection, runner=None):
    library_sources = zotero_sources(library_sources, zotero_dir, zotero_collection)
    collection_sources = remote_sources(collection_sources, since, days, offline, include)
    try:
        with stage("Reading the library..."):  # a large library file goes on while the collection is read
            read_library = start_loading(library_sources, library_format, defaults.bundled_library,
                                         defaults.LIBRARY_DESCRIPTION, "library")
        with network_progress("Reading the collection..."):
            index = read_collection_index(collection_sources)
            if index is not None:
                collection, collection_label = index.papers, collection_sources[0]
            else:
                collection, collection_label = load_sources(collection_sources, collection_format,
                                                            defaults.bundled_collection,
                                                            defaults.COLLECTION_DESCRIPTION, "collection")
        library, library_label = read_library()
        if enrich:
            with network_progress("Finding the library's missing abstracts..."):
                library, _ = enrich_papers(library)
        judged = {} if no_feedback else judgements(library, collection)
        # Items `litrank sync` created are picks, not your reading (judgements on them are read above).
        library = [paper for paper in library if not is_litrank_item(paper)] or library
        from recommender.ranking import Ranker, make_model  # scikit-learn and SciPy: only when ranking

        choose_embedder = make_embedder if index is None else lambda name: index_embedder(name, index)
        model = make_model(model_name, choose_embedder(embedder) if model_name != "similarity" else None)
        embedding = " (new papers are embedded first)" if getattr(model, "embedder", None) else ""
        with stage(f"Ranking {len(collection):,} papers against {len(library):,}{embedding}..."):
            ranking = Ranker(model, diversity=diversity, engine=runner).rank(
                library, collection if index is None else index, top=top or None,
                explain_terms=5 if explain or output_format == "html" else 0, judgements=judged)
    except (connectors.SourceError, ValueError) as exc:
        fail(str(exc))
    _report_skipped(ranking)
    if not ranking.n_candidates:
        say("warning: nothing left to rank: every paper of the collection is already in your library or judged"
            + ("; nothing was written." if output else "."))
        return
    note = ranking.judgements_note()
    say(f"Ranked by {ranking.model}" + (f"; {note}." if note else "."))
    from recommender.ranking import WEAK_OVERLAP

    if ranking.recommendations and ranking.library_overlap() < WEAK_OVERLAP:
        logging.getLogger("litrank").warning(
            "your library shares little with this collection (the picks' closest library papers are far from "
            "them): the picks are weak")
    to_file = output is not None and not connectors.is_stdout(output)
    text = _render(ranking, output_format, explain, collection_label, library_label, to_file=to_file)
    if not to_file:
        click.echo(text, nl=False)
        return
    try:
        connectors.write_text(output, text)
    except (connectors.SourceError, OSError) as exc:
        fail(f"cannot write {output}: {exc}")
    say(f"Wrote {plural(len(ranking.recommendations), 'pick')} to {output} ({output_format}).")


def _report_skipped(ranking: Ranking) -> None:
    skipped = len(ranking.already_in_library)
    if skipped:
        verb = "was" if skipped == 1 else "were"
        say(f"{plural(skipped, 'paper')} already in your library {verb} skipped.")
    if ranking.liked:
        say(f"{plural(len(ranking.liked), 'liked paper')} joined your library for this run.")
    if ranking.disliked:
        say(f"{plural(len(ranking.disliked), 'disliked paper')} will not be recommended.")


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
        from connectors import bibtex

        return bibtex.dumps(report.annotated_papers(picks, ranking.n_candidates), key_style=_key_style(ranking))
    caption = (f"Top {len(picks)} of {plural(ranking.n_candidates, 'paper')} from {collection_label}, "
               f"ranked against {plural(ranking.n_library, 'paper')} of {library_label} (model: {ranking.model}).")
    if output_format == "html":
        return _html_page(ranking, caption)
    width = None if to_file else max(100, shutil.get_terminal_size((120, 24)).columns)
    return report.render_table(ranking, caption, explain=explain, width=width)


def _key_style(ranking: Ranking) -> str:
    """The citation-key style of the user's library, for picks that have no key of their own."""
    from connectors import bibtex

    style = bibtex.detect_key_style(ranking.library)
    if style != bibtex.DEFAULT_KEY_STYLE:
        say(f"Citation keys follow your library's style ({style}).")
    return style


def _html_page(ranking: Ranking, caption: str) -> str:
    from connectors import bibtex, html_report
    from recommender.report.page_data import report_data

    style = _key_style(ranking)

    def to_bibtex(pick):
        return bibtex.dumps(report.annotated_papers([pick], ranking.n_candidates), key_style=style)

    with stage(f"Drawing the map of {ranking.n_library + ranking.n_candidates:,} papers..."):
        data = report_data(ranking, caption.replace(f" (model: {ranking.model})", ""), to_bibtex)
    return html_report.dumps(data)
