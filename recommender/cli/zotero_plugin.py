"""``litrank zotero-plugin``: build the Zotero plugin, and answer its requests.

``build`` writes the ``.xpi`` (:mod:`connectors.zotero.plugin_package`); ``answer`` is what the
plugin runs: one JSON request on stdin, one JSON reply on stdout
(:mod:`recommender.zotero_plugin`, contract version 1 in ``docs/zotero-plugin.md``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

import connectors
from recommender.cli.common import OUTPUT_FILE, fail, say


@click.group("zotero-plugin", context_settings={"help_option_names": ["-h", "--help"]})
def zotero_plugin() -> None:
    """The Zotero 7–10 plugin: "Recommend papers for this collection" inside Zotero.

    \b
      litrank zotero-plugin build -o litrank.xpi
    then in Zotero: Tools → Plugins → gear menu → Install Plugin From File… (see
    docs/zotero-plugin.md).
    """


@zotero_plugin.command()
@click.option("-o", "--output", default="litrank.xpi", show_default=True, type=OUTPUT_FILE,
              help="The plugin file to write (atomically).")
@click.option("--update-json", type=OUTPUT_FILE, default=None,
              help="Also write Zotero's update manifest (updates.json) for this build, to serve at the "
                   "plugin's update_url.")
@click.option("--update-link", default=None, metavar="URL",
              help="Where the .xpi will be downloaded from (in the update manifest). Default: its file name "
                   "beside the manifest's update_url.")
@click.option("--python", "python", default=None, metavar="PATH",
              help="The Python interpreter the plugin runs litrank with. Default: the one running this "
                   "command.")
def build(output, update_json, update_link, python):
    """Write the plugin (.xpi) that runs this litrank.

    The same litrank and interpreter build the same bytes. Examples:

    \b
      litrank zotero-plugin build -o litrank.xpi
      litrank zotero-plugin build -o litrank.xpi --update-json updates.json
    """
    from connectors.zotero.plugin_package import build_xpi
    from recommender.version import __version__

    if Path(output).suffix.lower() != ".xpi":
        fail(f"--output {output!r} should end in .xpi: Zotero installs plugins from .xpi files")
    interpreter = python or sys.executable
    try:
        built = build_xpi(output, interpreter, __version__, update_json, update_link)
    except (connectors.SourceError, OSError) as exc:
        fail(str(exc))
    say(f"Wrote {output}: the Zotero plugin {built.addon_id} {built.version} ({len(built.files)} files, "
        f"sha256 {built.sha256[:12]}…), running litrank with {interpreter}.")
    if update_json:
        say(f"Wrote {update_json}: Zotero's update manifest for it.")
    say("Install it in Zotero: Tools → Plugins → gear menu → Install Plugin From File…")


def _reply(payload: dict, exit_code: int = 0) -> None:
    click.echo(json.dumps(payload, ensure_ascii=False))
    sys.exit(exit_code)


@zotero_plugin.command()
@click.option("--embedder", default=None, metavar="NAME|PATH|static|none",
              help="As for `litrank rank`: the sentence embedder (default: the embeddings extra's when "
                   "installed, else the bundled static table; also $LITRANK_EMBEDDER).")
def answer(embedder):
    """Answer one plugin request: JSON on stdin, JSON on stdout.

    What the plugin runs. A bad request or a failed source gives {"v": 1, "error": {"code",
    "message"}} on stdout and exit code 2, never a traceback. Example:

    \b
      litrank zotero-plugin answer < request.json > reply.json
    """
    from recommender.zotero_plugin import VERSION, AnswerError

    def error(code: str, message: str) -> None:
        _reply({"v": VERSION, "error": {"code": code, "message": message}}, 2)

    text = sys.stdin.read()
    try:
        request = json.loads(text)
    except ValueError as exc:
        error("bad_request", f"the request is not JSON ({exc})")
    try:
        from connectors.files.feedback_store import FeedbackStore
        from recommender.cli.common import make_embedder
        from recommender.zotero_plugin import answer as answer_request

        try:
            chosen = make_embedder(embedder)
        except SystemExit:  # make_embedder said why on stderr
            error("bad_request", f"the embedder {embedder or '(default)'} cannot be used here; see stderr")
        reply = answer_request(request, FeedbackStore(), chosen)
    except AnswerError as exc:
        error(exc.code, str(exc))
    except (connectors.SourceError, OSError, ValueError) as exc:
        error("failed", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    _reply(reply)
