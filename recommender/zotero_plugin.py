"""The Zotero plugin's answers: one request of Zotero items in, the picks and the writes out.

The plugin (``connectors/zotero/plugin/``, built by ``litrank zotero-plugin build``) reads and
writes Zotero through Zotero's own JavaScript API; litrank only ranks. It sends one request on
stdin to ``litrank zotero-plugin answer`` and applies the reply. Contract, version 1
(``docs/zotero-plugin.md``)::

    request: {"v": 1, "library": [item data], "picks": [item data], "top": 20,
              "candidates": {"source": "<anything -c accepts>"} | {"items": [item data]},
              "recommended": {"key": "<collection key>" | null, "path": "Parent/Recommended"}}
    reply:   {"v": 1, "picks": [{"rank", "score", "title", "because", "key"}],
              "create": [{"data": {...}}], "update": [{"key", "extra"}], "remove": [{"key", "extra"}],
              "feedback": {"liked": n, "disliked": n}, "summary": "..."}
    error:   {"v": 1, "error": {"code": "bad_request" | "source_failed" | "failed", "message": "..."}}

*Item data* is the Web API's ``data`` object, what ``item.toJSON()`` gives in Zotero. ``picks``
are litrank's own items (tagged ``litrank``): those in the Recommended collection, those the
user dragged out of it, and those in the trash (``"deleted": true``). The rules of ``litrank
sync`` apply, through the same plan (:func:`connectors.zotero.sync_plan.make_plan`): a pick is
found again by its identity and updated, never created twice; a trashed pick is never created
again and counts as a dislike, as do a pick dragged out of the collection and a ``litrank:disliked``
tag (``litrank:liked`` is a like); only litrank's items are ever updated or taken out of the
collection, and nothing is ever deleted.
"""
from __future__ import annotations

from typing import Any, Mapping

import connectors
from connectors.files import litrank_index
from connectors.zotero.items import paper_from_item
from connectors.zotero.sync_plan import (
    DROPPED_FROM,
    collection_path,
    extra_lines,
    item_type,
    make_plan,
    merge_extra,
    new_item,
)
from recommender.feedback import IN_COLLECTION
from recommender.ranking import Ranker, gather_judgements, make_model, read_index

VERSION = 1
SOURCE = "zotero"
VENUE_FIELDS = {"conferencePaper": "proceedingsTitle", "journalArticle": "publicationTitle", "preprint": "repository"}


class AnswerError(ValueError):
    """A request litrank cannot answer: ``code`` (``bad_request``, ``source_failed``) and a
    one-line message for the user."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def item_template(kind: str) -> dict[str, Any]:
    """The fields of a new item of ``kind`` that a pick fills (all valid for ``item.fromJSON``
    in Zotero 7 and later), as the Web API's item templates give them."""
    template = {"itemType": kind, "title": "", "creators": [], "abstractNote": "", VENUE_FIELDS[kind]: "",
                "date": "", "DOI": "", "url": "", "extra": "", "tags": [], "collections": [], "relations": {}}
    if kind == "preprint":
        template["archiveID"] = ""
    return template


def _items(value: Any, name: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise AnswerError("bad_request", f"'{name}' must be a list of Zotero item data objects")
    return value


def _validated(request: Any) -> dict[str, Any]:
    if not isinstance(request, dict):
        raise AnswerError("bad_request", "the request must be a JSON object")
    if request.get("v") != VERSION:
        raise AnswerError("bad_request", f"unsupported request version {request.get('v')!r}; this litrank answers "
                                         f"version {VERSION}")
    top = request.get("top", 20)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise AnswerError("bad_request", f"'top' must be a positive whole number, not {top!r}")
    candidates = request.get("candidates")
    if not isinstance(candidates, dict) or (set(candidates) != {"source"} and set(candidates) != {"items"}):
        raise AnswerError("bad_request", "'candidates' must be {\"source\": \"...\"} or {\"items\": [...]}")
    if "source" in candidates and not (isinstance(candidates["source"], str) and candidates["source"].strip()):
        raise AnswerError("bad_request", "'candidates.source' must name a source, e.g. arxiv:cs.LG or a file")
    recommended = request.get("recommended", {})
    if not isinstance(recommended, dict) or not isinstance(recommended.get("path", "Recommended"), str) \
            or not isinstance(recommended.get("key"), (str, type(None))):
        raise AnswerError("bad_request", "'recommended' must be {\"key\": \"...\" or null, \"path\": \"...\"}")
    return {"library": _items(request.get("library", []), "library"), "picks": _items(request.get("picks", []), "picks"),
            "candidates": candidates, "top": top, "recommended_key": recommended.get("key"),
            "to": collection_path(recommended.get("path") or "Recommended")}


def _candidates(candidates: Mapping[str, Any]):
    """The collection to rank: a list of Papers, or a collection index for a ``.litrank`` source."""
    if "items" in candidates:
        return [paper for data in _items(candidates["items"], "candidates.items")
                if (paper := paper_from_item(data, SOURCE)) is not None]
    source = candidates["source"].strip()
    try:
        return read_index(source) if litrank_index.is_index_path(source) else connectors.load(source)
    except (connectors.SourceError, OSError) as exc:
        raise AnswerError("source_failed", str(exc)) from None


def _placed(data: Mapping[str, Any]) -> list[str]:
    """The collections litrank placed an item in (its ``litrank: in <path>`` Extra lines)."""
    return [line[len(IN_COLLECTION):].strip() for line in str(data.get("extra") or "").splitlines()
            if line.startswith(IN_COLLECTION)]


def _belongs_here(data: Mapping[str, Any], key: str | None, to: str) -> bool:
    """A pick of this collection's Recommended: in it now, or placed in it by litrank."""
    return (key is not None and key in (data.get("collections") or [])) or to in _placed(data)


def _collection_paths(data: Mapping[str, Any], key: str | None, to: str) -> list[str]:
    """The collections a pick is in, as far as the request tells (what judging a drag-out reads):
    this Recommended when it is in it; none when litrank placed it here and it is gone (dragged
    out); for a pick of another collection's Recommended, whose membership the request does not
    carry, the collections litrank placed it in (taken as still there, never as dragged out)."""
    if key is not None and key in (data.get("collections") or []):
        return [to]
    return [] if _belongs_here(data, key, to) else _placed(data)


def answer(request: Any, store, embedder=None) -> dict[str, Any]:
    """The reply to one plugin request (see the module's docstring); ``store`` keeps the
    judgements (a :class:`connectors.files.feedback_store.FeedbackStore`), ``embedder`` adds the
    dense signal. Raises :class:`AnswerError` for a request that cannot be answered."""
    asked = _validated(request)
    key, to = asked["recommended_key"], asked["to"]
    library = [paper for data in asked["library"] if (paper := paper_from_item(data, SOURCE)) is not None]
    here = [data for data in asked["picks"] if _belongs_here(data, key, to)]
    picks = [paper for data in asked["picks"]
             if (paper := paper_from_item(data, SOURCE, _collection_paths(data, key, to))) is not None]
    if not [paper for paper in library if paper.text.strip()]:
        raise AnswerError("bad_request", "the collection has no papers with a title or abstract to rank against")
    collection = _candidates(asked["candidates"])
    papers = collection.papers if hasattr(collection, "papers") else collection
    if not papers:
        raise AnswerError("source_failed", f"{asked['candidates'].get('source', 'candidates.items')}: no papers")
    gathered = gather_judgements(library + picks, papers, store)
    ranking = Ranker(make_model("hybrid", embedder)).rank(library, collection, top=asked["top"],
                                                          judgements=gathered.judgements)
    live = [data for data in here if not data.get("deleted")]
    trashed = [data for data in asked["picks"] if data.get("deleted")]
    plan = make_plan(ranking, live, key, SOURCE, to, trashed)  # a liked pick stays where it is
    n = ranking.n_candidates
    reply = {
        "v": VERSION,
        "picks": [{"rank": pick.rank, "score": round(float(pick.score), 4), "title": pick.paper.title,
                   "because": [reason.paper.title for reason in pick.because],
                   "key": plan.keys.get(id(pick))}
                  for pick in ranking.recommendations],
        "create": [{"data": new_item(item_template(item_type(pick.paper)), pick, n, to)} for pick in plan.create],
        "update": [{"key": str(data["key"]), "extra": merge_extra(data.get("extra", ""), extra_lines(pick, n, to))}
                   for pick, data in plan.add + plan.update],
        "remove": [{"key": str(data["key"]), "extra": merge_extra(data.get("extra", ""), [f"{DROPPED_FROM}{to}"])}
                   for data in plan.remove],
        "feedback": {"liked": sum(1 for _, value in gathered.from_zotero if value > 0),
                     "disliked": sum(1 for _, value in gathered.from_zotero if value < 0)},
    }
    reply["summary"] = _summary(reply, plan, ranking)
    return reply


def _summary(reply: Mapping[str, Any], plan, ranking) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}" if n == 1 else f"{n} {word}s"

    parts = [f"{count(len(reply['picks']), 'pick')} of {ranking.n_candidates:,} papers",
             f"{len(reply['create'])} new", f"{len(reply['update'])} updated", f"{len(reply['remove'])} taken out",
             f"{plan.unchanged} unchanged"]
    if plan.trashed:
        parts.append(f"{len(plan.trashed)} in the trash left out")
    if ranking.n_judgements:
        parts.append(ranking.judgements_note())
    return "; ".join(parts) + "."
