"""Presenting a ranking: records for JSON/CSV, BibTeX-ready papers and the terminal table
(:mod:`~recommender.report.formats`), and what the HTML report shows, as plain data
(:mod:`~recommender.report.page_data`, :mod:`~recommender.report.paper_map`). Writing files is
the connectors' job."""
