"""Ranking of retrieved candidates: the candidate ranker, and the settings a store adapts to its own text."""
