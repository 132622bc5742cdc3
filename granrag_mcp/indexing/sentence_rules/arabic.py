"""Arabic, Persian and Urdu: the Arabic question mark and the Urdu full stop end a sentence. The Arabic comma
("،") parts clauses, not sentences; the Arabic semicolon ("؛") parts the clauses of a long enumerated sentence, as
";" does in Latin text (its enumerators, "(أ)" "(ب)", are single letters in brackets like any alphabet's)."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(name="arabic", full_stops="؟۔", closers="\"'”’)»", clause_marks="؛")
