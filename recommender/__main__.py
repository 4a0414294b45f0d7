"""``python -m recommender``: the ``litrank`` command without its console script."""
from recommender.cli import run

run()
