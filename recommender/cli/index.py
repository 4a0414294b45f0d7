"""``litrank index``: fit a collection's representations once, for every later ranking."""
from __future__ import annotations

from pathlib import Path

import click

import connectors
from recommender.cli.common import (
    OUTPUT_FILE,
    fail,
    make_embedder,
    network_progress,
    remote_options,
    remote_sources,
    say,
    stage,
)
from recommender.runtime import import_scipy_sparse


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("sources", nargs=-1, required=True, metavar="COLLECTION...")
@click.option("-o", "--output", required=True, type=OUTPUT_FILE,
              help="The index file to write (atomically); its name must end in .litrank.")
@click.option("--collection-format", type=click.Choice(list(connectors.FORMATS)), default=None,
              help="Read every source in this format instead of guessing from the extension.")
@click.option("--embedder", default=None, metavar="NAME|PATH|static|none",
              help="Sentence-embedding model whose vectors of the collection the index keeps. Default: "
                   "all-MiniLM-L6-v2 when the embeddings extra is installed, else the bundled static table "
                   "('static'); also $LITRANK_EMBEDDER. Rankings against the index use the same model (or none).")
@remote_options
def index(sources, output, collection_format, embedder, since, days, include, offline):
    """Build a reusable index of a collection: `litrank rank -c FILE.litrank` then only scores.

    The index keeps what litrank fits on a collection: the word and character n-gram
    vocabularies with their IDF, the papers' TF-IDF and BM25 rows, the topic (LSA) space, the
    authors, the sentence embeddings (with an embedder) and the papers themselves. Rank any
    library against it with `litrank rank -c FILE.litrank` (and `litrank report`): the result
    is the same as ranking against the collection's own files, without refitting it. The file
    is a zip of JSON and NumPy arrays (no pickles); an index written by a litrank with another
    format or feature layout is refused with an error (exit code 2): build it again. Examples:

    \b
      litrank index icml2026.jsonl -o icml2026.litrank
      litrank index arxiv:cs.LG --days 7 -o cs-lg-week.litrank
      litrank rank -l refs.bib -c icml2026.litrank -n 50
    """
    if not connectors.is_stdout(output) and Path(output).suffix.lower() != ".litrank":
        fail(f"--output {output!r} should end in .litrank")
    sources = remote_sources(sources, since, days, offline, include)
    try:
        with network_progress("Reading the collection..."):
            papers = connectors.load_many(sources, collection_format)
        if not papers:
            fail(f"the collection ({', '.join(sources)}) contains no papers")
        import_scipy_sparse()  # before the features import it: without numpy's unused extras
        from recommender.features.collection_index import CollectionIndexBuilder  # scikit-learn and SciPy: only here
        from recommender.ranking import write_index

        chosen = make_embedder(embedder)
        embedding = " (new papers are embedded first)" if chosen is not None else ""
        with stage(f"Indexing {len(papers):,} papers{embedding}..."):
            built = CollectionIndexBuilder(embedder=chosen).build(papers)
            write_index(built, output)
    except (connectors.SourceError, ValueError) as exc:
        fail(str(exc))
    written = Path(output)
    size = f" ({written.stat().st_size / 2 ** 20:,.1f} MiB)" if written.is_file() else ""
    dense = f", {built.embedder_id} embeddings" if built.embedder_id else ", no embeddings"
    say(f"Indexed {len(papers):,} papers ({len(built.word_terms):,} words and phrases"
        + (f", {len(built.char_terms):,} character 4-grams" if built.char_terms else "")
        + f"{dense}) into {output}{size}.")
