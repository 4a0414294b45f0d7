"""Tests of the command line as a user runs it."""
