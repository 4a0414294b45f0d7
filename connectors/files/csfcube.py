"""CSFCube: expert relevance judgements of ML/NLP papers to query papers, read as Papers.

CSFCube (Mysore, O'Gorman, McCallum, Zamani; NeurIPS 2021 Datasets and Benchmarks; CC BY-NC
4.0) grades 0–3 the relevance of a pool of candidate papers to each of 50 query-facets
(background, method, result of 16–17 query papers each). The directory holds

* ``papers.jsonl.gz``: ``{id, title, abstract, year}`` per paper,
* ``qrels.json``: ``{facet: {query_id: {candidate_id: grade}}}``,
* ``splits.json``: ``{facet or "all": {fold: ["<query>_<facet>", ...]}}``,
* ``specter-rankings.json``: ``{facet: {query_id: [candidate ids, best first]}}`` (optional),

as laid out in ``../shared/data/csfcube`` (see its README). :func:`load` reads them into
:class:`CSFCube`; the evaluation protocol is :mod:`recommender.evaluation.human_judgements`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from connectors._io import read_text
from connectors.errors import SourceError
from recommender.paper import Paper

FACETS = ("background", "method", "result")
_REQUIRED = ("papers.jsonl.gz", "qrels.json", "splits.json")


@dataclass
class CSFCube:
    """The dataset, keyed by paper id.

    Attributes
    ----------
    papers : dict of str to Paper
    qrels : dict of facet to dict of query id to dict of candidate id to grade (0–3)
    splits : dict of facet or "all" to dict of fold name to list of "<query>_<facet>"
    reference_rankings : dict of str to dict of facet to dict of query id to list of ids
        Released rankings of the same pools (``"specter"``), best first.
    """

    papers: dict[str, Paper]
    qrels: dict[str, dict[str, dict[str, int]]]
    splits: dict[str, dict[str, list[str]]]
    reference_rankings: dict[str, dict[str, dict[str, list[str]]]] = field(default_factory=dict)

    def query_facets(self, fold: str | None = None, facet: str = "all") -> list[tuple[str, str]]:
        """``(query_id, facet)`` pairs of a fold (``fold1_test``...), or every one with ``fold=None``."""
        if fold is None:
            pairs = [(query, name) for name in FACETS for query in self.qrels.get(name, {})]
            return [pair for pair in pairs if facet in ("all", pair[1])]
        try:
            keys = self.splits[facet][fold]
        except KeyError:
            folds = sorted(self.splits.get(facet, {}))
            raise SourceError(f"CSFCube has no fold {fold!r} for {facet!r}; folds: {', '.join(folds)}") from None
        return [tuple(key.rsplit("_", 1)) for key in keys]  # type: ignore[misc]

    def pool(self, query: str, facet: str) -> dict[str, int]:
        """The graded candidates of one query-facet, without the query paper itself."""
        return {candidate: grade for candidate, grade in self.qrels[facet][query].items() if candidate != query}


def _json(path: Path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None


def load(directory: str | Path) -> CSFCube:
    """Read a CSFCube directory; :class:`SourceError` names what is missing or malformed."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SourceError(f"{directory}: no CSFCube data here (pass --data DIR, the directory holding "
                          f"{', '.join(_REQUIRED)})")
    missing = [name for name in _REQUIRED if not (directory / name).is_file()]
    if missing:
        raise SourceError(f"{directory}: not a CSFCube directory (missing {', '.join(missing)})")
    papers: dict[str, Paper] = {}
    for number, line in enumerate(read_text(directory / "papers.jsonl.gz").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            paper_id = str(record["id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise SourceError(f"{directory / 'papers.jsonl.gz'}:{number}: not a paper record") from None
        year = record.get("year")
        papers[paper_id] = Paper(id=paper_id, title=str(record.get("title") or ""),
                                 abstract=str(record.get("abstract") or ""),
                                 year=int(year) if isinstance(year, int) else None, source=str(directory))
    qrels = {facet: {str(query): {str(c): int(g) for c, g in pool.items()} for query, pool in queries.items()}
             for facet, queries in _json(directory / "qrels.json").items()}
    splits = _json(directory / "splits.json")
    unknown = {c for queries in qrels.values() for query, pool in queries.items() for c in [query, *pool]} - set(papers)
    if unknown:
        raise SourceError(f"{directory}: {len(unknown)} judged papers are missing from papers.jsonl.gz "
                          f"(e.g. {sorted(unknown)[0]})")
    references = {}
    if (directory / "specter-rankings.json").is_file():
        references["specter"] = _json(directory / "specter-rankings.json")
    return CSFCube(papers, qrels, splits, references)
