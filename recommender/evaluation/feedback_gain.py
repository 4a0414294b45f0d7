"""What a user's judgements buy: ranking quality after judging the first k picks, on CSFCube.

The user's side of the plugin (tag a pick liked, drag it out or trash it) replayed on expert
judgements. For every task of a fold, the CSFCube query-facets (a one-paper library) and
the composite libraries of :mod:`recommender.evaluation.composite`:

1. the collection is ranked without feedback (the default model);
2. the user judges its **first k picks** (k = 5, 10, 20), what the plugin shows first: a
   pick graded 2 or 3 is *liked*, one graded 0 or 1 *disliked* (trashed);
3. each method ranks the collection again with those judgements, as
   :meth:`recommender.ranking.Ranker.rank` takes them (paper id -> +1 / -1), and is scored
   on the **papers not judged** (the protocol's NDCG%20 over them, and MAP).

"no feedback" is step 1's ranking of the same unjudged papers, so every gain is measured
against the ranking the user would have had. Methods (a name -> Ranker factory):

``liked join library``       what litrank does: a liked pick joins the library (one more paper
                             to match), a disliked one is never recommended and serves as no
                             pseudo-relevance feedback
``+ disliked pushed down``   the same, and a candidate loses 0.25 × its best standardised
                             similarity to a disliked pick (``HybridModel(disliked_weight=...)``)
``learned (LightGBM)``       the LightGBM ranker (``--model learned``), trained on the library's
                             held-out papers with liked picks as grade-2 and disliked ones as
                             grade-0 examples

The data arrives from the caller (:class:`connectors.files.csfcube.CSFCube`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from recommender.evaluation import composite
from recommender.evaluation.human_judgements import RELEVANT_GRADE, average_precision, ndcg_at_share, paired_lead
from recommender.feedback import DISLIKED, LIKED

K_VALUES = (5, 10, 20)
NO_FEEDBACK = "no feedback"
DISLIKED_WEIGHT = 0.25  # the best of 0.25, 0.5 and 1 on fold1_dev (all three below "liked join library")


@dataclass(frozen=True)
class Task:
    """A library and its graded collection: ``kind`` is "single" (a query-facet) or "composite"."""

    kind: str
    name: str
    library: tuple[str, ...]
    grades: dict[str, int]


def default_methods(embedder=None, learned: bool = True) -> dict[str, Callable[[], object]]:
    """Method name -> Ranker factory: the default model with the judgements used each way."""
    from recommender.models.hybrid import HybridModel
    from recommender.models.scoring import LearnedModel
    from recommender.ranking import Ranker

    methods = {"liked join library": lambda: Ranker(HybridModel(embedder=embedder)),
               "+ disliked pushed down": lambda: Ranker(HybridModel(embedder=embedder,
                                                                    disliked_weight=DISLIKED_WEIGHT))}
    if learned:
        methods["learned (LightGBM)"] = lambda: Ranker(LearnedModel(embedder=embedder))
    return methods


def baseline(embedder=None) -> Callable[[], object]:
    """The Ranker of step 1: the default model, no judgements."""
    from recommender.models.hybrid import HybridModel
    from recommender.ranking import Ranker

    return lambda: Ranker(HybridModel(embedder=embedder))


def tasks(data, fold: str) -> list[Task]:
    """Every query-facet of ``fold`` as a one-paper library, then the fold's composite libraries."""
    out = [Task("single", f"{query}_{facet}", (query,), dict(data.pool(query, facet)))
           for query, facet in data.query_facets(fold)]
    out += [Task("composite", library.name, library.library, dict(library.grades))
            for library in composite.build_libraries(data, fold)]
    return out


def judged_picks(ranked: Sequence[str], grades: Mapping[str, int], k: int) -> dict[str, int]:
    """The user's judgements of the first ``k`` picks: +1 for grade >= 2, -1 below."""
    return {paper_id: LIKED if grades.get(paper_id, 0) >= RELEVANT_GRADE else DISLIKED for paper_id in ranked[:k]}


def _order(ids: Sequence[str], scores: Sequence[float]) -> list[str]:
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))]


def _ranked_by(ranker, library, collection, judgements: Mapping[str, int]) -> list[str]:
    """The collection's unjudged papers in ``ranker``'s order with ``judgements``."""
    ranking = ranker.rank(library, collection, top=1, judgements=dict(judgements))
    return _order([paper.id for paper in ranking.candidates], ranking.scores)


def evaluate_feedback(data, task_list: Sequence[Task], rankers: Mapping[str, Callable[[], object]],
                      baseline: Callable[[], object], k_values: Sequence[int] = K_VALUES,
                      progress: Callable[[str], None] | None = None) -> dict[int, dict[str, dict[str, dict]]]:
    """``{k: {method: {task name: {"ndcg%20", "map", "liked", "disliked"}}}}``.

    ``baseline()`` gives the Ranker of step 1 (its order chooses the judged picks, and ranks
    the unjudged papers as "no feedback"); ``rankers`` the methods, each given the judgements.
    """
    results: dict[int, dict[str, dict[str, dict]]] = {k: {NO_FEEDBACK: {}, **{m: {} for m in rankers}}
                                                       for k in k_values}
    for task in task_list:
        library = [data.papers[paper_id] for paper_id in task.library]
        collection_ids = sorted(task.grades)
        collection = [data.papers[paper_id] for paper_id in collection_ids]
        first = _ranked_by(baseline(), library, collection, {})
        for k in k_values:
            judged = judged_picks(first, task.grades, k)
            rest = {paper_id: grade for paper_id, grade in task.grades.items() if paper_id not in judged}
            counts = {"liked": sum(v == LIKED for v in judged.values()),
                      "disliked": sum(v == DISLIKED for v in judged.values())}
            orders = {NO_FEEDBACK: [paper_id for paper_id in first if paper_id not in judged]}
            for method, factory in rankers.items():
                orders[method] = [paper_id for paper_id in _ranked_by(factory(), library, collection, judged)
                                  if paper_id in rest]
            for method, ranked in orders.items():
                results[k][method][task.name] = {"ndcg%20": ndcg_at_share(ranked, rest),
                                                 "map": average_precision(ranked, rest), **counts}
        if progress:
            progress(task.name)
    return results


def summary(results: Mapping[int, Mapping[str, Mapping[str, Mapping]]], task_list: Sequence[Task]) -> dict:
    """``{k: {kind ("single", "composite", "all"): {method: {"ndcg%20", "map", "gain", "gain_se"}}}}``:
    means over the tasks (rounded to 4 places); "gain" is the NDCG%20 over "no feedback", and
    "gain_se" its standard error: the spread of the tasks' own gains over √tasks (paired: each
    task against its own ranking without feedback; 0 with fewer than two tasks)."""
    kinds = {"single": [t.name for t in task_list if t.kind == "single"],
             "composite": [t.name for t in task_list if t.kind == "composite"],
             "all": [t.name for t in task_list]}
    out: dict = {}
    for k, methods in results.items():
        out[k] = {}
        for kind, names in kinds.items():
            if not names:
                continue
            base = float(np.mean([methods[NO_FEEDBACK][n]["ndcg%20"] for n in names]))
            row = {}
            for method, per_task in methods.items():
                ndcg = float(np.mean([per_task[n]["ndcg%20"] for n in names]))
                gain = paired_lead([per_task[n]["ndcg%20"] for n in names],
                                   [methods[NO_FEEDBACK][n]["ndcg%20"] for n in names])
                row[method] = {"ndcg%20": round(ndcg, 4), "map": round(float(np.mean([per_task[n]["map"]
                                                                                    for n in names])), 4),
                               "gain": round(ndcg - base, 4), "gain_se": gain["se"]}
            judged = methods[NO_FEEDBACK]
            out[k][kind] = {"tasks": len(names), "liked_mean": round(float(np.mean([judged[n]["liked"] for n in names])),
                                                                      2), "methods": row}
    return out


def markdown(table: Mapping, kinds: Sequence[str] = ("all", "single", "composite")) -> str:
    """One Markdown table per task kind: a row per method, NDCG%20 / MAP and the gain ± its
    standard error for each k."""
    lines = []
    ks = list(table)
    for kind in kinds:
        if kind not in table[ks[0]]:
            continue
        first = table[ks[0]][kind]
        liked = ", ".join(f"{table[k][kind]['liked_mean']:g} of {k}" for k in ks)
        lines.append(f"\n{kind} ({first['tasks']} tasks; liked on average: {liked}), NDCG%20 / MAP "
                     f"(gain ± standard error):\n")
        lines.append("| method | " + " | ".join(f"k = {k}" for k in ks) + " |")
        lines.append("|" + " --- |" * (len(ks) + 1))
        for method in first["methods"]:
            cells = [table[k][kind]["methods"][method] for k in ks]
            lines.append(f"| {method} | " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def _cell(cell: Mapping) -> str:
    """``0.568 / 0.312 (+0.017 ± 0.012)``; tables of results saved before the standard error was
    kept show the gain alone."""
    spread = f" ± {cell['gain_se']:.3f}" if "gain_se" in cell else ""
    return f"{cell['ndcg%20']:.3f} / {cell['map']:.3f} ({cell['gain']:+.3f}{spread})"
