"""Greek: ";" (and the Greek question mark, which Unicode normalises to it) is the question mark after Greek
letters; elsewhere ";" parts clauses."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(name="greek", letters="\u0370-\u03ff\u1f00-\u1fff", marks_after_letters=";\u037e")
