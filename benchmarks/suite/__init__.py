"""Benchmarks of the shipped product, each behind one or more figures of BENCHMARKS.md."""
