"""Tests of the built-in tools and the local OS layer."""
