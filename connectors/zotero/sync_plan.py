"""What a ``litrank sync`` will write: the plan (create, add, update, remove), the item data, and
carrying the plan out through a :class:`connectors.zotero.writer.ZoteroWriter` (:func:`apply_plan`).

The plan compares a ranking with the items litrank wrote before. Items litrank creates carry the
``litrank`` tag and their rank, score and explanation on ``extra`` lines starting with
``litrank:``; a later run finds them again by the identity rule (DOI, arXiv id, title and first
author, abstract), rewrites only those lines and the collection membership, and takes the picks
that fell out of the top N out of the collection (they stay in the library).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from connectors.zotero.items import is_litrank_item_data, join_collection_path, paper_from_item, split_collection_path
from recommender.feedback import DROPPED_FROM, EXTRA_PREFIX, IN_COLLECTION, KEYWORDS, LIKED
from recommender.feedback import LITRANK_TAG as TAG
from recommender.paper import IdentityIndex, Paper

if TYPE_CHECKING:
    from connectors.zotero.writer import WriteReport, ZoteroWriter

_CONFERENCE_RE = re.compile(r"conf|proc|symposium|workshop|\b(ICML|NeurIPS|NIPS|ICLR|CVPR|ICCV|ECCV|ACL|EMNLP|"
                            r"NAACL|AAAI|IJCAI|KDD|SIGIR|UAI|AISTATS|COLT|CoRL|RSS)\b", re.IGNORECASE)


@dataclass
class Plan:
    collection_key: str | None
    create: list = field(default_factory=list)
    add: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    update: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    remove: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0
    # The existing item of each pick found again (add, update or unchanged): id(pick) -> item key.
    keys: dict[int, str] = field(default_factory=dict)
    # Picks the user moved to the Zotero trash: never created again.
    trashed: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)

    def write_count(self) -> int:
        """Objects a sync of this plan sends: new items, then the items it adds, updates or removes."""
        return len(self.create) + len(self.add) + len(self.update) + len(self.remove)

    def counts(self) -> str:
        trashed = f", in the trash (not re-created) {len(self.trashed)}" if self.trashed else ""
        return (f"create {len(self.create)}, add {len(self.add)}, update {len(self.update)}, "
                f"remove {len(self.remove)}, unchanged {self.unchanged}{trashed}")


def extra_lines(pick, n_candidates: int, to: str) -> list[str]:
    """litrank's own ``extra`` lines for a pick placed in the collection ``to``."""
    lines = [f"{EXTRA_PREFIX} rank {pick.rank} of {n_candidates}, score {pick.score:.4f}",
             f"{IN_COLLECTION}{collection_path(to)}"]
    if pick.because:
        lines.append(f"{EXTRA_PREFIX} closest to " + "; ".join(r.paper.title for r in pick.because if r.paper.title))
    if pick.paper.title_derived:
        lines.append(f"{EXTRA_PREFIX} title derived from the abstract (the source gives none)")
    return lines


def collection_path(to: str) -> str:
    """``to`` as a normalised collection path (``Parent/Child``)."""
    return join_collection_path(split_collection_path(to))


def merge_extra(extra: str, ours: list[str]) -> str:
    """``extra`` with its ``litrank:`` lines replaced by ``ours`` (the user's lines kept, first)."""
    kept = [line for line in str(extra or "").splitlines() if not line.startswith(EXTRA_PREFIX)]
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept + ours)


def item_type(paper: Paper) -> str:
    entry = paper.entry_type.casefold()
    if entry in {"inproceedings", "conferencepaper", "proceedings"} or _CONFERENCE_RE.search(paper.venue or ""):
        return "conferencePaper"
    if paper.venue and not (paper.arxiv_id and paper.venue.casefold().startswith("arxiv")):
        return "journalArticle"
    return "preprint"


def new_item(template: dict[str, Any], pick, n_candidates: int, to: str) -> dict[str, Any]:
    """The ``data`` of a new Zotero item for a pick, filled into pyzotero's template."""
    paper = pick.paper
    data = dict(template)
    creators = []
    for name in paper.authors:
        first, _, last = name.strip().rpartition(" ")
        creators.append({"creatorType": "author", "firstName": first, "lastName": last} if first
                        else {"creatorType": "author", "name": last})
    venue_field = {"conferencePaper": "proceedingsTitle", "journalArticle": "publicationTitle",
                   "preprint": "repository"}[data["itemType"]]
    values = {"title": paper.title, "abstractNote": paper.abstract, "date": str(paper.year or ""),
              "url": paper.url or (f"https://arxiv.org/abs/{paper.arxiv_id}" if paper.arxiv_id else ""),
              "DOI": paper.doi, venue_field: paper.venue or ("arXiv" if paper.arxiv_id else ""),
              "archiveID": f"arXiv:{paper.arxiv_id}" if paper.arxiv_id else "",
              "extra": merge_extra("", extra_lines(pick, n_candidates, to))}
    data.update({k: v for k, v in values.items() if k in template and v})
    data["creators"] = creators
    data["tags"] = [{"tag": TAG}]
    data["collections"] = []
    return data



def make_plan(ranking, items: list[dict[str, Any]], collection_key: str | None, source: str,
              to: str, trashed: list[dict[str, Any]] = ()) -> Plan:
    """What to write so that the collection holds exactly the picks, with current fields.

    ``trashed`` are the items of the library's trash: a pick that is one of litrank's items
    there is not created again (the user said no to it)."""
    ours = {str(d["key"]): d for d in items if is_litrank_item_data(d)}
    papers = [p for d in ours.values() if (p := paper_from_item(d, source)) is not None]
    index = IdentityIndex(papers)
    in_trash = {str(d["key"]): d for d in trashed if is_litrank_item_data(d)}
    trash_index = IdentityIndex([p for d in in_trash.values() if (p := paper_from_item(d, source)) is not None])
    plan = Plan(collection_key)
    matched: set[str] = set()
    for pick in ranking.recommendations:
        found = index.find(pick.paper)
        if found is None and (gone := trash_index.find(pick.paper)) is not None:
            plan.trashed.append((pick, in_trash[gone.id]))
            continue
        data = ours.get(found.id) if found is not None else None
        if data is None or found.id in matched:
            plan.create.append(pick)
            continue
        matched.add(found.id)
        plan.keys[id(pick)] = str(data["key"])
        in_collection = collection_key is not None and collection_key in (data.get("collections") or [])
        if not in_collection:
            plan.add.append((pick, data))
        elif merge_extra(data.get("extra", ""), extra_lines(pick, ranking.n_candidates, to)) != (data.get("extra") or ""):
            plan.update.append((pick, data))
        else:
            plan.unchanged += 1
    if collection_key is not None:
        # A pick the user liked stays: liked, it joined the library for the ranking (so it is
        # no longer a candidate), which is no reason to take it out of the reading list.
        plan.remove = [d for key, d in ours.items()
                       if key not in matched and collection_key in (d.get("collections") or []) and not _liked(d)]
    return plan


def _liked(data: dict[str, Any]) -> bool:
    tags = {str(tag.get("tag", "")).strip().lower() for tag in data.get("tags") or [] if isinstance(tag, dict)}
    return any(KEYWORDS.get(tag) == LIKED for tag in tags)


@dataclass
class SyncResult:
    """What :func:`apply_plan` wrote: the reports of its three writes, and the collections created."""
    plan: Plan
    created: WriteReport
    linked: WriteReport
    removed: WriteReport
    created_collections: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list:
        return self.created.failures + self.linked.failures + self.removed.failures

    def counts(self) -> tuple[int, int, int, int]:
        """Items created, added, updated and removed (those that failed not counted)."""
        failed = {f.key for f in self.linked.failures}
        return (len(self.created.written), sum(1 for _, d in self.plan.add if d["key"] not in failed),
                sum(1 for _, d in self.plan.update if d["key"] not in failed),
                len(self.plan.remove) - len(self.removed.failures))


def apply_plan(writer: ZoteroWriter, plan: Plan, n_candidates: int, to: str,
               on_collection_created: Callable[[str], Any] = lambda path: None) -> SyncResult:
    """Carry ``plan`` out: the collection ``to`` (and its parents) if missing, new items for the
    picks to create, litrank's Extra lines and the collection for those to add or update, and
    the ones that fell out of the top N taken out of the collection (marked as dropped by
    litrank, so that only the user's own removals count as dislikes). Raises the writer's
    errors; per-object failures are in the result."""
    collection_key, created_collections = writer.ensure_collection(to)
    for path in created_collections:
        on_collection_created(path)
    templates: dict[str, dict[str, Any]] = {}
    new_items = []
    for pick in plan.create:
        kind = item_type(pick.paper)
        if kind not in templates:
            templates[kind] = writer.template(kind)
        new_items.append(new_item(templates[kind], pick, n_candidates, to))
    created = writer.create_items(new_items, collection_key)
    extras = {str(data["key"]): extra_lines(pick, n_candidates, to) for pick, data in plan.add + plan.update}

    def litrank_fields(data: dict[str, Any]) -> dict[str, Any] | None:
        lines = extras.get(str(data["key"]))
        new_extra = merge_extra(data.get("extra", ""), lines) if lines else None
        return {"extra": new_extra} if new_extra is not None and new_extra != (data.get("extra") or "") else None

    linked = writer.add_to_collection([d for _, d in plan.add + plan.update], collection_key, litrank_fields)
    dropped = [f"{DROPPED_FROM}{collection_path(to)}"]
    removed = writer.remove_from_collection(plan.remove, collection_key,
                                            lambda data: merge_extra(data.get("extra", ""), dropped))
    return SyncResult(plan, created, linked, removed, created_collections)
