"""The words BM25 indexes and searches: a text's terms, analysed by the rules of the language it is written in.

English (and text whose language could not be told) keeps the analysis every store so far was built with:
lower-cased `\\w\\w+` words, English stop words, an English plural ending folded. Other languages get
Unicode-correct words (a combining mark stays inside its word, so a Devanagari word is not cut at each vowel
sign), their own stop words (the stop-words package's lists) and Snowball stemmer (PyStemmer), and scripts
written without spaces between words are cut into overlapping character pairs, as Lucene's CJKAnalyzer does:
"北京大学" is "北京 京大 大学", which a query's pairs match wherever the words fall.

A query is analysed by every language the index holds and the terms are joined, so an English question finds
English text and a Chinese one Chinese text in one mixed store.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from granrag_mcp.text.language import UNDETERMINED

LEGACY = "en"
"""The analysis of English, of undetermined text, and of every index written before languages were told."""

_WORD = re.compile(r"\w\w+")
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves""".split()
)
"""English stop words: the BM25 list since the first store."""

SNOWBALL = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
"""ISO 639-1 code -> the Snowball stemmer of that language (a language not here is not stemmed)."""

PAIRED_SCRIPTS = (
    ("\u1100", "\u11ff"),  # Hangul Jamo
    ("\u3040", "\u30ff"),  # Hiragana, Katakana
    ("\u3100", "\u312f"),  # Bopomofo
    ("\u3130", "\u318f"),  # Hangul compatibility Jamo
    ("\u3400", "\u4dbf"),  # CJK Extension A
    ("\u4e00", "\u9fff"),  # CJK Unified Ideographs
    ("\uac00", "\ud7af"),  # Hangul syllables
    ("\uf900", "\ufaff"),  # CJK compatibility ideographs
    ("\uff66", "\uff9f"),  # halfwidth Katakana
    ("\U00020000", "\U0003134f"),  # CJK Extensions B-G
    ("\u0e00", "\u0e7f"),  # Thai
    ("\u0e80", "\u0eff"),  # Lao
    ("\u1000", "\u109f"),  # Myanmar
    ("\u1780", "\u17ff"),  # Khmer
)
"""Scripts written without spaces between words, whose runs become overlapping character pairs."""

NO_STOPWORDS = frozenset({"zh", "ja", "ko", "th", "lo", "my", "km", "vi"})
"""Languages analysed without a stop-word list: those cut into character pairs (their lists name words that pairs
never are), and Vietnamese, whose list of 1,943 syllables and phrases drops content words too (XQuAD-A
Vietnamese paragraphs, BM25 MRR@5 0.938 with it, 0.950 without; in-sample)."""


def analyse(text: str, language: str = LEGACY) -> list[str]:
    """The BM25 terms of `text` written in `language` (an ISO 639-1 code), in order."""
    if language in (LEGACY, UNDETERMINED):
        return _legacy(text)
    return _analyser(language).terms(text)


def analysis_language(language: str | None) -> str:
    """The analysis a document of `language` gets: its own, or English's for an unknown or undetermined one."""
    return LEGACY if not language or language == UNDETERMINED else language


def query_terms(query: str, languages: Iterable[str]) -> list[str]:
    """A query's terms under each of `languages` (the languages an index holds), each term once."""
    found: dict[str, None] = {}
    for language in languages:
        found.update(dict.fromkeys(analyse(query, language)))
    return list(found)


def stopwords(language: str) -> frozenset[str]:
    """The stop words of `language`: the English list for English, the stop-words package's list otherwise (none
    for a language it lacks)."""
    if language in (LEGACY, UNDETERMINED):
        return STOPWORDS
    return _analyser(language).stopwords


def ranker_terms(text: str, language: str = LEGACY) -> list[str]:
    """The stems a text's words are compared by (the candidate ranker's word coverage): English's Snowball stems
    of its BM25 terms for English, as the ranker always had; for another language its BM25 terms, which its own
    analysis has stemmed already (or cut into character pairs)."""
    if language in (LEGACY, UNDETERMINED):
        return stem(_legacy(text), LEGACY)
    return analyse(text, language)


def stem(words: Sequence[str], language: str) -> list[str]:
    """`words` (lower case) by `language`'s Snowball stemmer: English's for English, unchanged for a language
    without one."""
    algorithm = "english" if language in (LEGACY, UNDETERMINED) else SNOWBALL.get(language)
    if algorithm is None:
        return list(words)
    return _stemmer(algorithm).stemWords(list(words))


def _legacy(text: str) -> list[str]:
    """Lower-cased words of two or more characters, stopwords dropped, plural endings folded."""
    terms = []
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS:
            terms.append(fold_plural(word))
    return terms


def fold_plural(word: str) -> str:
    """An English plural ending folded ("studies" -> "study", "rivers" -> "river"; "glass", "bus" kept)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@dataclass(frozen=True)
class _Analyser:
    language: str
    stopwords: frozenset[str]
    algorithm: str | None

    def terms(self, text: str) -> list[str]:
        out: list[str] = []
        words: list[int] = []  # where in `out` the stemmed words go
        for token in _words().findall(unicodedata.normalize("NFC", text).lower()):
            for match in _runs().finditer(token):
                run = match.group()
                if match.lastgroup == "paired":
                    out += _pairs(run)
                elif len(run) > 1 and run not in self.stopwords:
                    words.append(len(out))
                    out.append(run)
        if self.algorithm is not None and words:
            for place, stemmed in zip(words, _stemmer(self.algorithm).stemWords([out[i] for i in words])):
                out[place] = stemmed
        return out


@lru_cache(maxsize=64)
def _analyser(language: str) -> _Analyser:
    lists: frozenset[str] = frozenset()
    if language not in NO_STOPWORDS:
        from stop_words import safe_get_stop_words

        lists = frozenset(w.lower() for w in safe_get_stop_words(language))
    return _Analyser(language, lists, SNOWBALL.get(language))


_local = threading.local()  # one stemmer per thread and language: a PyStemmer object must not be shared


def _stemmer(algorithm: str) -> Any:
    stemmers: dict[str, Any] | None = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    if algorithm not in stemmers:
        import Stemmer

        stemmers[algorithm] = Stemmer.Stemmer(algorithm)
    return stemmers[algorithm]


@lru_cache(maxsize=1)
def _marks() -> str:
    """A character class body for every combining mark (Unicode categories Mn, Mc, Me)."""
    marks = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")]
    return _ranges(marks)


@lru_cache(maxsize=1)
def _words() -> re.Pattern[str]:
    """A word: word characters and the combining marks among them (Devanagari vowel signs, Thai tone marks)."""
    return re.compile(f"(?:\\w|[{_marks()}])+")


@lru_cache(maxsize=1)
def _clusters() -> re.Pattern[str]:
    """A character with the combining marks after it (or marks with no character before them)."""
    return re.compile(f"[^{_marks()}][{_marks()}]*|[{_marks()}]+")


def _ranges(chars: list[str]) -> str:
    """A character class body for `chars` (sorted), with runs written as ranges."""
    out, start, previous = [], chars[0], chars[0]
    for char in chars[1:] + ["\x00"]:
        if ord(char) == ord(previous) + 1:
            previous = char
            continue
        out.append(re.escape(start) if start == previous else f"{re.escape(start)}-{re.escape(previous)}")
        start = previous = char
    return "".join(out)


@lru_cache(maxsize=1)
def _runs() -> re.Pattern[str]:
    """A token's runs of one paired script (group "paired") or of anything else."""
    paired = "".join(f"{low}-{high}" for low, high in PAIRED_SCRIPTS)
    return re.compile(f"(?P<paired>[{paired}]+)|[^{paired}]+")


def _pairs(run: str) -> list[str]:
    """Overlapping pairs of the run's characters, each with the combining marks that follow it (a Thai vowel or
    tone mark stays on its consonant: on XQuAD-A Thai paragraphs this lifted BM25 MRR@5 from 0.930 to 0.955); a
    lone character is its own term."""
    characters = _clusters().findall(run)
    if len(characters) == 1:
        return characters
    return [characters[i] + characters[i + 1] for i in range(len(characters) - 1)]
