"""``litrank enrich``: abstracts for the papers of a library that have none."""
from __future__ import annotations

from pathlib import Path

import click

import connectors
from recommender.cli.common import OUTPUT_FILE, enrich_papers, fail, network_progress, plural, say


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("library", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=OUTPUT_FILE,
              help="Where to write the library with the abstracts added (never the input file).")
@click.option("--offline", is_flag=True, help="Use only answers cached by earlier runs; make no request.")
def enrich(library, output, offline):
    """Add abstracts to the papers of LIBRARY that have none.

    Looks each one up on arXiv (by arXiv id), then OpenAlex and Semantic Scholar (by DOI, then
    by exact title and first author). A BibTeX library is copied as it is, with an `abstract` field added to the
    entries that had none: every other field, comment and the entry order stay untouched, and
    no field you wrote is replaced. Other formats are written in the output's format.

    \b
      litrank enrich refs.bib -o refs-with-abstracts.bib
      litrank rank -l refs.bib --enrich          # the same, in memory, before ranking
    """
    import os

    if offline:
        os.environ["LITRANK_OFFLINE"] = "1"
    source, target = Path(library), Path(output)
    if target.resolve() == source.resolve():
        fail("--output must be another file: litrank never modifies its input")
    try:
        papers = connectors.load(source)
        with network_progress():
            enriched, found = enrich_papers(papers)
        if connectors.detect_format(source) == "bibtex" and connectors.detect_format(target) == "bibtex":
            from connectors import bibtex
            from connectors._io import read_text

            text, _ = bibtex.add_missing_fields(read_text(source), {
                paper.id: {"abstract": found[paper.id].abstract} for paper in papers if paper.id in found})
            connectors.write_text(target, text)
        else:
            connectors.dump(enriched, target)
    except (connectors.SourceError, OSError) as exc:
        fail(str(exc))
    say(f"Wrote {target} ({plural(len(found), 'abstract')} added).")
