"""``litrank affinity``: many profiles against one collection, one score per (profile, paper)."""
from __future__ import annotations

import click

import connectors
from connectors import profiles
from connectors.files import affinity_scores
from recommender.cli.common import (
    OUTPUT_FILE,
    fail,
    load_sources,
    make_embedder,
    model_options,
    plural,
    say,
    stage,
    zotero_sources,
)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profiles", "profiles_source", required=True, metavar="DIR|ZOTERO",
              help="One library per profile: a directory of library files (alice.bib, ~Bob1.jsonl...; the id is the "
                   "file name without extensions) or of folders, or a Zotero library with one collection per member "
                   "(zotero:group/ID, zotero:local?library=group:NAME; ?collection=Members: its sub-collections).")
@click.option("-c", "--collection", "collection_sources", multiple=True, required=True, metavar="SOURCE",
              help="The papers to score (submissions), in any supported format. Repeatable.")
@click.option("--profiles-format", type=click.Choice(list(connectors.FORMATS)), default=None,
              help="Read every profile file in this format instead of guessing from the extension.")
@click.option("--collection-format", type=click.Choice(list(connectors.FORMATS)), default=None,
              help="Read every --collection source in this format instead of guessing from the extension.")
@model_options
@click.option("-n", "--top", default=0, show_default=True, type=click.IntRange(min=0),
              help="Keep each profile's K best papers; 0 for every paper.")
@click.option("-o", "--output", required=True, type=OUTPUT_FILE,
              help="Where to write the scores (atomically): .csv (profile_id,paper_id,rank,score) or .parquet.")
@click.option("-f", "--format", "output_format", type=click.Choice(affinity_scores.FORMATS), default=None,
              help="csv, parquet (needs pyarrow: pip install 'litrank[parquet]') or openreview: "
                   "openreview-expertise's submission_id,reviewer_id,score rows without a header. "
                   "Default: from the --output extension.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Run on a local Dask cluster of N worker processes (pip install 'litrank[dask]').")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786).")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="Cut the collection into N partitions (default: 50,000 papers each, at least one per worker).")
@click.option("--zotero-dir", type=click.Path(file_okay=False), default=None,
              help="Zotero data directory for --profiles zotero:local... (default: Zotero's own).")
def affinity(profiles_source, collection_sources, profiles_format, collection_format, model_name, embedder, top,
             output, output_format, workers, scheduler, partitions, zotero_dir):
    """Score every paper of a collection for every profile (reviewers, lab members).

    Each profile is scored as `litrank rank --no-feedback` scores a library (same model, same
    scores); the collection is indexed once and shared by all profiles. Papers of a profile
    that are in the collection are not scored for it. Examples:

    \b
      litrank affinity --profiles reviewers/ -c submissions.jsonl -o affinity.csv
      litrank affinity --profiles reviewers/ -c submissions.jsonl -o scores.csv --format openreview
      litrank affinity --profiles zotero:group/12345 -c arxiv.jsonl -n 20 -o picks.parquet
      litrank affinity --profiles lab/ -c big/ -o affinity.csv --workers 2
      litrank affinity --profiles lab/ -c big/ -o affinity.csv --scheduler tcp://10.0.0.5:8786
    """
    if workers and scheduler:
        raise click.UsageError("give --workers (a local cluster) or --scheduler (an existing one), not both")
    try:
        output_format = affinity_scores.format_for(output, output_format)
    except connectors.SourceError as exc:
        raise click.BadParameter(str(exc), param_hint="'--output'") from None
    if output_format == "parquet" and not affinity_scores.parquet_available():
        fail(affinity_scores.PARQUET_HINT)
    if model_name != "hybrid":
        fail(f"affinity scores use the hybrid model; --model {model_name} is for `litrank rank`")
    from recommender.ranking import make_model
    from recommender.scale.affinity import AffinityScorer
    from recommender.scale.cluster import ClusterUnavailable, engine, partition_bounds
    from recommender.scale.partitioned_index import index_on

    zotero_sources((), zotero_dir, None)
    try:
        with stage("Reading the profiles..."):
            members = profiles.load_profiles(profiles_source, profiles_format)
        with stage("Reading the collection..."):
            collection, label = load_sources(collection_sources, collection_format, None, "", "collection")
        model = make_model("hybrid", make_embedder(embedder))
        n_library = sum(len(papers) for papers in members.values())
        say(f"Scoring {len(collection):,} papers of {label} for {plural(len(members), 'profile')} "
            f"({n_library:,} library papers).")
        with engine(scheduler, workers) as runner:
            n_partitions = partitions or (runner.n_workers if runner.n_workers > 1 else None)
            if n_partitions:
                n_partitions = max(n_partitions, len(partition_bounds(len(collection))))
            with stage(f"Indexing {len(collection):,} papers on {runner.description}..."):
                index = index_on(runner, model.index_builder(), collection, n_partitions)
            del collection  # on a cluster, the workers hold the papers now
            with stage(f"Scoring on {runner.description}..."):
                results = AffinityScorer(model, top=top or None).score(index, members, runner, n_partitions)
                blocks = (affinity_scores.ScoreBlock(result.profile_id, result.paper_ids(index), result.scores,
                                                     _ranks(len(result.rows))) for result in results)
                rows = affinity_scores.write_scores(output, blocks, output_format)
            description = runner.description
    except (connectors.SourceError, ValueError, ClusterUnavailable) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output}: {exc}")
    dense = f" + {model.embedder.model_id} embeddings" if model.embedder is not None else ""
    say(f"Scored by the hybrid model (words and character n-grams{dense}) on {description}.")
    say(f"Wrote {rows:,} scores ({plural(len(members), 'profile')}) to {output} ({output_format}).")


def _ranks(n: int):
    import numpy as np

    return np.arange(1, n + 1)
