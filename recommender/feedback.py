"""Judgements of papers (liked / disliked), as ``paper.id -> judgement`` dicts. Pure: no I/O.

The local store is :class:`connectors.feedback_store.FeedbackStore`; a BibTeX library can also
carry judgements as the keyword ``litrank:liked`` or ``litrank:disliked`` (any case).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .paper import Paper

LIKED = 1
DISLIKED = -1

KEYWORDS = {"litrank:liked": LIKED, "litrank:disliked": DISLIKED}


def judgements_from_keywords(papers: Iterable[Paper]) -> dict[str, int]:
    """``paper.id -> judgement`` for papers tagged ``litrank:liked`` / ``litrank:disliked``.

    A paper tagged both ways is ambiguous and left out.
    """
    result = {}
    for paper in papers:
        found = {KEYWORDS[keyword] for keyword in (k.strip().lower() for k in paper.keywords) if keyword in KEYWORDS}
        if len(found) == 1:
            result[paper.id] = found.pop()
    return result


def merge_judgements(*dicts: Mapping[str, int]) -> dict[str, int]:
    """Merge ``paper.id -> judgement`` dicts; a later dict wins over an earlier one."""
    merged: dict[str, int] = {}
    for judgements in dicts:
        merged.update(judgements)
    return merged
