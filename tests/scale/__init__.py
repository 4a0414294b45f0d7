"""Tests of ranking at scale: partitioned indexes, affinity, Dask."""
