"""What the HTML report shows, as plain data: the picks, their links and reasons, and the map.

:func:`report_data` turns a :class:`~recommender.ranking.Ranking` into a JSON-ready dict;
``connectors.html_report`` renders it into one self-contained page. Nothing here writes files.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from recommender.paper import Paper
from recommender.ranking import Ranking, Recommendation
from recommender.report.formats import DERIVED_MARK, SCORE_DIGITS, venue_year
from recommender.report.paper_map import PaperMap, topic_space
from recommender.version import __version__

_ARXIV_URL = "https://arxiv.org/abs/{}"
_DOI_URL = "https://doi.org/{}"
_OPENREVIEW = re.compile(r"^https?://(www\.)?openreview\.net/", re.IGNORECASE)
_PDF = re.compile(r"\.pdf($|[?#])|/pdf[/?]", re.IGNORECASE)


def paper_links(paper: Paper) -> list[dict[str, str]]:
    """DOI, arXiv, OpenReview, PDF and web links known for ``paper``, each ``{"label", "href"}``."""
    links: list[dict[str, str]] = []
    seen: set[str] = set()

    def add(label: str, href: str) -> None:
        if href and href.startswith(("http://", "https://")) and href not in seen:
            seen.add(href)
            links.append({"label": label, "href": href})

    if paper.doi:
        add("DOI", _DOI_URL.format(paper.doi))
    if paper.arxiv_id:
        add("arXiv", _ARXIV_URL.format(paper.arxiv_id))
    urls = [paper.url, paper.fields.get("pdf", ""), paper.fields.get("openreview", ""), paper.fields.get("url", "")]
    for url in urls:
        url = (url or "").strip()
        if not url:
            continue
        if _PDF.search(url):
            add("PDF", url)
        elif _OPENREVIEW.match(url):
            add("OpenReview", url)
        else:
            add("Web", url)
    return links


def report_data(ranking: Ranking, caption: str, to_bibtex: Callable[[Recommendation], str],
                paper_map: PaperMap | None = None) -> dict[str, Any]:
    """The report of ``ranking`` as a JSON-ready dict.

    ``to_bibtex`` renders one pick as a BibTeX entry (the CLI passes the BibTeX connector).
    The map holds every library paper and every ranked candidate, in that order; picks carry
    their rank. Keys: ``title``, ``caption``, ``model``, ``version``, ``counts``, ``picks``,
    ``sources`` (library papers picks came from), ``points`` and ``topics``.
    """
    library_index = {id(paper): index for index, paper in enumerate(ranking.library)}
    picks, used_sources = [], {}
    for pick in ranking.recommendations:
        paper = pick.paper
        because = []
        for reason in pick.because:
            source = library_index.get(id(reason.paper))
            if source is not None:
                used_sources[source] = used_sources.get(source, 0) + 1
            because.append({"library": source, "title": reason.paper.title or "(untitled)",
                            "similarity": round(reason.similarity, 3), "terms": list(reason.terms)})
        picks.append({
            "rank": pick.rank,
            "score": round(pick.score, SCORE_DIGITS),
            "title": paper.title or "(untitled)",
            "title_derived": paper.title_derived,
            "authors": paper.authors,
            "venue": venue_year(paper),
            "abstract": paper.abstract,
            "links": paper_links(paper),
            "because": because,
            "bibtex": to_bibtex(pick),
        })
    sources = [{"library": index, "title": ranking.library[index].title or "(untitled)", "picks": count}
               for index, count in sorted(used_sources.items(), key=lambda item: (-item[1], item[0]))]
    points, topics = _map(ranking, paper_map or PaperMap())
    return {
        "title": "litrank reading list",
        "caption": caption,
        "model": ranking.model,
        "judgements": ranking.judgements_note(),
        "version": __version__,
        "derived_mark": DERIVED_MARK,
        "counts": {"library": len(ranking.library), "candidates": len(ranking.candidates),
                   "picks": len(picks), "already_in_library": len(ranking.already_in_library)},
        "picks": picks,
        "sources": sources,
        "points": points,
        "topics": topics,
    }


def _map(ranking: Ranking, paper_map: PaperMap) -> tuple[dict[str, list], list[dict[str, Any]]]:
    """Coordinates of library papers then candidates (column lists), and the region labels."""
    model = ranking.fitted_model
    papers = list(ranking.library) + list(ranking.candidates)
    if model is None or not papers:
        return {"x": [], "y": [], "kind": [], "title": [], "rank": [], "score": []}, []
    rep = model.rep_
    rows = np.concatenate([np.asarray(model.library_rows_), np.asarray(model.candidate_rows_)[:len(ranking.candidates)]])
    words = rep.vectors["word"][rows]
    vocabulary = rep.word_vectorizer.get_feature_names_out() if rep.word_vectorizer is not None else None
    coords = paper_map.fit_transform(topic_space(rep, rows), words, vocabulary)
    rank_of = {id(pick.paper): pick.rank for pick in ranking.recommendations}
    scores = [None] * len(ranking.library) + (
        [round(float(s), SCORE_DIGITS) for s in ranking.scores] if ranking.scores is not None else
        [None] * len(ranking.candidates))
    n_library = len(ranking.library)
    points = {
        "x": [round(float(v), 4) for v in coords[:, 0]],
        "y": [round(float(v), 4) for v in coords[:, 1]],
        "kind": ["library" if i < n_library else ("pick" if id(p) in rank_of else "collection")
                 for i, p in enumerate(papers)],
        "title": [p.title or "(untitled)" for p in papers],
        "rank": [rank_of.get(id(p)) for p in papers],
        "score": scores,
    }
    topics = [{"label": label, "x": round(float(x), 4), "y": round(float(y), 4),
               "size": int(np.sum(paper_map.topic_ == t))}
              for t, (label, (x, y)) in enumerate(zip(paper_map.topic_labels_, paper_map.topic_centers_))]
    return points, topics
