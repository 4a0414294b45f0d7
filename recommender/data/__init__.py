"""Bundled defaults: the ICML 2026 collection and an example library (package data)."""
