"""Collections and abstracts from where papers are published: arXiv, OpenReview, OpenAlex and
Semantic Scholar, through one cached, polite HTTP session (:mod:`~connectors.online.http_cache`),
and abstracts for library papers that have none (:mod:`~connectors.online.enrichment`)."""
