"""Tests of the connectors: BibTeX, the file formats, the settings file and the online sources."""
