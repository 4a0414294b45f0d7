"""Ranking at scale: a collection index built partition by partition, hybrid scores over row
partitions, many profiles at once (affinity), and the engines they run on (this process or a
Dask cluster)."""
