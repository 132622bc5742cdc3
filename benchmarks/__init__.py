"""Benchmarks of granrag-mcp, kept apart from the package: see README.md in this folder."""
