"""A collection's features: the collection index (vocabularies, IDF, TF-IDF and BM25 rows,
the LSA topic space, authors, embeddings), word and character n-gram counting, the
representations of a run, sparse products, and how a library is weighted against it.

Nothing here scores (that is :mod:`recommender.models`) or does I/O.
"""
