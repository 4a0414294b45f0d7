"""``litrank config``: the settings in effect and where each comes from."""
from __future__ import annotations

import json

import click

from recommender.cli.common import fail

BUILT_IN = {
    "library": "the bundled example library",
    "collection": "the bundled ICML 2026 list",
    "model": "hybrid",
    "top": "20",
    "embedder": "auto: all-MiniLM-L6-v2 when the embeddings extra is installed, else the bundled static table",
    "zotero.to": "(none: litrank sync needs --to)",
}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def config():
    """The settings file, litrank.toml: defaults for library, collection, model, top, embedder
    and the Zotero collection `sync` fills. Flags on the command line always win."""


@config.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def show(output_format):
    """Print the settings in effect and where each comes from.

    \b
    litrank.toml is read from the working directory, else from the user config directory
    ($LITRANK_CONFIG names another file). Example:
      library = ["refs.bib"]
      collection = "icml2026.jsonl"
      model = "hybrid"
      top = 30
      [zotero]
      to = "Reading list: ICML 2026"
    """
    from connectors import SourceError
    from connectors.files.config_file import candidates, read

    try:
        settings = read()
    except SourceError as exc:
        fail(str(exc))
    rows = []
    for key, built_in in BUILT_IN.items():
        if key in settings.values:
            value = settings.values[key]
            rows.append((key, ", ".join(value) if isinstance(value, list) else str(value), str(settings.path)))
        else:
            rows.append((key, built_in, "built-in default"))
    if output_format == "json":
        click.echo(json.dumps({"file": str(settings.path) if settings.path else None,
                               "looked_in": [str(path) for path in candidates()],
                               "settings": {key: {"value": value, "from": source} for key, value, source in rows}},
                              indent=2))
        return
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        click.echo(f"{key:<{width}}  {value}  [{source}]")
    where = settings.path or " or ".join(str(path) for path in candidates())
    click.echo(f"\n{'Settings file: ' if settings.path else 'No settings file; looked for '}{where}", err=True)
