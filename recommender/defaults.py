"""Where the bundled defaults live (the ICML 2026 collection and the example library), and the
defaults the CLI shows before anything heavy is imported."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

COLLECTION_DESCRIPTION = "bundled ICML 2026 list (four accepted-paper pages)"
LIBRARY_DESCRIPTION = "bundled example library (diffusion models and diffusion language models)"
# litrank's models by their --model names; the first is the default (ranking.make_model builds them).
MODEL_NAMES = ("hybrid", "learned", "similarity")
# Weight of redundancy in the MMR re-ranking of the list head (Ranker's diversity). 0: the list
# is in score order. On CSFCube's fold1_dev every weight of 0.1 or more lowered MAP and 0.05
# changed nothing measurable (`python -m benchmarks.run_csfcube --diversity ...`).
DEFAULT_DIVERSITY = 0.0
# Read when no embedder is named (CLI, Python API, plugin): a name, a path, "auto" (the
# default: the embeddings extra's model when installed) or one of NO_EMBEDDER.
EMBEDDER_ENVIRONMENT = "LITRANK_EMBEDDER"
NO_EMBEDDER = ("none", "off", "no", "")


def _data_path(name: str) -> Path:
    # The package is installed as plain files (not zipped), so the resource is a real path.
    return Path(str(resources.files("recommender.data").joinpath(name)))


def bundled_collection() -> Path:
    """Directory of the four ICML 2026 abstract pages (70 distinct papers)."""
    return _data_path("icml2026")


def bundled_library() -> Path:
    """The example BibTeX library."""
    return _data_path("diffusion-library.bib")
