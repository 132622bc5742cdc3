"""Concepts of a text, found offline with no model: proper names and noun-phrase terms, as concept keys.

* Names: runs of capitalised words, joined by "of", "de", "van" and the like ("University of Warsaw", "Charles
  de Gaulle", "Austria-Hungary", "NFL"), without a leading stop word ("The Beatles" is "Beatles"); a name's
  connector-separated parts count too ("Warsaw" in "University of Warsaw").
* Terms: runs of lower-case content words between stop words and punctuation; a run's head (its last word) and
  its last two and three words ("steam engine", "alternating current motor").

Nothing is ranked away: every candidate is a concept wherever two sentences mention it (the graph's rule), so a
name that occurs twice is never lost to a keyphrase score. Sentences are matched against the whole vocabulary
afterwards (`ConceptMatcher`), so a concept found in one document also counts where another mentions it.
"""

from __future__ import annotations

from collections.abc import Iterable

from granrag_mcp.text.analysis import LEGACY, analysis_language
from granrag_mcp.text.words import (
    CONNECTORS,
    MAX_WORDS,
    NAME_JOINS,
    NAME_STOP,
    STOP,
    concept_key,
    fold,
    folded,
    strip_possessive,
    tokens,
    words,
)

MAX_TERM_WORDS = 3
VERB_FOLLOWS = frozenset(
    "he she it they we i you who which that to is was were are be been being has have had will would can could "
    "may might should must do does did not also often then".split()
)
"""Words a verb often follows: a run of content words after one of them, or after a content word (a subject),
likely starts with a verb ("they built bridges", "Tesla built motors"), so its first word is left out; after
anything else (an article, a preposition, "than", a comma) the run is a noun phrase ("than sliding friction")."""


VERBS = frozenset(
    "said say says built began begun become became won led held took taken gave given went gone came come found "
    "wrote written told saw seen got left kept brought bought thought sent grew grown fell ran rose knew meant "
    "paid lost sold stood spent taught fought caught won't".split()
)


def _verb(word: str) -> bool:
    """A word taken for a verb: it ends a term ("the laboratory burned") and may start an object ("built motors")."""
    return word in VERBS or (len(word) > 4 and word.endswith("ed") and not word.endswith("eed"))


def _verb_first(after: str) -> bool:
    return after in VERB_FOLLOWS or (after[:1].isalpha() and after not in STOP and not _verb(after))


def _capitalised(token: str) -> bool:
    return token[0].isupper() and token[0].isalpha()


def _names(run: list[str]) -> Iterable[str]:
    """A run of capitalised words and connectors as names: the whole (trimmed) and every shorter span of it that
    starts and ends on a capitalised word ("Kabaty" and "Kabaty Woods" in "Kabaty Woods Nature Reserve")."""
    while run and (run[0].lower() in NAME_STOP or run[0] in CONNECTORS):  # "Von Miller" keeps its "Von"
        run = run[1:]
    while run and run[-1][0].islower():
        run = run[:-1]
    if not run:
        return
    if len(run) <= MAX_WORDS:
        yield " ".join(run)
    starts = [n for n, word in enumerate(run) if word[0].isupper() and len(word) > 1 and word.lower() not in NAME_STOP]
    for first in starts:
        for last in starts:
            if first <= last and last - first < min(MAX_WORDS, len(run) - 1):
                yield " ".join(run[first : last + 1])


def name_runs(text: str, first_word: bool = True) -> list[str]:
    """The whole runs of capitalised words of a text as written ("Charles de Gaulle", "University of Warsaw"),
    joined by `NAME_JOINS`, without their shorter spans; the text's first word only when `first_word` (a
    sentence's first word is capitalised whatever it is)."""
    out: list[str] = []
    run: list[str] = []
    for n, token in enumerate(words(text)):
        if _capitalised(token) and (first_word or n > 0):
            run.append(token)
        elif run and token.lower() in NAME_JOINS:
            run.append(token)
        else:
            _close(run, out)
            run = []
    _close(run, out)
    return out


def _close(run: list[str], out: list[str]) -> None:
    while run and run[-1].lower() in NAME_JOINS:
        run.pop()
    if run and not (len(run) == 1 and folded(run[0]) in STOP):
        out.append(" ".join(run))


def _terms(run: list[str]) -> Iterable[str]:
    """A run of lower-case content words as terms: its head, and its last two and three words."""
    for width in range(1, min(MAX_TERM_WORDS, len(run)) + 1):
        first = run[-width]
        if width > 1 and first.endswith("ly"):
            break
        yield " ".join(run[-width:])


def candidates(text: str, with_terms: bool = True) -> Iterable[str]:
    """Every name and term of a text as written (possessives dropped), in reading order, with repeats; names only
    without `with_terms`."""
    name: list[str] = []
    term: list[str] = []
    after = ""  # the word before the current run of lower-case content words
    for token in [*tokens(text), "."]:
        word = strip_possessive(token) if token[0].isalpha() else token
        lower = word.lower()
        if word[:1].isalpha() and _capitalised(word):
            name.append(word)
        elif name and lower in NAME_JOINS:
            name.append(lower)
        else:
            yield from _names(name)
            name = []
        content = word[:1].isalpha() and word.islower() and lower not in STOP and len(word) > 2
        if with_terms and content and not _verb(word):
            term.append(word)
        else:
            yield from _terms(term[1:] if _verb_first(after) else term)
            term = []
            after = lower
        if word != token:  # a possessive ends a name and a term: "Tesla's laboratory"
            yield from _names(name)
            yield from _terms(term[1:] if _verb_first(after) else term)
            name, term, after = [], [], "the"  # a possessive is a determiner: "Tesla's laboratory"


def extract(text: str, language: str = LEGACY) -> list[tuple[str, str]]:
    """A text's concepts as (key, surface form), the most frequent surface of each key, most frequent key first.

    Terms (runs of lower-case content words) are found by English stop words and verb endings, so a text in
    another language gives its names only (capitalised runs; none in a script without case, such as Chinese)."""
    surfaces: dict[str, dict[str, int]] = {}
    for phrase in candidates(text, with_terms=analysis_language(language) == LEGACY):
        key = concept_key(phrase)
        if key is not None:
            forms = surfaces.get(key)
            if forms is None:
                surfaces[key] = {phrase: 1}
            else:
                forms[phrase] = forms.get(phrase, 0) + 1
    ranked = sorted(surfaces.items(), key=lambda item: -sum(item[1].values()))
    return [(key, _most_frequent(forms)) for key, forms in ranked]


def _most_frequent(counts: dict[str, int]) -> str:
    """The most frequent of `counts`, the first seen among equals (as `Counter.most_common(1)` picks)."""
    return max(counts, key=counts.__getitem__)


class ConceptMatcher:
    """Finds the concepts of a vocabulary in sentences, every match, nested ones included: "Nikola Tesla" and
    "Tesla" are both found in "Nikola Tesla built", and `apart` keeps them from linking each other."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.index = {key: n for n, key in enumerate(keys)}
        self.width = max((key.count(" ") + 1 for key in self.index), default=1)
        # Every key's leading words: a run of words that starts no key ends the search from its first word, so a
        # sentence costs about one lookup a word instead of one per word and width.
        self._prefixes = {key.rsplit(" ", n)[0] for key in self.index for n in range(key.count(" ") + 1)}

    def find(self, sentence: str) -> list[int]:
        """Vocabulary positions of the concepts in a sentence, each once, in reading order."""
        return list(dict.fromkeys(hit for hit, _, _ in self.spans(sentence)))

    def spans(self, sentence: str) -> list[tuple[int, int, int]]:
        """Every match as (vocabulary position, first word, word after the last)."""
        folded = [fold(t) if t[0].isalnum() else t for t in tokens(sentence)]
        found = []
        index, prefixes = self.index, self._prefixes
        for position, word in enumerate(folded):
            phrase = word
            for end in range(position + 1, min(position + self.width, len(folded)) + 1):
                if end > position + 1:
                    phrase = f"{phrase} {folded[end - 1]}"
                if phrase not in prefixes:
                    break
                hit = index.get(phrase)
                if hit is not None:
                    found.append((hit, position, end))
        return found


def apart(spans: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Pairs of different concepts whose matches do not overlap anywhere in the sentence: "sliding friction" and
    "friction" in one phrase are one mention, not a link."""
    pairs: set[tuple[int, int]] = set()
    overlapping: set[tuple[int, int]] = set()
    ordered = sorted(spans)  # by concept first, so each pair comes out as (smaller, larger) without min and max
    for i, (a, a_start, a_end) in enumerate(ordered):
        for b, b_start, b_end in ordered[i + 1 :]:
            if a != b:
                if a_end <= b_start or b_end <= a_start:
                    pairs.add((a, b))
                else:
                    overlapping.add((a, b))
    return sorted(pairs - overlapping)


def display_names(surfaces: Iterable[tuple[str, str]]) -> dict[str, str]:
    """For each key, its most frequent surface form (ties: the first seen)."""
    counts: dict[str, dict[str, int]] = {}
    for key, surface in surfaces:
        forms = counts.get(key)
        if forms is None:
            counts[key] = {surface: 1}
        else:
            forms[surface] = forms.get(surface, 0) + 1
    return {key: _most_frequent(forms) for key, forms in counts.items()}
