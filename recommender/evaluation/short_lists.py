"""Ranking a short list: a handful of graded candidates per library, as a researcher rates the
papers put in front of them.

A collection is not always a conference's 3,000 papers. A reviewer's bidding list, a reading
group's shortlist, the dozen papers a colleague forwarded: short lists, all chosen near the
reader's interests, where the question is the order, not the needle in the haystack. Expertise
datasets ask researchers exactly that (how well do you know the topic of each of these papers?)
and score a system by the pairs of papers it orders as the researcher did. A model that
standardises its scores over the collection meets its hardest case here: 16 papers say little
about what is typical.

This benchmark makes such lists from CSFCube's expert grades. For every task of a fold (each
query-facet as a one-paper library, and the composite libraries and publication lists of
:mod:`recommender.evaluation.composite`), :data:`PER_GRADE` candidates of each grade 0-3 are
drawn from its pool, seeded, :data:`DRAWS` times; each short list is the whole collection the
library is ranked against. The measure is the **weighted pairwise loss**: over the pairs of
candidates with different grades, the share (each pair weighted by its grade difference) that
the ranking puts the other way round, a tie counting half. Lower is better; 0.5 is chance.

The data arrives from the caller (an object with ``papers``, ``pool(query, facet)`` and
``query_facets(fold)``, as :class:`connectors.files.csfcube.CSFCube` has).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from recommender.evaluation import composite
from recommender.evaluation.holdout import Scorer, library_scorers
from recommender.evaluation.human_judgements import paired_lead

PER_GRADE = 4
DRAWS = 3
GRADES = (0, 1, 2, 3)
KINDS = ("single", "composite", "balanced", "main line")


@dataclass(frozen=True)
class ShortList:
    """One library and one short list of graded candidates drawn from its pool."""

    name: str
    kind: str  # one of KINDS
    library: tuple[str, ...]
    candidates: tuple[str, ...]
    grades: Mapping[str, int]


def draw_short_list(grades: Mapping[str, int], rng: np.random.Generator, per_grade: int = PER_GRADE) -> list[str]:
    """Up to ``per_grade`` candidates of each grade, drawn without replacement, sorted by id."""
    chosen: list[str] = []
    for grade in GRADES:
        ids = sorted(paper_id for paper_id, value in grades.items() if value == grade)
        if ids:
            chosen.extend(rng.choice(ids, size=min(per_grade, len(ids)), replace=False).tolist())
    return sorted(chosen)


def pairwise_loss(candidates: Sequence[str], scores: Sequence[float], grades: Mapping[str, int]) -> float:
    """Share of the grade-weighted pairs the scores order against the grades (ties: half);
    NaN when all candidates share one grade."""
    grade = np.array([grades[paper_id] for paper_id in candidates], dtype=np.float64)
    score = np.asarray(scores, dtype=np.float64)
    higher = grade[:, None] > grade[None, :]  # pair (i, j): i should rank above j
    weight = np.where(higher, grade[:, None] - grade[None, :], 0.0)
    total = weight.sum()
    if total == 0:
        return float("nan")
    wrong = (score[:, None] < score[None, :]) + 0.5 * (score[:, None] == score[None, :])
    return float((weight * wrong).sum() / total)


def build_short_lists(data, fold: str, draws: int = DRAWS, per_grade: int = PER_GRADE, seed: int = 0) -> list[ShortList]:
    """Every task of ``fold`` (query-facets, composite libraries, publication lists), ``draws``
    short lists each; a draw whose candidates all share one grade is left out."""
    tasks: list[tuple[str, str, tuple[str, ...], dict[str, int]]] = []
    for query, facet in data.query_facets(fold):
        tasks.append((f"{fold}/{query}_{facet}", "single", (query,), dict(data.pool(query, facet))))
    for library in composite.build_libraries(data, fold, seed=seed):
        tasks.append((library.name, "composite", tuple(library.library), dict(library.grades)))
    for library in composite.build_publication_libraries(data, fold, seed=seed):
        tasks.append((library.name, library.shape, tuple(library.library), dict(library.grades)))
    return draw_short_lists(tasks, draws, per_grade, seed)


def draw_short_lists(tasks: Sequence[tuple[str, str, tuple[str, ...], Mapping[str, int]]], draws: int = DRAWS,
                     per_grade: int = PER_GRADE, seed: int = 0) -> list[ShortList]:
    """``draws`` short lists for each (name, kind, library ids, grades of its pool) task."""
    lists = []
    for name, kind, library, grades in tasks:
        # Seeded by the task's name, so a list does not change when other tasks come or go.
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        for draw in range(draws):
            candidates = draw_short_list(grades, rng, per_grade)
            if len({grades[c] for c in candidates}) > 1:
                lists.append(ShortList(f"{name}#{draw}", kind, library, tuple(candidates),
                                       {c: grades[c] for c in candidates}))
    return lists


def first_of_each_kind(lists: Sequence[ShortList], count: int | None) -> list[ShortList]:
    """The first ``count`` short lists of each kind (all with None), in their order."""
    if count is None:
        return list(lists)
    seen: dict[str, int] = {}
    kept = []
    for short in lists:
        seen[short.kind] = seen.get(short.kind, 0) + 1
        if seen[short.kind] <= count:
            kept.append(short)
    return kept


def evaluate_short_lists(data, lists: Sequence[ShortList], methods: Sequence[str], embedder=None, seed: int = 0,
                         extra_scorers: Mapping[str, Scorer] | None = None,
                         progress: Callable[[str], None] | None = None) -> dict[str, dict[str, float]]:
    """``{method: {list name: pairwise loss}}``: every method ranks every short list, the list
    being its whole collection. ``extra_scorers`` adds methods by name (model settings, say)."""
    scorers = {**library_scorers(embedder, seed), **(extra_scorers or {})}
    methods = list(dict.fromkeys([*methods, *(extra_scorers or {})]))
    unknown = [m for m in methods if m not in scorers]
    if unknown:
        need = " (they need --embedder)" if set(unknown) & set(composite.EMBEDDING_METHODS) else ""
        raise ValueError(f"unknown short-list methods {', '.join(unknown)}{need}; choose from {', '.join(scorers)}")
    results: dict[str, dict[str, float]] = {method: {} for method in methods}
    for short in lists:
        library = [data.papers[paper_id] for paper_id in short.library]
        collection = [data.papers[paper_id] for paper_id in short.candidates]
        for method in methods:
            scores = np.asarray(scorers[method](library, collection), dtype=np.float64)
            results[method][short.name] = pairwise_loss(short.candidates, scores, short.grades)
        if progress:
            progress(short.name)
    return results


def summary(results: Mapping[str, Mapping[str, float]], lists: Sequence[ShortList]) -> dict[str, dict]:
    """``{"all" or kind: {"lists": n, "methods": {method: mean loss}}}``, rounded to 4 places;
    "all" is the mean of the kinds' means (each kind counts once, however many lists it has)."""
    out: dict[str, dict] = {}
    for kind in KINDS:
        names = [short.name for short in lists if short.kind == kind]
        out[kind] = {"lists": len(names), "methods": {
            method: (round(float(np.mean([values[name] for name in names])), 4) if names else float("nan"))
            for method, values in results.items()}}
    present = [kind for kind in KINDS if out[kind]["lists"]]
    out["all"] = {"lists": sum(out[kind]["lists"] for kind in present), "methods": {
        method: (round(float(np.mean([out[kind]["methods"][method] for kind in present])), 4) if present
                 else float("nan")) for method in results}}
    return out


def leads(results: Mapping[str, Mapping[str, float]], lists: Sequence[ShortList],
          defaults: Sequence[str] = composite.DEFAULT_ROWS,
          baselines: Sequence[str] = composite.LEAD_BASELINES) -> dict[str, dict]:
    """``{kind or "all": {default: {baseline: {"lead", "se"}}}}``: how much lower each default
    row's loss is than each baseline's (the baseline's loss minus the default's: positive, the
    default orders more pairs right), ± its standard error, paired library by library.

    A library's draws share its library and pool, so each method's losses are first averaged
    over a library's draws; the differences are then paired over libraries
    (:func:`~recommender.evaluation.human_judgements.paired_lead`). "all", as in
    :func:`summary`, is the mean of the kinds' leads, its standard error theirs added in
    quadrature over the number of kinds (the kinds are different libraries). Kinds without
    lists, and rows or baselines not in ``results``, are left out."""
    def per_library(method: str, kind: str) -> dict[str, float]:
        draws: dict[str, list[float]] = {}
        for short in lists:
            if short.kind == kind and not np.isnan(results[method][short.name]):
                draws.setdefault(short.name.rsplit("#", 1)[0], []).append(results[method][short.name])
        return {library: float(np.mean(values)) for library, values in draws.items()}

    rows = [default for default in defaults if default in results]
    against = {default: [b for b in baselines if b in results and b != default] for default in rows}
    out: dict[str, dict] = {}
    for kind in KINDS:
        if not rows or not any(short.kind == kind for short in lists):
            continue
        # Each method's per-library means once, whichever rows it is paired with.
        means = {method: per_library(method, kind) for method in {*rows, *(b for bs in against.values() for b in bs)}}

        def lead(default: str, baseline: str) -> dict[str, float]:
            both = sorted(set(means[default]) & set(means[baseline]))
            return paired_lead([means[baseline][name] for name in both], [means[default][name] for name in both])

        out[kind] = {default: {baseline: lead(default, baseline) for baseline in against[default]} for default in rows}
    kinds = list(out)
    if kinds:
        first = out[kinds[0]]
        out["all"] = {default: {baseline: {
            "lead": round(float(np.mean([out[kind][default][baseline]["lead"] for kind in kinds])), 4),
            "se": round(float(np.sqrt(sum(out[kind][default][baseline]["se"] ** 2 for kind in kinds)) / len(kinds)), 4)}
            for baseline in against} for default, against in first.items()}
    return out
