"""Measuring ranking quality: hold-out runs on a library with the scoring rules of today's
tools (:mod:`~recommender.evaluation.holdout`), and expert relevance judgements with the
CSFCube protocol (:mod:`~recommender.evaluation.human_judgements`)."""
