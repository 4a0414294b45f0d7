"""Zotero sources by URI: ``zotero:local`` (the local database), ``zotero:user/<id>``,
``zotero:group/<id>`` (the Web API) and ``zotero:local-api`` (the running Zotero's local HTTP API,
Zotero 7 or newer; written by ``litrank sync`` from Zotero 10, see :mod:`connectors.zotero.local_writes`).

``?collection=Reading/ML`` after any of them limits the library to that collection and its
subcollections. This module only routes; the readers live in :mod:`connectors.zotero.sqlite`
and :mod:`connectors.zotero.web`.
"""
from __future__ import annotations

from connectors.errors import UnsupportedFormatError
from recommender.paper import Paper

SCHEMES = ("zotero:local", "zotero:local-api", "zotero:local-api/groups/<id>", "zotero:user/<id>", "zotero:group/<id>",
           "zotero:web/groups/<id>")


def load(uri: str) -> list[Paper]:
    """The papers of the Zotero library (or collection) that ``uri`` names."""
    target = uri.split("?", 1)[0]
    if target == "zotero:local-api" or target.startswith(("zotero:local-api/", "zotero:user/", "zotero:group/",
                                                           "zotero:web/")):
        from connectors.zotero import web as zotero_web

        return zotero_web.load(uri)
    if target == "zotero:local":
        from connectors.zotero import sqlite as zotero_sqlite

        return zotero_sqlite.load_uri(uri)
    raise UnsupportedFormatError(f"{uri}: unknown Zotero source; use one of {', '.join(SCHEMES)}")
