"""litrank's recommender: records, text normalisation, features, scoring and the CLI.

Python API::

    import connectors, recommender
    library = connectors.load("refs.bib")
    for pick in recommender.rank(library, "icml2026.jsonl", top=10):
        print(pick.rank, round(pick.score, 3), pick.paper.title, [r.paper.title for r in pick.because])
"""
from recommender.paper import IdentityIndex, Paper, deduplicate
from recommender.version import __version__

_FROM_RANKING = ("Ranker", "Ranking", "Reason", "Recommendation", "rank")

__all__ = ["IdentityIndex", "Paper", "Ranker", "Ranking", "Reason", "Recommendation", "deduplicate", "rank"]


def __getattr__(name: str):
    # The ranking pulls in scikit-learn and SciPy (about a second): loaded when first used.
    if name in _FROM_RANKING:
        from recommender import ranking

        return getattr(ranking, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
