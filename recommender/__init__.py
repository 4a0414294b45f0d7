"""litrank's recommender: the records every part shares, the ranking, and the CLI.

Rooms, from the bottom up (each imports only the ones below it; ``pyproject.toml`` holds the
rules as import-linter contracts):

* records: :mod:`~recommender.text`, :mod:`~recommender.paper`, :mod:`~recommender.feedback`
  (and :mod:`~recommender.runtime`): the only part :mod:`connectors` may import;
* :mod:`~recommender.features`: a collection's index and the representations of a run;
* :mod:`~recommender.models`: the hybrid, learned and similarity models;
* :mod:`~recommender.scale`: partitioned indexes, affinity, Dask;
* :mod:`~recommender.ranking`: the pipeline (load, fit, score, explain), which reaches connectors;
* :mod:`~recommender.evaluation` and :mod:`~recommender.report`: measuring and presenting rankings;
* :mod:`~recommender.cli`: the ``litrank`` command.

Python API::

    import connectors, recommender
    library = connectors.load("refs.bib")
    for pick in recommender.rank(library, "icml2026.jsonl", top=10):
        print(pick.rank, round(pick.score, 3), pick.paper.title, [r.paper.title for r in pick.because])
"""
from recommender.paper import IdentityIndex, Paper, deduplicate
from recommender.version import __version__

_FROM_RANKING = ("Ranker", "Ranking", "Reason", "Recommendation", "rank")

__all__ = ["IdentityIndex", "Paper", "Ranker", "Ranking", "Reason", "Recommendation", "__version__", "deduplicate", "rank"]


def __getattr__(name: str):
    # The ranking pulls in scikit-learn and SciPy (about a second): loaded when first used.
    if name in _FROM_RANKING:
        from recommender import ranking

        return getattr(ranking, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
