"""Judgements of papers (liked / disliked), as ``paper.id -> judgement`` dicts. Pure: no I/O.

The local store is :class:`connectors.files.feedback_store.FeedbackStore`; a BibTeX library can also
carry judgements as the keyword ``litrank:liked`` or ``litrank:disliked`` (any case).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from recommender.paper import IdentityIndex, Paper

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


# --- judgements given in Zotero, on the items litrank wrote (see `litrank sync`) ---------------

LITRANK_TAG = "litrank"
# Paper.fields flag the Zotero readers set on an item of the trash (connectors.zotero.items.TRASHED).
TRASHED = "trashed"
EXTRA_PREFIX = "litrank:"
IN_COLLECTION = "litrank: in "
DROPPED_FROM = "litrank: dropped from "


def is_litrank_item(paper: Paper) -> bool:
    """True for an item `litrank sync` created (tagged ``litrank``): a pick, not the user's reading."""
    return any(keyword.strip().lower() == LITRANK_TAG for keyword in paper.keywords)


def is_trashed(paper: Paper) -> bool:
    """True for a Zotero item in the trash (the readers return only litrank's own from there)."""
    return paper.fields.get(TRASHED) == "true"


def zotero_judgements(papers: Iterable[Paper]) -> list[tuple[Paper, int]]:
    """Judgements the user gave on litrank's Zotero items.

    An item moved to the trash is a dislike, whatever its tags; a ``litrank:liked`` /
    ``litrank:disliked`` tag is a like / dislike; an item that litrank put in a collection (an
    Extra line ``litrank: in <path>``) and that is no longer in that collection, without
    litrank having dropped it, was removed by the user: a dislike.
    """
    judged = []
    for paper in papers:
        if not is_litrank_item(paper):
            continue
        if is_trashed(paper):
            judged.append((paper, DISLIKED))
            continue
        tagged = judgements_from_keywords([paper]).get(paper.id)
        if tagged is not None:
            judged.append((paper, tagged))
            continue
        lines = paper.fields.get("extra", "").splitlines()
        placed = {line[len(IN_COLLECTION):].strip() for line in lines if line.startswith(IN_COLLECTION)}
        dropped = {line[len(DROPPED_FROM):].strip() for line in lines if line.startswith(DROPPED_FROM)}
        current = set(paper.fields.get("collections", "").splitlines())
        if placed - dropped - current:
            judged.append((paper, DISLIKED))
    return judged


def transfer_judgements(judged: Iterable[tuple[Paper, int]], papers: Iterable[Paper]) -> dict[str, int]:
    """``paper.id -> judgement`` for the ``papers`` that are the same paper as a judged one."""
    judged = list(judged)
    index = IdentityIndex([paper for paper, _ in judged])
    value = {id(paper): judgement for paper, judgement in judged}
    result = {}
    for paper in papers:
        match = index.find(paper)
        if match is not None:
            result[paper.id] = value[id(match)]
    return result
