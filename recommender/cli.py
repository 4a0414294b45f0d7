"""The ``litrank`` command line."""
from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import click

import connectors

from . import __version__, defaults, report
from .ranking import Ranker, Ranking

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
def rank(library_sources, collection_sources, top, output_format, output, explain, library_format, collection_format):
    """Rank the papers of a collection by relevance to your library.

    Papers of the collection that are already in your library (same DOI, arXiv id, or title
    and first author) are left out and counted. Examples:

    \b
      litrank rank
      litrank rank -l refs.bib -c icml2026.jsonl -n 50 --explain
      litrank rank -l refs.bib -c ../shared/seeds -n 10 -o reading-list.bib
      litrank rank -c papers.csv -n 0 --format jsonl > picks.jsonl
    """
    try:
        output_format = _output_format(output, output_format)
        library, library_label = _load_sources(library_sources, library_format, defaults.bundled_library,
                                               defaults.LIBRARY_DESCRIPTION, "library")
        collection, collection_label = _load_sources(collection_sources, collection_format,
                                                     defaults.bundled_collection, defaults.COLLECTION_DESCRIPTION,
                                                     "collection")
        ranking = Ranker().rank(library, collection, top=top or None, explain_terms=5 if explain else 0)
    except (connectors.SourceError, ValueError) as exc:
        _fail(str(exc))
    _report_skipped(ranking)
    text = _render(ranking, output_format, explain, collection_label, library_label, to_file=output is not None)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        connectors.write_text(output, text)
    except (connectors.SourceError, OSError) as exc:
        _fail(f"cannot write {output}: {exc}")
    click.echo(f"Wrote {len(ranking.recommendations)} picks to {output} ({output_format}).", err=True)


def _report_skipped(ranking: Ranking) -> None:
    skipped = len(ranking.already_in_library)
    if skipped:
        noun = "paper" if skipped == 1 else "papers"
        verb = "was" if skipped == 1 else "were"
        click.echo(f"{skipped} {noun} already in your library {verb} skipped.", err=True)


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
