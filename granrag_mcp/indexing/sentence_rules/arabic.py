"""Arabic, Persian and Urdu: the Arabic question mark and the Urdu full stop end a sentence. The Arabic comma
("،") parts clauses, not sentences."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(name="arabic", full_stops="؟۔", closers="\"'”’)»")
