"""Train a scientific-paper adapter of all-MiniLM-L6-v2 and measure it on CSFCube (not adopted: see README).

LoRA deltas (rank 8) on the attention query and value projections of every layer, or (``--kind
linear``) a matrix on top of the frozen sentence embeddings, learned self-supervised in the spirit of
SPECTER / SciNCL from real ML and NLP papers of ``../shared/data/conferences``: a paper's
positives are its nearest neighbours in TF-IDF space (SciNCL's "neighbours as citations") and
papers sharing an author with it; the other papers of a batch are its negatives
(MultipleNegativesRankingLoss). No relevance judgement is used. The training papers are

* from 2020 on, or 2009 and before (the author-continuity benchmark evaluates on 2010–2019);
* none of CSFCube's papers (matched by normalised title).

    python -m benchmarks.train_embedder_adapter --evaluate   # seeded; ~20 min on 2 cores (+ 10 to evaluate)

LoRA: 180 batches of 32 pairs at 128 tokens, about 6 s a batch on 2 busy cores. ``--kind linear``
embeds the training texts once through litrank's embedding cache (~9 min cold, nothing on a second
run); the matrix itself trains in under a minute. ``--evaluate`` prints CSFCube fold1_dev (``--test``: and
fold1_test) ("all" facets) of ``hybrid+embeddings`` and ``embedding`` with the plain and the adapted
model: choose on fold1_dev only.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from recommender.text import normalize_title

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
NLP_VENUES = ("acl", "naacl", "coling", "colm")
ML_VENUES = ("aistats", "uai", "colt", "nips", "icml", "iclr")
EXCLUDED_YEARS = range(2010, 2020)
MIN_ABSTRACT_CHARS = 200


def training_papers(conferences: Path, csfcube: Path, n_papers: int, seed: int = 0) -> list[dict]:
    """All NLP papers of the allowed years, topped up with a seeded sample of ML ones, in id order."""
    excluded = {normalize_title(json.loads(line)["title"])
                for line in gzip.open(csfcube / "papers.jsonl.gz", "rt", encoding="utf-8")}
    nlp, ml = [], []
    for path in sorted(conferences.glob("*.jsonl.gz")):
        venue = path.name.split(".")[0].rstrip("0123456789")
        if venue not in NLP_VENUES + ML_VENUES:
            continue
        for line in gzip.open(path, "rt", encoding="utf-8"):
            record = json.loads(line)
            if (int(record["year"]) in EXCLUDED_YEARS or len(record.get("abstract") or "") < MIN_ABSTRACT_CHARS
                    or normalize_title(record["title"]) in excluded):
                continue
            (nlp if venue in NLP_VENUES else ml).append(record)
    rng = np.random.default_rng(seed)
    nlp = [nlp[i] for i in sorted(rng.permutation(len(nlp))[:n_papers])]
    ml = [ml[i] for i in sorted(rng.permutation(len(ml))[:max(0, n_papers - len(nlp))])]
    seen, papers = set(), []
    for record in sorted(nlp + ml, key=lambda r: r["id"]):
        key = normalize_title(record["title"])
        if key not in seen:  # a paper listed by two venues is one paper
            seen.add(key)
            papers.append(record)
    return papers


def paper_text(record: dict) -> str:
    """The text litrank embeds for a paper (:attr:`recommender.paper.Paper.text`)."""
    return f"{record['title']}. {record['abstract']}"


def embed_papers(papers: list[dict], batch_size: int = 32) -> np.ndarray:
    from recommender.models.embeddings import SentenceEmbedder

    embedder = SentenceEmbedder("default", batch_size=batch_size)
    texts = [paper_text(p) for p in papers]
    vectors = []
    started = time.perf_counter()
    for start in range(0, len(texts), 1000):  # the cache keeps every finished thousand
        vectors.append(embedder.embed(texts[start:start + 1000]))
        print(f"  embedded {start + len(vectors[-1])}/{len(texts)} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
    return np.vstack(vectors)


def tfidf_neighbour_pairs(texts: list[str], k: int) -> np.ndarray:
    """``(i, j)`` for each paper i and each of its ``k`` nearest papers j by TF-IDF cosine."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    tfidf = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2, max_df=0.5,
                            ngram_range=(1, 2), dtype=np.float32).fit_transform(texts)
    pairs = []
    for start in range(0, tfidf.shape[0], 1000):
        block = (tfidf[start:start + 1000] @ tfidf.T).toarray()
        block[np.arange(len(block)), start + np.arange(len(block))] = -1  # not itself
        best = np.argsort(-block, axis=1, kind="stable")[:, :k]
        pairs.extend((start + row, int(j)) for row in range(len(block)) for j in best[row])
    return np.array(pairs, dtype=np.int64)


def coauthor_pairs(papers: list[dict], max_per_paper: int, seed: int = 0) -> np.ndarray:
    """``(i, j)``: papers sharing an author, at most ``max_per_paper`` partners per paper (seeded)."""
    by_author: dict[str, list[int]] = {}
    for index, paper in enumerate(papers):
        for name in dict.fromkeys(a.strip().lower() for a in paper.get("authors") or [] if a.strip()):
            by_author.setdefault(name, []).append(index)
    rng = np.random.default_rng(seed)
    pairs = []
    for index, paper in enumerate(papers):
        partners = sorted({j for a in paper.get("authors") or [] for j in by_author.get(a.strip().lower(), [])
                           if j != index})
        if partners:
            chosen = rng.permutation(len(partners))[:max_per_paper]
            pairs.extend((index, partners[c]) for c in sorted(chosen))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def train_matrix(vectors: np.ndarray, pairs: np.ndarray, epochs: int = 3, batch_size: int = 128,
                 lr: float = 1e-3, scale: float = 20.0, identity_penalty: float = 1.0, seed: int = 0) -> np.ndarray:
    """A square matrix W (initialised to the identity) such that normalise(W v) brings the pairs
    together against the batch's other papers (symmetric MultipleNegativesRankingLoss), with
    ``identity_penalty`` · ||W − I||² keeping it near the base model."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    dim = vectors.shape[1]
    x = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32))
    weight = torch.nn.Parameter(torch.eye(dim))
    optimizer = torch.optim.Adam([weight], lr=lr)
    eye = torch.eye(dim)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(pairs))
        for start in range(0, len(order) - batch_size + 1, batch_size):
            batch = pairs[order[start:start + batch_size]]
            a = torch.nn.functional.normalize(x[batch[:, 0]] @ weight.T, dim=1)
            b = torch.nn.functional.normalize(x[batch[:, 1]] @ weight.T, dim=1)
            loss = _in_batch_loss(a, b, batch, scale)
            loss = loss + identity_penalty * ((weight - eye) ** 2).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return weight.detach().numpy().astype(np.float32)


def _lora_layer(base, rank: int, scale: float):
    """``base(x) + scale · x Aᵀ Bᵀ``: a rank-r update of a frozen linear layer (B starts at zero)."""
    import torch

    class LoRALinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.base, self.scale = base, scale
            self.a = torch.nn.Parameter(torch.randn(rank, base.in_features) / np.sqrt(base.in_features))
            self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

        def forward(self, x):
            return self.base(x) + (x @ self.a.T @ self.b.T) * self.scale

    return LoRALinear()


def train_lora(texts: list[str], pairs: np.ndarray, steps: int, batch_size: int = 32, rank: int = 8,
               alpha: float = 16.0, lr: float = 5e-4, max_seq_length: int = 128, seed: int = 0) -> dict[str, np.ndarray]:
    """LoRA deltas on the query and value projections of every layer of the bundled
    all-MiniLM-L6-v2, trained with in-batch negatives on ``pairs`` (one batch per step, in a
    seeded order). Returns the arrays of the adapter file: ``"<layer>.<query|value>.a"`` (r×d),
    ``".b"`` (d×r) and ``"scale"``."""
    import torch
    from sentence_transformers import SentenceTransformer

    from recommender.models.embeddings import _bundled_model_dir

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    model = SentenceTransformer(str(_bundled_model_dir()), device="cpu", local_files_only=True)
    model.max_seq_length = max_seq_length  # training only: half the tokens, a third of the time
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    adapters = {}
    for number, layer in enumerate(model[0].auto_model.encoder.layer):
        for name in ("query", "value"):
            adapters[f"{number}.{name}"] = _lora_layer(getattr(layer.attention.self, name), rank, alpha / rank)
            setattr(layer.attention.self, name, adapters[f"{number}.{name}"])
    optimizer = torch.optim.AdamW([p for m in adapters.values() for p in (m.a, m.b)], lr=lr, weight_decay=0.0)
    order = pairs[np.random.default_rng(seed).permutation(len(pairs))]
    model.train()
    started = time.perf_counter()
    for step in range(steps):
        batch = order[step * batch_size:(step + 1) * batch_size]
        features = model.tokenize([texts[i] for i in batch[:, 0]] + [texts[j] for j in batch[:, 1]])
        embedded = torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=1)
        loss = _in_batch_loss(embedded[:len(batch)], embedded[len(batch):], batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0 or step == steps - 1:
            print(f"  step {step + 1}/{steps}: loss {loss.item():.3f}, "
                  f"{(time.perf_counter() - started) / (step + 1):.1f} s/step", file=sys.stderr, flush=True)
    arrays = {f"{key}.{part}": getattr(module, part).detach().numpy().astype(np.float32)
              for key, module in adapters.items() for part in ("a", "b")}
    arrays["scale"] = np.float32(alpha / rank)
    return arrays


def _in_batch_loss(a, b, batch: np.ndarray, scale: float = 20.0):
    """Symmetric MultipleNegativesRankingLoss; a paper twice in a batch is no negative of itself."""
    import torch

    logits = scale * a @ b.T
    same = torch.from_numpy(batch[:, 1][None, :] == batch[:, 1][:, None]) & ~torch.eye(len(batch), dtype=torch.bool)
    logits = logits.masked_fill(same, -1e4)
    target = torch.arange(len(batch))
    return (torch.nn.functional.cross_entropy(logits, target) + torch.nn.functional.cross_entropy(logits.T, target)) / 2


def adapted_model(arrays: dict[str, np.ndarray]):
    """The bundled model with LoRA deltas merged into its weights (W += scale · B A)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from recommender.models.embeddings import _bundled_model_dir

    model = SentenceTransformer(str(_bundled_model_dir()), device="cpu", local_files_only=True)
    layers = model[0].auto_model.encoder.layer
    with torch.no_grad():
        for key in arrays:
            if key.endswith(".a"):
                number, name = key[:-2].split(".")
                linear = getattr(layers[int(number)].attention.self, name)
                linear.weight += float(arrays["scale"]) * torch.from_numpy(arrays[key[:-2] + ".b"] @ arrays[key])
    return model.eval()


class _Vectors:
    """An embedder over precomputed vectors (for the evaluation)."""

    def __init__(self, vectors: dict[str, np.ndarray], model_id: str):
        self.vectors, self.model_id = vectors, model_id

    def embed(self, texts):
        return np.stack([self.vectors[text] for text in texts])


def evaluate(csfcube_dir: Path, encode, name: str, folds=("fold1_dev",)) -> dict:
    """NDCG%20 / MAP ("all" facets) of hybrid+embeddings and embedding on the CSFCube ``folds``,
    with ``encode(texts) -> unit vectors``."""
    from connectors.files import csfcube
    from recommender.evaluation.human_judgements import evaluate_csfcube, summary

    data = csfcube.load(csfcube_dir)
    texts = list(dict.fromkeys(paper.text for paper in data.papers.values()))
    embedder = _Vectors(dict(zip(texts, encode(texts))), name)
    folds = {fold: data.query_facets(fold) for fold in folds}
    results = evaluate_csfcube(data, ["hybrid+embeddings", "embedding"], [p for v in folds.values() for p in v],
                               embedder=embedder)
    return {fold: {method: values["all"] for method, values in summary(results, pairs).items()}
            for fold, pairs in folds.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conferences", type=Path, default=SHARED / "conferences")
    parser.add_argument("--csfcube", type=Path, default=SHARED / "csfcube")
    parser.add_argument("--papers", type=int, default=10000, help="training papers")
    parser.add_argument("--kind", choices=("lora", "linear"), default="lora",
                        help="LoRA deltas on attention (the model is re-run) or a matrix on frozen vectors")
    parser.add_argument("--pairs", choices=("both", "tfidf", "coauthor"), default="both")
    parser.add_argument("--steps", type=int, default=180, help="lora: batches of 32 pairs")
    parser.add_argument("--evaluate", action="store_true",
                        help="print CSFCube fold1_dev of the plain and the adapted model")
    parser.add_argument("--test", action="store_true",
                        help="with --evaluate, fold1_test too (only for the variant chosen on fold1_dev)")
    parser.add_argument("--output", type=Path, default=None,
                        help="write the adapter here (.npz: the LoRA A and B of each layer, or the matrix)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    papers = training_papers(args.conferences, args.csfcube, args.papers)
    texts = [paper_text(p) for p in papers]
    pairs = {"tfidf": lambda: tfidf_neighbour_pairs(texts, 3), "coauthor": lambda: coauthor_pairs(papers, 3),
             "both": lambda: np.vstack([tfidf_neighbour_pairs(texts, 3), coauthor_pairs(papers, 3)])}[args.pairs]()
    print(f"{len(papers)} training papers, {len(pairs)} {args.pairs} pairs", file=sys.stderr)
    started = time.perf_counter()
    if args.kind == "lora":
        arrays = train_lora(texts, pairs, args.steps)
    else:
        arrays = {"matrix": train_matrix(embed_papers(papers), pairs, identity_penalty=0.1)}
    print(f"trained in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        np.savez(args.output, **arrays)
        print(f"wrote {args.output} ({args.output.stat().st_size:,} bytes)", file=sys.stderr)
    if args.evaluate:
        from recommender.models.embeddings import SentenceEmbedder

        plain = SentenceEmbedder("default")
        if args.kind == "lora":
            model = adapted_model(arrays)
            adapted = lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
        else:
            def adapted(texts):
                projected = plain.embed(texts) @ arrays["matrix"].T
                return projected / np.linalg.norm(projected, axis=1, keepdims=True)
        for name, encode in (("plain", plain.embed), (f"{args.kind} {args.pairs}", adapted)):
            folds = ("fold1_dev", "fold1_test") if args.test else ("fold1_dev",)
            print(name, json.dumps(evaluate(args.csfcube, encode, name, folds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
