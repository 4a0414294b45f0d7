"""The ``litrank`` command line: the command group and its commands.

Each command group lives in a module of its own (:mod:`~recommender.cli.rank` for ``rank`` and
``report``, then one module a command), all sharing :mod:`~recommender.cli.common`. Commands are
thin: they parse options, call library functions and print; what they compute lives in the
pipeline (:mod:`recommender.ranking`) and the rooms below it.
"""
from __future__ import annotations

import gc

import click

from recommender.cli import affinity, cache, config, enrich, evaluate, feedback, fetch, index, rank, sync, zotero_plugin
from recommender.cli.common import configure_logging, settings_default_map
from recommender.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="litrank")
@click.option("-v", "--verbose", count=True, help="Also print informational messages on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors on stderr.")
@click.pass_context
def main(ctx: click.Context, verbose: int, quiet: bool) -> None:
    """litrank: rank a paper collection against your library and export a reading list.

    Run `litrank rank` to rank the bundled ICML 2026 list against the bundled example
    library, or `litrank rank -l refs.bib -c papers.jsonl -o reading-list.bib` for your own.
    """
    configure_logging(verbose, quiet)
    # litrank.toml (see `litrank config show`) gives defaults; flags on the command line win.
    ctx.default_map, _ = settings_default_map(main, check_sources=ctx.invoked_subcommand != "config")


def _verbose(ctx: click.Context, param: click.Parameter, value) -> None:
    if value:
        configure_logging(value if param.name == "verbose" else 0, param.name == "quiet")


def _with_verbosity(command: click.Command) -> click.Command:
    """``-v``/``-q`` after the command name too (``litrank rank -v``), as before it."""
    command.params += [
        click.Option(["-v", "--verbose"], count=True, expose_value=False, callback=_verbose,
                     help="Also print informational messages on stderr."),
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, callback=_verbose,
                     help="Print only errors on stderr."),
    ]
    for sub in getattr(command, "commands", {}).values():
        _with_verbosity(sub)
    return command


for _command in (rank.rank, rank.report_command, affinity.affinity, cache.cache, config.config, enrich.enrich,
                 evaluate.evaluate, feedback.feedback, fetch.fetch, index.index, sync.sync,
                 zotero_plugin.zotero_plugin):
    main.add_command(_with_verbosity(_command))


def run() -> None:
    """The ``litrank`` command: :func:`main` as the console script and ``python -m recommender``
    run it."""
    try:
        main(prog_name="litrank")
    finally:
        # The interpreter's last garbage collections walk every object that importing
        # scikit-learn and SciPy made: 0.1-0.2 s of each run. Frozen, they are not walked; any
        # cycles among them go with the process's memory.
        gc.freeze()
