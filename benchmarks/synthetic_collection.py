"""A collection of any size, recombined at run time from the shared conference abstracts.

    python -m benchmarks.synthetic_collection OUT_DIR --papers 1000000 --shards 20

Each synthetic paper takes a real paper of one conference as its seed: the first half of its
title joined to the second half of another title of the same conference, its sentences mixed
with one or two sentences of another paper of that conference, and authors drawn from the
conference's authors. Topics stay coherent (a conference's papers share a vocabulary), no two
papers are the same record, and the vocabulary grows with the size as a real one does. The
result is JSON Lines in ``--shards`` files (``part-00000.jsonl`` ...), the form partitioned
runs read; nothing is committed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

CONFERENCES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "conferences"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@dataclass
class _Venue:
    name: str
    titles: list[str] = field(default_factory=list)
    abstracts: list[list[str]] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    year: int | None = None


def _venues(conferences: Path) -> list[_Venue]:
    files = sorted(conferences.glob("*.jsonl.gz"))
    if not files:
        raise FileNotFoundError(f"no conference lists (*.jsonl.gz) in {conferences}")
    venues = []
    for path in files:
        venue = _Venue(path.name.split(".")[0])
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                sentences = _SENTENCE_END.split(str(record.get("abstract") or "").strip())
                title = str(record.get("title") or "").strip()
                if not title or len(sentences) < 2:
                    continue
                venue.titles.append(title)
                venue.abstracts.append(sentences)
                venue.authors.extend(str(name) for name in record.get("authors") or [])
                venue.year = venue.year or record.get("year")
        if len(venue.titles) >= 2 and venue.authors:
            venues.append(venue)
    return venues


def _half(words: list[str], first: bool) -> list[str]:
    middle = max(1, len(words) // 2)
    return words[:middle] if first else words[middle:]


def synthetic_records(n_papers: int, conferences: Path = CONFERENCES, seed: int = 0):
    """``n_papers`` paper records (dicts in the conference lists' fields), the same for the same seed."""
    rng = random.Random(seed)
    venues = _venues(conferences)
    weights = [len(venue.titles) for venue in venues]
    for number in range(n_papers):
        venue = rng.choices(venues, weights)[0]
        base, other = rng.randrange(len(venue.titles)), rng.randrange(len(venue.titles))
        title = " ".join(_half(venue.titles[base].split(), True) + _half(venue.titles[other].split(), False))
        sentences = list(venue.abstracts[base])
        extra = venue.abstracts[other]
        for _ in range(rng.randint(1, 2)):
            sentences.insert(rng.randrange(1, len(sentences) + 1), rng.choice(extra))
        yield {"id": f"synth-{number:07d}", "title": title, "abstract": " ".join(sentences),
               "authors": rng.sample(venue.authors, min(len(venue.authors), rng.randint(1, 5))),
               "venue": venue.name, "year": venue.year}


def write_collection(directory: Path, n_papers: int, shards: int = 1, conferences: Path = CONFERENCES,
                     seed: int = 0) -> list[Path]:
    """Write ``n_papers`` synthetic papers as JSON Lines in ``shards`` files of ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    shards = max(1, min(shards, n_papers))
    paths = [directory / f"part-{index:05d}.jsonl" for index in range(shards)]
    per_shard = -(-n_papers // shards)
    records = synthetic_records(n_papers, conferences, seed)
    for index, path in enumerate(paths):
        count = min(per_shard, n_papers - index * per_shard)
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(next(records), ensure_ascii=False) + "\n" for _ in range(count))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    paths = write_collection(arguments.directory, arguments.papers, arguments.shards, seed=arguments.seed)
    print(f"wrote {arguments.papers:,} papers in {len(paths)} files under {arguments.directory}")


if __name__ == "__main__":
    main()
