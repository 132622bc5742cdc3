"""Chinese, Japanese and Korean: the ideographic full stop and the fullwidth marks end a sentence with no space
after them; Latin ". ! ?" right before an ideograph or kana does too.

Long sentences: the fullwidth semicolon already ends a sentence here, so a statute's "（一）……；（二）……；" is parted
by it; where items run on with commas, the bracketed numerals ("（一）", "(二)", "（１）"), the circled and
parenthesised numbers ("①", "⑴", "㈠") and Japanese katakana items ("（ア）") open a clause. The text has no
spaces between words: 1.6 ideographs make a word (the Chinese XQuAD-A contexts hold 1.59 ideographs for each word of
their English originals), so a sentence of more than 40 words is one of more than 64 ideographs.
"""

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

RULE = ScriptRule(
    name="cjk",
    full_stops="。｡！？；．",
    closers="」』）】〉》〕〗〙〛”’\"'",
    letters="\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f",
    unspaced=True,
    # Fullwidth brackets, or ASCII ones around an ideographic numeral or right after CJK text: "(1)" in Latin text is
    # the Latin rule's, with whitespace around it.
    enumerators=(
        r"（(?:[一二三四五六七八九十]{1,3}|[0-9０-９]{1,2}|[ア-ン])）|\((?:[一二三四五六七八九十]{1,3}|[ア-ン])\)"
        r"|\((?<=[\u3000-\u303f\uff01-\uff0f\uff1a-\uff1f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]\()[0-9]{1,2}\)"
        r"|[\u2460-\u2473\u2474-\u2487\u3220-\u3229]"
    ),
    characters_per_word=1.6,
)
