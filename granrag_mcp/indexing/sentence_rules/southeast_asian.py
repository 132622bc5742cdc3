"""Lao, Khmer and Myanmar: Lao writes no sentence punctuation and parts sentences with a space (words run together
inside one); Khmer's khan and Myanmar's section mark end a sentence. Thai has its own rule (thai.py)."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(
    name="southeast_asian",
    full_stops="។៕။",
    letters="\u0e80-\u0eff",
    space_ends_sentences=True,
)
