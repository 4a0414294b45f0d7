"""Loopback stand-ins for what cannot run here (the Zotero cloud and app, arXiv, OpenReview, OpenAlex, Semantic Scholar), following their documented protocols, and Zotero database fixtures."""
