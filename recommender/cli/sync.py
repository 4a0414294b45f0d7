"""``litrank sync``: write the top picks into a collection of your Zotero library.

What it writes is planned and carried out by :mod:`connectors.zotero.sync_plan` (``make_plan``:
create, add, update, remove; ``apply_plan``) through :class:`connectors.zotero.writer.ZoteroWriter`;
this module only ties them to the ranking and reports. Papers the user already had are not picks (the ranking leaves them out), so the
ranking library is the Zotero library without litrank's own items.
"""
from __future__ import annotations

import sys

import click

import connectors
from connectors.zotero.sync_plan import Plan, apply_plan, is_litrank_item_data, make_plan
from recommender import defaults
from recommender.cli.common import fail, judgements, load_sources, make_embedder, model_options, say, stage
from recommender.defaults import DEFAULT_DIVERSITY
from recommender.feedback import is_litrank_item

LOCAL_DATABASE_MESSAGE = (
    "litrank never writes to Zotero's database file (zotero:local): Zotero must be the only writer of "
    "zotero.sqlite. To sync, use the Web API (-l zotero:user/<id> with $ZOTERO_API_KEY, a key with write "
    "access from https://www.zotero.org/settings/keys), Zotero's local API where it accepts writes "
    "(-l zotero:local-api, Zotero 10), or export a BibTeX file to import "
    "(litrank rank -l zotero:local -o reading-list.bib, then File > Import in Zotero).")


def _render_plan(plan: Plan, to: str) -> str:
    lines = [f"Plan for the collection {to!r}" + ("" if plan.collection_key else " (to be created)") + ":"]
    for pick in plan.create:
        lines.append(f"  create  #{pick.rank:<3} {pick.paper.title}")
    for pick, data in plan.add:
        lines.append(f"  add     #{pick.rank:<3} {data.get('title') or data['key']}")
    for pick, data in plan.update:
        lines.append(f"  update  #{pick.rank:<3} {data.get('title') or data['key']}")
    for data in plan.remove:
        lines.append(f"  remove       {data.get('title') or data['key']}")
    for pick, data in plan.trashed:
        lines.append(f"  trashed #{pick.rank:<3} {data.get('title') or data['key']} (in your trash: not re-created)")
    lines.append(plan.counts() + ".")
    return "\n".join(lines) + "\n"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-l", "--library", "library_sources", multiple=True, metavar="SOURCE", required=True,
              help="Your Zotero library, written to: zotero:user/<id>, zotero:group/<id> (Web API) or "
                   "zotero:local-api or zotero:local-api/groups/<id> (Zotero 10 running; asks you once in Zotero). "
                   "With other library sources, "
                   "the first Zotero one is written.")
@click.option("-c", "--collection", "collection_sources", multiple=True, metavar="SOURCE",
              help="The papers to rank, as for `litrank rank`. Default: the bundled ICML 2026 list.")
@click.option("--to", "to", required=True, metavar="COLLECTION",
              help="The Zotero collection to fill, e.g. \"Reading list: ICML 2026\" or \"litrank/ICML 2026\" "
                   "(created with its parents when missing).")
@click.option("-n", "--top", default=20, show_default=True, type=click.IntRange(min=1), help="How many picks.")
@click.option("--dry-run", is_flag=True, help="Print the plan (create / add / update / remove) and write nothing.")
@model_options
@click.option("--diversity", type=click.FloatRange(0, 1), default=DEFAULT_DIVERSITY, show_default=True,
              help="As for `litrank rank`.")
@click.option("--no-feedback", is_flag=True, help="Ignore stored likes/dislikes.")
def sync(library_sources, collection_sources, to, top, dry_run, model_name, embedder, diversity, no_feedback):
    """Put the top picks into a collection of your Zotero library, idempotently.

    Creates the collection when missing, creates an item (tagged `litrank`, rank, score and
    explanation on `litrank:` lines of Extra) for each pick not yet in the library, adds
    existing ones to the collection, updates litrank's fields of the picks already there and
    takes picks that fell out of the top N out of the collection (never out of the library).
    Running it again changes only what changed.

    With -l zotero:local-api (Zotero 10 running), the first write makes Zotero ask you to allow
    litrank; "Always Allow" keeps the key for later syncs. Examples:

    \b
      litrank sync -l zotero:user/475425 --to "Reading list: ICML 2026" --dry-run
      litrank sync -l zotero:user/475425 -c icml2026.jsonl --to "litrank/ICML 2026" -n 30
      litrank sync -l zotero:local-api --to "Reading list: ICML 2026"
    """
    from connectors.zotero.local_writes import LocalWriteAccess, LocalWriteError
    from connectors.zotero.web import client_for
    from connectors.zotero.writer import WriteError, ZoteroWriter

    targets = [s for s in library_sources if s.split("?", 1)[0] in ("zotero:local-api",)
               or s.startswith(("zotero:local-api/groups/", "zotero:user/", "zotero:group/", "zotero:web/"))]
    if not targets:
        if any(s.split("?", 1)[0] == "zotero:local" for s in library_sources):
            fail(LOCAL_DATABASE_MESSAGE)
        fail("sync writes to a Zotero library: pass -l zotero:user/<id>, zotero:group/<id> or zotero:local-api")
    if not to.strip().strip("/"):
        fail("--to needs a collection name")
    try:
        zotero_library = client_for(targets[0])
        access = None
        if zotero_library.target.local:
            access = LocalWriteAccess(zotero_library, notify=lambda message: click.echo(message, err=True))
            try:
                access.check()
            except LocalWriteError as exc:
                if not dry_run:
                    raise
                say(f"Note: {exc}")
        elif not dry_run:
            # Before anything is ranked: a read-only key would fail only at the first write.
            zotero_library.check_write_access()
        writer = ZoteroWriter(zotero_library, access=access)
        with stage("Reading the library..."):
            everything = connectors.load_many(library_sources, None)
        library = [p for p in everything if not is_litrank_item(p)]
        if not library:
            fail(f"the library ({', '.join(library_sources)}) contains no papers of yours")
        collection, _ = load_sources(collection_sources, None, defaults.bundled_collection,
                                      defaults.COLLECTION_DESCRIPTION, "collection")
        judged = {} if no_feedback else judgements(everything, collection)
        from recommender.ranking import Ranker, make_model  # scikit-learn and SciPy: only when ranking

        model = make_model(model_name, make_embedder(embedder) if model_name != "similarity" else None)
        with stage(f"Ranking {len(collection):,} papers against {len(library):,}..."):
            ranking = Ranker(model, diversity=diversity).rank(library, collection, top=top, judgements=judged)
        with stage(f"Reading the items of {writer.source}..."):
            collection_key = writer.find_collection(to)
            items = writer.items()
            trashed = writer.trashed_items()
        plan = make_plan(ranking, items, collection_key, writer.source, to, trashed)
    except (connectors.SourceError, ValueError) as exc:
        fail(str(exc))
    if dry_run:
        click.echo(_render_plan(plan, to), nl=False)
        say(f"Dry run: nothing was written ({plan.counts()}).")
        return
    total = plan.write_count()
    try:
        with stage(f"Writing to {writer.source}...") as update:
            sent = {"objects": 0}

            def written(kind: str, count: int) -> None:
                if kind == "items":
                    sent["objects"] += count
                    update(f"Writing to {writer.source}: {sent['objects']:,} of {total:,} items sent...")

            writer.on_written = written
            result = apply_plan(writer, plan, ranking.n_candidates, to,
                                lambda path: say(f"Created the collection {path!r}."))
    except (connectors.SourceError, WriteError) as exc:
        fail(str(exc))
    failures = result.failures
    for failure in failures:
        click.echo(f"error: not written: {failure}", err=True)
    n_created, n_added, n_updated, n_removed = result.counts()
    say(f"created {n_created}, added {n_added}, updated {n_updated}, removed {n_removed} in {to!r} of {writer.source}.")
    in_trash = [d for d in trashed if is_litrank_item_data(d)]
    if in_trash:
        say(f"{len(in_trash)} of litrank's items {'is' if len(in_trash) == 1 else 'are'} in your Zotero trash: "
            f"counted as disliked, never created again ({len(plan.trashed)} of them ranked in the top "
            f"{top} this time). Restore one from the trash to take the dislike back.")
    if failures:
        click.echo(f"{len(failures)} item{'s' if len(failures) != 1 else ''} could not be written; run the same "
                   "command again to complete the sync.", err=True)
        sys.exit(1)
