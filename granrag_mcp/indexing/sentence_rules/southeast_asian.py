"""Thai, Lao, Khmer and Myanmar: Thai and Lao write no sentence punctuation and part sentences with a space
(words run together inside one); Khmer's khan and Myanmar's section mark end a sentence."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(
    name="southeast_asian",
    full_stops="។៕။",
    letters="\u0e00-\u0e7f\u0e80-\u0eff",
    space_ends_sentences=True,
)
