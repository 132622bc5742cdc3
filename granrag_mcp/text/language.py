"""The language a text is written in, as an ISO 639-1 code ("en", "zh", "hi", "th"), or "und" when unsure.

py3langid (BSD-3-Clause, its naive Bayes model inside the wheel) names 140 languages, and was as accurate as
fastText's lite model and lingua on XQuAD's paragraphs and questions in twelve languages at a fraction of lingua's
time; fastText's model is CC BY-SA and lingua's wheel is 96 MB. Its regional varieties (Wu, Cantonese, Egyptian
and Moroccan Arabic) are folded into the language they are written as, because the words, stemmer and stop words
chosen from the code are those of the written language.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

UNDETERMINED = "und"
"""ISO 639-2's code for a language that cannot be told."""

MIN_CONFIDENCE = 0.25
"""Below this posterior the guess is no better than a near tie between related languages, or a word or two."""

MIN_LETTERS = 2
"""Fewer letters than this say nothing of a language (a number, a mark, one letter)."""

SAMPLE_CHARS = 4000
"""A long text is judged on this many characters, taken from its start, middle and end: enough for a confident
answer, and the time stays flat however long the document."""

MACRO = {
    "wuu": "zh",
    "yue": "zh",
    "cmn": "zh",
    "gan": "zh",
    "hak": "zh",
    "nan": "zh",
    "ary": "ar",
    "arz": "ar",
    "apc": "ar",
    "acm": "ar",
    "aeb": "ar",
    "ajp": "ar",
    "arb": "ar",
}
"""Regional varieties the identifier names, and the written language they fold into."""


NO_LANGUAGE = frozenset({"und", "zxx"})
"""The identifier's answers that name no language: unsure, and "no linguistic content"."""


@lru_cache(maxsize=1)
def _identifier() -> LanguageIdentifier:
    """Loaded on first use (about a second), never at import."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True, min_confidence=MIN_CONFIDENCE)


def _sample(text: str) -> str:
    if len(text) <= SAMPLE_CHARS:
        return text
    third = SAMPLE_CHARS // 3
    middle = len(text) // 2 - third // 2
    return "\n".join((text[:third], text[middle : middle + third], text[-third:]))


def detect_language(text: str) -> str:
    """The ISO 639-1 code of the language `text` is written in ("en", "zh"), a three-letter ISO 639 code for a
    language that has no two-letter one, or "und" when the text is too short or the guess is unsure."""
    sample = _sample(text.strip())
    if sum(c.isalpha() for c in sample) < MIN_LETTERS:
        return UNDETERMINED
    code, _confidence = _identifier().classify(sample)
    return UNDETERMINED if code in NO_LANGUAGE else str(MACRO.get(code, code))
