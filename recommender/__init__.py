"""litrank's recommender: records, text normalisation, features, scoring and the CLI.

Python API::

    import connectors, recommender
    library = connectors.load("refs.bib")
    for pick in recommender.rank(library, "icml2026.jsonl", top=10):
        print(pick.rank, round(pick.score, 3), pick.paper.title, [r.paper.title for r in pick.because])
"""
from .paper import IdentityIndex, Paper, deduplicate

_FROM_RANKING = ("Ranker", "Ranking", "Reason", "Recommendation", "rank")

__all__ = ["IdentityIndex", "Paper", "Ranker", "Ranking", "Reason", "Recommendation", "deduplicate", "rank"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # The ranking pulls in scikit-learn and SciPy (about a second): loaded when first used.
    if name in _FROM_RANKING:
        from . import ranking

        return getattr(ranking, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
