"""Tests of the project's own rules: import contracts, sizes, packaging, docs."""
