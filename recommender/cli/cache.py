"""``litrank cache``: what litrank keeps on disk between runs, and clearing it."""
from __future__ import annotations

import json

import click

from recommender.models import embeddings


def _size(n_bytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n_bytes < 1024 or unit == "GiB":
            return f"{n_bytes:,.0f} {unit}" if unit == "B" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    return ""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cache():
    """The caches: sentence embeddings (one SQLite file per model, keyed by a hash of the model
    and the text, shared by every run) and answers of remote sources (arXiv, OpenReview,
    OpenAlex, Semantic Scholar). Both live under $LITRANK_CACHE_DIR, else the user cache
    directory; concurrent runs share them safely."""


@cache.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def info(output_format):
    """Where the caches are, what they hold and their size on disk."""
    models = embeddings.cache_summary()
    from connectors.online import http_cache  # imports requests: only in the commands that need it

    http = http_cache.cache_summary()
    if output_format == "json":
        click.echo(json.dumps({"embeddings": {"directory": str(embeddings.default_cache_dir()), "models": models},
                               "http": http}, indent=2))
        return
    click.echo(f"Embeddings: {embeddings.default_cache_dir()}")
    if not models:
        click.echo("  (empty)")
    for entry in models:
        problem = f"  unreadable: {entry['error']}" if "error" in entry else ""
        dim = f", {entry['dim']} dimensions" if entry["dim"] else ""
        click.echo(f"  {entry['model_id']}: {entry['vectors']:,} texts{dim}, {_size(entry['bytes'])}{problem}")
    total = sum(entry["bytes"] for entry in models)
    click.echo(f"  total: {_size(total)}")
    click.echo(f"Remote answers: {http['path']}")
    hosts = ", ".join(f"{host} {count:,}" for host, count in sorted(http["sources"].items()))
    click.echo(f"  {http['answers']:,} answers{f' ({hosts})' if hosts else ''}, {_size(http['bytes'])}"
               + (f"  unreadable: {http['error']}" if "error" in http else ""))


@cache.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--embeddings", "which", flag_value="embeddings", help="Only the embedding cache.")
@click.option("--http", "which", flag_value="http", help="Only the cached answers of remote sources.")
def clear(which):
    """Delete the caches (both unless --embeddings or --http). Nothing else of yours is touched:
    your feedback and settings are kept. The next run embeds or fetches again."""
    if which in (None, "embeddings"):
        files, n_bytes = embeddings.clear_cache()
        click.echo(f"Embeddings: removed {files} cache file{'s' if files != 1 else ''} ({_size(n_bytes)}).")
    if which in (None, "http"):
        from connectors.online import http_cache

        answers, n_bytes = http_cache.clear_cache()
        click.echo(f"Remote answers: removed {answers:,} ({_size(n_bytes)}).")
