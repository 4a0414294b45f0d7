"""Tests of the Zotero connectors: zotero.sqlite, the Web and local APIs, sync."""
