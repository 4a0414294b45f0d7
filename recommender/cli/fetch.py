"""``litrank fetch``: a remote collection (arXiv, OpenReview, OpenAlex) saved as a file, to rank
offline, share or re-rank."""
from __future__ import annotations

from pathlib import Path

import click

import connectors
from recommender.cli.common import OUTPUT_FILE, fail, network_progress, plural, remote_options, remote_sources, say


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option("-o", "--output", required=True, type=OUTPUT_FILE,
              help="The file to write (atomically): .jsonl (recommended), .json, .csv or .bib; .gz compresses.")
@remote_options
def fetch(sources, output, since, days, include, offline):
    """Save the papers of remote sources as a collection file.

    SOURCE is arxiv:CATEGORY (newest submissions; --days / --since), arxiv:search?query=...,
    arxiv:ID,ID,..., openreview:VENUE_ID (accepted papers; --include submissions for all),
    openalex:source/S...?year=YYYY, openalex:doi/DOI,DOI,..., or any file litrank reads. Answers are cached on disk, so a rerun
    within a day (or with --offline) makes no request. Examples:

    \b
      litrank fetch arxiv:cs.LG --days 7 -o cs.LG-week.jsonl
      litrank fetch "arxiv:search?query=all:diffusion AND cat:cs.LG&max=200" -o diffusion.jsonl
      litrank fetch arxiv:2501.01234,2502.04321 -o two.jsonl
      litrank fetch openreview:ICLR.cc/2026/Conference -o iclr2026.jsonl
      litrank rank -l refs.bib -c cs.LG-week.jsonl
    """
    sources = remote_sources(sources, since, days, offline, include)
    target = Path(output)
    try:
        connectors.detect_format(target)
    except connectors.SourceError as exc:
        fail(str(exc))
    try:
        with network_progress():
            papers = connectors.load_many(sources)
        if not papers:
            fail(f"{', '.join(sources)}: no papers")
        connectors.dump(papers, target)
    except (connectors.SourceError, OSError) as exc:
        fail(str(exc))
    say(f"Wrote {plural(len(papers), 'paper')} from {', '.join(sources)} to {target}.")
