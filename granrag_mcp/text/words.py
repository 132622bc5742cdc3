"""Words of a text and the key a phrase is known by: the one normalisation the index and the queries share.

A key folds case, a possessive ending, dash variants and plural endings, so "Super Bowls", "super bowl" and
"Super Bowl's" are one concept, and "Austria–Hungary" (en dash) is "Austria-Hungary".
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from granrag_mcp.text.analysis import STOPWORDS as _LEXICAL_STOPWORDS
from granrag_mcp.text.analysis import fold_plural

MAX_WORDS = 6
"""Longest concept in words ("Westinghouse Electric Manufacturing Company" is four)."""

_DASHES = str.maketrans({"‐": "-", "‑": "-", "‒": "-", "–": "-", "—": " — ", "’": "'"})  # an em dash parts words
# A word: letters, with inner apostrophes and inner dashes between letters ("Austria-Hungary", "O'Neill");
# a number; or one punctuation mark (names never run across one).
TOKEN = re.compile(r"[^\W\d_](?:[\w']|-(?=[^\W\d_]))*|\d[\w.,:/-]*|[^\w\s]")
_MONTHS = frozenset("january february march april may june july august september october november december".split())
_EXTRA_STOP = frozenset(
    "also one two three four five first second third many much several however although though may might could "
    "would shall must including include includes included known called used use uses using made make makes well "
    "like new time times year years number numbers way ways another among around since upon within without yet "
    "still even every either neither often usually whose whether thus hence therefore according".split()
)
STOP = _LEXICAL_STOPWORDS | _EXTRA_STOP
NAME_STARTS = frozenset("new first second third one two three four five well".split())
"""Stop words that may begin or end a name of several words: "New Orleans", "First World War"."""
NAME_STOP = STOP - NAME_STARTS
CONNECTORS = frozenset("of de du da di del della der van von la le y".split())
"""Lower-case words that join the parts of a proper name: "University of Warsaw", "Charles de Gaulle"."""
NAME_JOINS = CONNECTORS | {"the"}
"""What may join two capitalised words into one name ("Bank of the United States"); not "and", which would make
one name of "Warsaw and Chopin"."""


def normalise(text: str) -> str:
    """One spelling of dashes and apostrophes, so that "Austria–Hungary" and "Austria-Hungary" are one word."""
    return text.translate(_DASHES)


def folded(text: str) -> str:
    """A whole text as names are compared in it: lower case, accents dropped, one spelling of dashes and
    apostrophes ("Frédéric CHOPIN" is "frederic chopin"); unlike a concept key, plurals are kept."""
    text = unicodedata.normalize("NFKD", normalise(text).lower())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """Words, numbers and punctuation marks of a text, in order; the dot of an initial ("John F. Kennedy") is
    dropped, so the name reads the same with or without it."""
    out: list[str] = []
    for token in TOKEN.findall(normalise(text)):
        if token == "." and out and len(out[-1]) == 1 and out[-1].isupper():
            continue
        out.append(token)
    return out


def words(text: str) -> list[str]:
    """The words and numbers of a text (no punctuation)."""
    return [t for t in tokens(text) if t[0].isalnum()]


def strip_possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "'S")) else word.rstrip("'")


@lru_cache(maxsize=1 << 17)  # a corpus repeats its words: fold each spelling once
def fold(word: str) -> str:
    """One word as part of a concept key: lower case, a possessive and a plural ending folded (the BM25 rule)."""
    return fold_plural(strip_possessive(normalise(word).lower()).strip("-"))


@lru_cache(maxsize=1 << 17)
def concept_key(phrase: str) -> str | None:
    """The key of a phrase, or None for a phrase that is no concept (a number, a date, stop words only)."""
    found = words(phrase)
    if not found or len(found) > MAX_WORDS:
        return None
    if found[0].lower() == "the" and len(found) > 1:  # "the Rhine" is the Rhine
        found = found[1:]
    folded = [fold(t) for t in found]
    if any(not f or f[0].isdigit() or f in _MONTHS for f in folded):
        return None
    edge_stop = STOP if len(folded) == 1 else NAME_STOP
    numeral = len(found) > 1 and found[-1] == "I"  # "World War I"
    if folded[0] in edge_stop or (folded[-1] in edge_stop and not numeral):
        return None
    if any(f in NAME_STOP and f not in CONNECTORS and f != "the" for f in folded[1:-1]):
        return None  # "Bank of the United States" is a name; "soil of steady" is two fragments
    if len(folded) == 1 and (len(folded[0]) < 2 or (len(folded[0]) < 3 and not found[0].isupper())):
        return None  # a stray letter or an initial, but "EU" and "UN" are names
    return " ".join(folded)
