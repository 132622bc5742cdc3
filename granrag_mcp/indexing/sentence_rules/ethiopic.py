"""Ethiopic (Amharic, Tigrinya): the full stop and the question mark end a sentence."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(name="ethiopic", full_stops="።፧")
