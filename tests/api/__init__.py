"""Tests of the Python API (gir.compile) and its compile cache."""
