"""Greek: ";" (and the Greek question mark, which Unicode normalises to it) is the question mark after Greek
letters; elsewhere ";" parts clauses. So a long Greek sentence is never parted at ";" after Greek letters (it is a
question's end there); its semicolon is the ano teleia ("·", which Unicode normalises to the middle dot), a clause
mark only after Greek letters since the middle dot separates items in other text."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(
    name="greek",
    letters="\u0370-\u03ff\u1f00-\u1fff",
    marks_after_letters=";\u037e",
    clause_marks_after_letters="\u0387\u00b7",
)
