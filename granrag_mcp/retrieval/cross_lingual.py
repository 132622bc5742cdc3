"""Whether a query's words can match the text it searches: the rule that turns BM25 off for a question written in
another language and script than the documents (an English question over Chinese, Hindi or Arabic text).

Such a question's BM25 lists hold only stray matches (numbers, a Latin name), and the candidate ranker's word
features say nothing of it, yet both are fused and weighted as if they knew: the searches then rank the right
passage below what the dense lists alone would. Where the rule says the words cannot match, every search relies on
its dense lists for that query (`View.lexical` returns nothing and the ranker's word features are the same for
every candidate). The rule needs both the language and the script to differ, because a short question's language
is sometimes misread (an English question about "Super Bowl" read as Nigerian Pidgin) while its script is not, so
a query in the documents' own script never loses its words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

from granrag_mcp.levels import LEVELS, list_name
from granrag_mcp.retrieval.fusion import FusionUsed
from granrag_mcp.text.language import UNDETERMINED, detect_language

DEFAULT_SCRIPT = "LATIN"
"""The script of a language the table below does not name."""

SCRIPTS: dict[str, frozenset[str]] = {
    "zh": frozenset({"CJK"}),
    "ja": frozenset({"CJK", "HIRAGANA", "KATAKANA"}),
    "ko": frozenset({"HANGUL", "CJK"}),
    **dict.fromkeys(("hi", "mr", "ne", "sa"), frozenset({"DEVANAGARI"})),
    **dict.fromkeys(("ar", "fa", "ur", "ps", "ug", "ckb", "sd"), frozenset({"ARABIC"})),
    **dict.fromkeys(("he", "yi"), frozenset({"HEBREW"})),
    **dict.fromkeys(("ru", "uk", "bg", "sr", "mk", "be", "kk", "ky", "mn", "tg", "tt", "ba"), frozenset({"CYRILLIC"})),
    "el": frozenset({"GREEK"}),
    "th": frozenset({"THAI"}),
    "hy": frozenset({"ARMENIAN"}),
    "ka": frozenset({"GEORGIAN"}),
    **dict.fromkeys(("bn", "as"), frozenset({"BENGALI"})),
    "ta": frozenset({"TAMIL"}),
    "te": frozenset({"TELUGU"}),
    "kn": frozenset({"KANNADA"}),
    "ml": frozenset({"MALAYALAM"}),
    "gu": frozenset({"GUJARATI"}),
    "pa": frozenset({"GURMUKHI"}),
    "or": frozenset({"ORIYA"}),
    "si": frozenset({"SINHALA"}),
    "km": frozenset({"KHMER"}),
    "lo": frozenset({"LAO"}),
    "my": frozenset({"MYANMAR"}),
    "am": frozenset({"ETHIOPIC"}),
    "bo": frozenset({"TIBETAN"}),
    "dv": frozenset({"THAANA"}),
}
"""The scripts each language is written in, by the first word of their letters' Unicode names; every other
language is written in DEFAULT_SCRIPT."""

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
"""A number as a question writes it (a year, a count, a decimal), in any script's digits."""

UNTOLD = frozenset({UNDETERMINED, "unknown"})
"""A document's language as the catalog gives it when it could not be told (or the catalog predates languages)."""


def scripts_of(text: str) -> frozenset[str]:
    """The scripts of the letters of `text` (the first word of each letter's Unicode name: LATIN, CJK, ARABIC)."""
    found = set()
    for char in text:
        if char.isalpha():
            name = unicodedata.name(char, "")
            if name:
                found.add(name.split(" ", 1)[0])
    return frozenset(found)


def numbers_of(query: str) -> str:
    """The numbers of `query`, space-separated ("" when it has none): the one part of a question in another script
    whose words can still match the text, since the text writes its years and counts in the same digits."""
    return " ".join(NUMBER.findall(query))


def words_can_match(query: str, languages: Collection[str | None]) -> bool:
    """Whether the words of `query` can match text in `languages` (the searched documents' ISO 639 codes): False
    only when the query's language is told, is none of them, and the query has no letter in any of their scripts.
    A document of untold language, or a query whose language cannot be told, keeps the words."""
    if not languages or any(code is None or code in UNTOLD for code in languages):
        return True
    held = frozenset().union(*(SCRIPTS.get(str(code), frozenset({DEFAULT_SCRIPT})) for code in languages))
    if scripts_of(query) & held:  # checked first: it needs no language model, and decides every same-script query
        return True
    language = detect_language(query)
    return language == UNDETERMINED or language in languages


LEXICAL_LISTS = frozenset(list_name(level, "lexical") for level in LEVELS)
"""The BM25 lists of a fusion, which are empty for a query whose words cannot match."""


def lists_fused(used: FusionUsed | None, words_match: bool) -> FusionUsed | None:
    """What a fused search reports it fused: `used` as it is, or without the BM25 lists' weights and depths when
    the query's words cannot match (`words_can_match`), since those lists were empty and fused nothing."""
    if used is None or words_match:
        return used
    return FusionUsed(
        {name: weight for name, weight in used.weights.items() if name not in LEXICAL_LISTS},
        {name: depth for name, depth in used.depths.items() if name not in LEXICAL_LISTS},
        used.rrf_k,
    )
