"""Tests of the records, features, models and the ranking pipeline."""
