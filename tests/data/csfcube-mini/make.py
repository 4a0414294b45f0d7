"""Writes this tiny CSFCube-shaped fixture (synthetic papers; the real dataset's file layout).

    python tests/data/csfcube-mini/make.py

10 query papers on 10 topics, 12 query-facets (two query papers judged under two facets, as in
CSFCube), pools of 15: 8 on-topic candidates graded 3, 3, 3, 3, 2, 2, 1, 1, and 7 graded 0 (the
weaker candidates of the next two topics and three generic papers), so pools overlap and a
candidate's best grade over a composite library can come from another query than the one that
pooled it with 0. fold1_dev and fold1_test hold 6 query-facets each; fold2 swaps them.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOPICS = [
    "graph neural networks message passing node classification",
    "reinforcement learning policy gradient reward agents",
    "machine translation attention encoder decoder bilingual",
    "image segmentation convolutional pixels masks",
    "speech recognition acoustic phonemes audio",
    "question answering reading comprehension passages",
    "generative adversarial networks discriminator images",
    "topic models latent dirichlet allocation documents",
    "knowledge graph embeddings entities relations",
    "dependency parsing syntax treebank grammar",
]
FILLER = "we propose method results show experiments model approach data task performance novel".split()
GRADES = (3, 3, 3, 3, 2, 2, 1, 1)
FACETS = {"background": [0, 1, 2, 3], "method": [4, 5, 6, 0], "result": [7, 8, 9, 4]}
FOLD1_DEV = ["Q0_background", "Q1_background", "Q4_method", "Q5_method", "Q7_result", "Q8_result"]
FOLD1_TEST = ["Q2_background", "Q3_background", "Q0_method", "Q6_method", "Q4_result", "Q9_result"]


def text(rng: random.Random, topic: int, on_topic: int) -> str:
    words = TOPICS[topic].split()
    return " ".join(rng.sample(words, min(on_topic, len(words))) + rng.sample(FILLER, 6))


def main() -> None:
    rng = random.Random(25)
    papers = []
    for topic in range(10):
        papers.append({"id": f"Q{topic}", "title": " ".join(TOPICS[topic].split()[:3]),
                       "abstract": text(rng, topic, 6), "year": 2018})
        for j, grade in enumerate(GRADES):
            papers.append({"id": f"C{topic}_{j}", "title": f"A study of {TOPICS[topic].split()[grade]}",
                           "abstract": text(rng, topic, grade + 2), "year": 2017})
    papers += [{"id": f"D{j}", "title": "A general paper", "abstract": " ".join(rng.sample(FILLER, 8)), "year": 2016}
               for j in range(10)]
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for facet, queries in FACETS.items():
        for topic in queries:
            pool = {f"C{topic}_{j}": grade for j, grade in enumerate(GRADES)}
            pool.update({f"C{(topic + 1) % 10}_{j}": 0 for j in (6, 7)})
            pool.update({f"C{(topic + 2) % 10}_{j}": 0 for j in (4, 5)})
            pool.update({f"D{(topic + j) % 10}": 0 for j in range(3)})
            if facet == "result" and topic == 4:  # the same pool, judged differently under another facet
                pool["C4_4"], pool["C4_6"] = 1, 2
            qrels.setdefault(facet, {})[f"Q{topic}"] = pool
    splits = {"all": {"fold1_dev": FOLD1_DEV, "fold1_test": FOLD1_TEST, "fold2_dev": FOLD1_TEST,
                      "fold2_test": FOLD1_DEV}}
    for facet in FACETS:
        splits[facet] = {fold: [key for key in keys if key.endswith("_" + facet)] for fold, keys in splits["all"].items()}
    lines = "".join(json.dumps(paper) + "\n" for paper in papers).encode("utf-8")
    (HERE / "papers.jsonl.gz").write_bytes(gzip.compress(lines, mtime=0))
    (HERE / "qrels.json").write_text(json.dumps(qrels, indent=1) + "\n", encoding="utf-8")
    (HERE / "splits.json").write_text(json.dumps(splits, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
