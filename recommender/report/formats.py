"""Presenting a ranking: records for JSON/CSV, BibTeX-ready papers, and the terminal table.

Everything here builds strings or objects; writing them is the CLI's job (through connectors).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
from typing import TYPE_CHECKING, Any, Sequence

from recommender.paper import Paper
from recommender.text import truncate

if TYPE_CHECKING:  # the ranking imports scikit-learn; this module is loaded by every command
    from recommender.ranking import Ranking, Recommendation


def describe_feature(name: str) -> str:
    from recommender.models.signals import describe_feature as describe

    return describe(name)

DERIVED_MARK = "†"
SCORE_DIGITS = 4


def pick_record(pick: Recommendation) -> dict[str, Any]:
    """The JSON object of one pick (the documented ``--format json`` schema)."""
    paper = pick.paper
    record: dict[str, Any] = {
        "rank": pick.rank,
        "score": round(pick.score, SCORE_DIGITS),
        "id": paper.id,
        "title": paper.title,
        "title_derived": paper.title_derived,
        "authors": paper.authors,
        "year": paper.year,
        "venue": paper.venue,
        "url": paper.url,
        "doi": paper.doi,
        "arxiv_id": paper.arxiv_id,
        "abstract": paper.abstract,
        "because": [],
    }
    for reason in pick.because:
        entry = {"id": reason.paper.id, "title": reason.paper.title, "similarity": round(reason.similarity, SCORE_DIGITS)}
        if reason.terms:
            entry["terms"] = list(reason.terms)
        record["because"].append(entry)
    if pick.drivers:
        record["drivers"] = [{"feature": d.feature, "label": describe_feature(d.feature),
                              "contribution": round(d.contribution, SCORE_DIGITS)} for d in pick.drivers]
    return record


def to_json(picks: Sequence[Recommendation]) -> str:
    return json.dumps([pick_record(pick) for pick in picks], ensure_ascii=False, indent=2) + "\n"


def to_jsonl(picks: Sequence[Recommendation]) -> str:
    return "".join(json.dumps(pick_record(pick), ensure_ascii=False) + "\n" for pick in picks)


CSV_COLUMNS = ["rank", "score", "id", "title", "title_derived", "authors", "year", "venue", "url", "doi",
               "arxiv_id", "because", "abstract"]


def to_csv(picks: Sequence[Recommendation]) -> str:
    """One row a pick; with ``--explain`` a last column ``drivers`` ("label (+0.1234); ...")."""
    buffer = io.StringIO()
    explained = any(pick.drivers for pick in picks)
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS + (["drivers"] if explained else []), lineterminator="\n")
    writer.writeheader()
    for pick in picks:
        record = pick_record(pick)
        record["authors"] = "; ".join(record["authors"])
        record["because"] = "; ".join(f"{reason['title']} ({reason['similarity']})" for reason in record["because"])
        if explained:
            record["drivers"] = "; ".join(f"{d['label']} ({d['contribution']:+})" for d in record.get("drivers", []))
        writer.writerow(record)
    return buffer.getvalue()


def annotated_papers(picks: Sequence[Recommendation], n_candidates: int) -> list[Paper]:
    """Copies of the picked papers whose ``note`` carries litrank's rank, score and reason."""
    papers = []
    for pick in picks:
        note = f"litrank: rank {pick.rank} of {n_candidates}, score {pick.score:.{SCORE_DIGITS}f}"
        if pick.because:
            note += f"; closest to {pick.because[0].paper.title}"
        previous = pick.paper.fields.get("note", "")
        fields = {**pick.paper.fields, "note": f"{previous}; {note}" if previous else note}
        papers.append(dataclasses.replace(pick.paper, fields=fields))
    return papers


def venue_year(paper: Paper) -> str:
    """The venue and year of a paper ("ICML 2026"), as the table and the HTML report show them."""
    return " ".join(part for part in (paper.venue, str(paper.year) if paper.year else "") if part)


def render_table(ranking: Ranking, caption: str, explain: bool = False, width: int | None = None) -> str:
    """The ranking as a text table (rich), with a footnote for derived titles."""
    from rich import box  # (rich takes 25 ms to import: only the text tables need it)
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, caption=caption, caption_justify="left", expand=False, show_lines=explain)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("title", ratio=3, overflow="fold")
    table.add_column("venue", no_wrap=True)
    table.add_column("closest in your library" if not explain else "why", ratio=3, overflow="fold")
    any_derived = False
    for pick in ranking.recommendations:
        title = pick.paper.title or "(untitled)"
        if pick.paper.title_derived:
            title = f"{title} {DERIVED_MARK}"
            any_derived = True
        if explain:
            why = "\n".join(
                f"{truncate(reason.paper.title, 60)} ({reason.similarity:.2f})"
                + (f": {', '.join(reason.terms)}" if reason.terms else "")
                for reason in pick.because
            ) or "-"
            if pick.drivers:
                why += "\nmodel: " + ", ".join(f"{describe_feature(d.feature)} +{d.contribution:.2f}"
                                              for d in pick.drivers)
        else:
            why = truncate(pick.because[0].paper.title, 60) if pick.because else "-"
        table.add_row(str(pick.rank), f"{pick.score:.3f}", title, venue_year(pick.paper), why)
    console = Console(width=width or 120, file=io.StringIO(), color_system=None, highlight=False,
                      emoji=False, legacy_windows=False, force_terminal=False)
    console.print(table)
    # rich pads every line to the console width; trailing blanks only get in the way of a pipe.
    text = "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()).strip("\n") + "\n"
    if any_derived:
        text += f"{DERIVED_MARK} title derived from the abstract (the list gives none)\n"
    return text


def render_evaluation(summaries, metrics: Sequence[str], caption: str, width: int = 110) -> str:
    """The ``litrank evaluate`` table: one row per method, mean ± spread per metric."""
    from rich import box  # (rich takes 25 ms to import: only the text tables need it)
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, caption=caption, caption_justify="left")
    table.add_column("method")
    for metric in metrics:
        table.add_column(metric, justify="right")
    for method, summary in summaries.items():
        table.add_row(method, *(f"{summary.mean(m):.3f} ± {summary.std(m):.3f}" for m in metrics))
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False, emoji=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()).strip("\n") + "\n"


def render_grid(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "",
                width: int = 110) -> str:
    """A plain table with a title line: the first column left-aligned, the others right-aligned."""
    from rich import box  # (rich takes 25 ms to import: only the text tables need it)
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", caption=caption or None,
                  caption_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*row)
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False, emoji=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()).strip("\n") + "\n"
