"""Retrieval-quality evaluation: `granrag-mcp eval` on a SQuAD or JSONL QA set.

Modules: `qa` (QA sets and the corpus), `metrics` (pure HR@k / MRR@k), `strategies` (the retrieval strategies,
all through the core `View`), `report` (table, Markdown, chart, per-query JSONL), `command` (the CLI command).
"""
