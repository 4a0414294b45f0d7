"""Scoring models: the hybrid ranker (the default), the LightGBM learned ranker, the v1
similarity score, their per-candidate signals, and the optional sentence embedder.

Models read a collection's features (:mod:`recommender.features`) and never import connectors
or the CLI: what they score arrives as :class:`~recommender.paper.Paper` records.
"""
