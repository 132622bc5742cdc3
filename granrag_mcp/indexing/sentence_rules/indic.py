"""Devanagari and the other Brahmic scripts of India: the danda and double danda end a sentence."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(name="indic", full_stops="।॥", closers="\"'”’)")
