"""Tests of the evaluation: hold-out runs, CSFCube, author continuity."""
