"""``litrank feedback``: like, dislike or forget papers, and list the stored judgements."""
from __future__ import annotations

import dataclasses
import io
import json
import shutil
from typing import Sequence

import click

import connectors
from connectors.files.feedback_store import FeedbackEntry, FeedbackStore
from recommender import defaults
from recommender.cli.common import fail, load_sources, say
from recommender.feedback import DISLIKED, LIKED
from recommender.paper import Paper

_LABELS = {LIKED: "liked", DISLIKED: "disliked"}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--like", "like_ids", multiple=True, metavar="ID",
              help="A paper you want more of: its id as `litrank rank` prints it (JSON `id`). Repeatable.")
@click.option("--dislike", "dislike_ids", multiple=True, metavar="ID",
              help="A paper you want less of. Repeatable.")
@click.option("--forget", "forget_ids", multiple=True, metavar="ID",
              help="Remove the stored judgement of a paper. Repeatable.")
@click.option("-l", "--library", "library_sources", multiple=True, metavar="SOURCE",
              help="Library source the ids refer to, as for `litrank rank`. Repeatable. "
                   "Default: the bundled example library.")
@click.option("-c", "--collection", "collection_sources", multiple=True, metavar="SOURCE",
              help="Collection source the ids refer to, as for `litrank rank`. Repeatable. "
                   "Default: the bundled ICML 2026 list.")
@click.option("--list", "list_entries", is_flag=True, help="Print the stored judgements on stdout.")
@click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Format of --list.")
def feedback(like_ids, dislike_ids, forget_ids, library_sources, collection_sources, list_entries, output_format):
    """Tell litrank which papers you like or dislike; later runs use it.

    IDs are paper ids as `litrank rank` prints them (the JSON `id`, e.g. icml2026-1d3ae34a7f,
    or a BibTeX key), looked up in the same --library/--collection sources you ranked. The
    judgement is stored under the paper's identity (DOI, arXiv id, title and first author,
    abstract), so it still applies when the paper comes back from another source. Judging a
    paper again replaces the earlier judgement.

    The store is feedback.sqlite in $LITRANK_DATA_DIR, else in your user data directory.
    Examples:

    \b
      litrank feedback --like icml2026-1d3ae34a7f --dislike icml2026-a6eabe1261
      litrank feedback -l refs.bib -c icml2026.jsonl --dislike icml2026-42
      litrank feedback --forget icml2026-1d3ae34a7f
      litrank feedback --list
      litrank feedback --list --format json > judgements.json
    """
    _check_exclusive(like_ids, dislike_ids, forget_ids)
    if not (like_ids or dislike_ids or forget_ids or list_entries):
        raise click.UsageError("nothing to do: give --like, --dislike, --forget or --list")
    store = FeedbackStore()
    try:
        if like_ids or dislike_ids or forget_ids:
            papers = _resolve([*like_ids, *dislike_ids, *forget_ids], library_sources, collection_sources)
            pairs = [(papers[i], LIKED) for i in dict.fromkeys(like_ids)]
            pairs += [(papers[i], DISLIKED) for i in dict.fromkeys(dislike_ids)]
            store.record_many(pairs, source="cli")
            to_forget = [papers[i] for i in dict.fromkeys(forget_ids)]
            forgotten = store.forget_many(to_forget)
            say(_summary(len(dict.fromkeys(like_ids)), len(dict.fromkeys(dislike_ids)), len(to_forget), forgotten,
                         store))
        if list_entries:
            entries = store.entries()
            if output_format == "json":
                click.echo(entries_to_json(entries), nl=False)
            elif entries:
                width = max(100, shutil.get_terminal_size((120, 24)).columns)
                caption = f"{len(entries)} judgement{'' if len(entries) == 1 else 's'} in {store.path}."
                click.echo(render_entries(entries, caption, width), nl=False)
            else:
                say(f"No judgements stored in {store.path}.")
    except (connectors.SourceError, ValueError) as exc:
        fail(str(exc))


def _check_exclusive(like_ids: Sequence[str], dislike_ids: Sequence[str], forget_ids: Sequence[str]) -> None:
    options = (("--like", like_ids), ("--dislike", dislike_ids), ("--forget", forget_ids))
    for position, (first, first_ids) in enumerate(options):
        for second, second_ids in options[position + 1:]:
            both = [paper_id for paper_id in dict.fromkeys(first_ids) if paper_id in second_ids]
            if both:
                raise click.UsageError(f"paper id {both[0]!r} is given to both {first} and {second}")


def _resolve(ids: Sequence[str], library_sources, collection_sources) -> dict[str, Paper]:
    """The paper of each id, from the collection first, then the library; all ids or exit 2."""
    collection, collection_label = load_sources(collection_sources, None, defaults.bundled_collection,
                                                 defaults.COLLECTION_DESCRIPTION, "collection")
    library, library_label = load_sources(library_sources, None, defaults.bundled_library,
                                           defaults.LIBRARY_DESCRIPTION, "library")
    by_id: dict[str, Paper] = {}
    for paper in [*collection, *library]:
        by_id.setdefault(paper.id, paper)
    unknown = [paper_id for paper_id in dict.fromkeys(ids) if paper_id not in by_id]
    if unknown:
        noun = "id" if len(unknown) == 1 else "ids"
        fail(f"unknown paper {noun} {', '.join(repr(i) for i in unknown)} "
              f"(not in {collection_label} or {library_label})")
    return by_id


def _summary(liked: int, disliked: int, asked_to_forget: int, forgotten: int, store: FeedbackStore) -> str:
    parts = []
    if liked or disliked:
        parts += [f"liked {liked}", f"disliked {disliked}"]
    if asked_to_forget:
        missing = asked_to_forget - forgotten
        parts.append(f"forgot {forgotten}" + (f" ({missing} had no judgement)" if missing else ""))
    text = ", ".join(parts)
    return f"{text[:1].upper()}{text[1:]} (stored in {store.path})."


def entries_to_json(entries: Sequence[FeedbackEntry]) -> str:
    records = [{**dataclasses.asdict(entry), "keys": list(entry.keys)} for entry in entries]
    return json.dumps(records, ensure_ascii=False, indent=2) + "\n"


def render_entries(entries: Sequence[FeedbackEntry], caption: str, width: int | None = None) -> str:
    from rich import box  # (imported here: every other command loads this module, few need rich)
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, caption=caption, caption_justify="left", expand=False)
    table.add_column("judgement", no_wrap=True)
    table.add_column("id", overflow="fold")
    table.add_column("title", ratio=3, overflow="fold")
    table.add_column("source", no_wrap=True)
    table.add_column("when (UTC)", no_wrap=True)
    for entry in entries:
        when = entry.created_at[:16].replace("T", " ")
        table.add_row(_LABELS.get(entry.judgement, str(entry.judgement)), entry.paper_id, entry.title or "(untitled)",
                      entry.source, when)
    console = Console(width=width or 120, file=io.StringIO(), color_system=None, highlight=False,
                      emoji=False, legacy_windows=False, force_terminal=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()).strip("\n") + "\n"
