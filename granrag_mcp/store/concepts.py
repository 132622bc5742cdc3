"""Concepts of a document, found offline without a language model: YAKE keyphrases, normalised into keys.

YAKE scores candidate phrases from statistics of the text alone (position, case, frequency, spread, context),
with stop words bundled, so nothing is downloaded at run time. Each document's keyphrases become concept keys;
a key folds case and plural endings, so "Super Bowls" and "super bowl" are one concept. Phrases with digits,
month names or only stop words are dropped: dates and numbers co-occur with everything and link nothing.

Sentences are matched against the whole vocabulary afterwards (`ConceptMatcher`), so a concept that YAKE found
in one document is also counted where another document mentions it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from granrag_mcp.store.lexical import STOPWORDS as _LEXICAL_STOPWORDS

MAX_WORDS = 3
"""Longest concept in words: longer YAKE phrases are mostly a concept plus a verb or an adjective."""
PHRASES_PER_CHARS = 100
"""How many keyphrases are kept per document: one per this many characters (at least MIN_PHRASES)."""
MIN_PHRASES = 20
MAX_PHRASES = 2000

_WORD = re.compile(r"[^\W\d_][\w'’-]*|\d[\w.,:/-]*")
_MONTHS = frozenset("january february march april may june july august september october november december".split())
_EXTRA_STOP = frozenset(
    "also one two three first second third many much several however although may might could would shall "
    "including include includes included known called used use uses using made make makes well like new "
    "time times year years number numbers way ways".split()
)
STOP = _LEXICAL_STOPWORDS | _EXTRA_STOP


def fold(word: str) -> str:
    """One word as part of a concept key: lower case, a plural ending folded (same rule as the BM25 analyser)."""
    word = word.lower().replace("’", "'").removesuffix("'s").strip("'-")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def concept_key(phrase: str) -> str | None:
    """The key of a phrase, or None for a phrase that is no concept (a number, a date, stop words only)."""
    tokens = words(phrase)
    if not tokens or len(tokens) > MAX_WORDS:
        return None
    folded = [fold(t) for t in tokens]
    if any(not f or f[0].isdigit() or f in _MONTHS for f in folded):
        return None
    if folded[0] in STOP or folded[-1] in STOP or any(f in STOP and f != "of" for f in folded[1:-1]):
        return None  # "University of Warsaw" is a name; "soil and steady" is two fragments
    if len(folded) == 1 and len(folded[0]) < 3:
        return None
    return " ".join(folded)


def keyphrases(text: str) -> list[tuple[str, str]]:
    """A document's concepts as (key, surface form), best first, one per key."""
    import yake  # the extractor is needed only at index time

    top = min(MAX_PHRASES, max(MIN_PHRASES, len(text) // PHRASES_PER_CHARS))
    # dedup_lim=1 turns YAKE's pairwise similarity filter off (half its time on a long document): phrases that
    # differ only in case or plural already fold into one key below. YAKE then gives phrases in lower case.
    extractor = yake.KeywordExtractor(lan="en", n=MAX_WORDS, top=top, dedup_lim=1.0)
    out: dict[str, str] = {}
    for phrase, _score in extractor.extract_keywords(text):
        key = concept_key(phrase)
        if key is not None and key not in out:
            out[key] = phrase
    return list(out.items())


class ConceptMatcher:
    """Finds the concepts of a vocabulary in sentences, every match: YAKE phrases often run past a concept
    ("lubricants lower sliding"), and a longest-match-only rule would hide the concepts inside them."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.index = {key: n for n, key in enumerate(keys)}

    def find(self, sentence: str) -> list[int]:
        """Vocabulary positions of the concepts in a sentence, each once, in reading order."""
        return list(dict.fromkeys(hit for hit, _, _ in self.spans(sentence)))

    def spans(self, sentence: str) -> list[tuple[int, int, int]]:
        """Every match as (vocabulary position, first word, word after the last)."""
        folded = [fold(t) for t in words(sentence)]
        found = []
        for position in range(len(folded)):
            for width in range(1, min(MAX_WORDS, len(folded) - position) + 1):
                hit = self.index.get(" ".join(folded[position : position + width]))
                if hit is not None:
                    found.append((hit, position, position + width))
        return found


def apart(spans: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Pairs of different concepts whose matches do not overlap anywhere in the sentence: "sliding friction" and
    "friction" in one phrase are one mention, not a link."""
    pairs: set[tuple[int, int]] = set()
    overlapping: set[tuple[int, int]] = set()
    for i, (a, a_start, a_end) in enumerate(spans):
        for b, b_start, b_end in spans[i + 1 :]:
            if a != b:
                (pairs if a_end <= b_start or b_end <= a_start else overlapping).add((min(a, b), max(a, b)))
    return sorted(pairs - overlapping)


def display_names(surfaces: Iterable[tuple[str, str]]) -> dict[str, str]:
    """For each key, its most frequent surface form (ties: the first seen)."""
    counts: dict[str, Counter[str]] = {}
    for key, surface in surfaces:
        counts.setdefault(key, Counter())[surface] += 1
    return {key: counter.most_common(1)[0][0] for key, counter in counts.items()}
