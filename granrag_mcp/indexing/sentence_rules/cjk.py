"""Chinese, Japanese and Korean: the ideographic full stop and the fullwidth marks end a sentence with no space
after them; Latin ". ! ?" right before an ideograph or kana does too."""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(
    name="cjk",
    full_stops="。｡！？；．",
    closers="」』）】〉》〕〗〙〛”’\"'",
    letters="\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f",
    unspaced=True,
)
