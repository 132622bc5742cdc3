"""A concept named as an agent writes it: the exact key first (case, plural, possessive and dashes folded, a
leading "the" dropped), then an alias (an acronym and its expansion, a surname within a full name, a known name
inside a longer one), then the nearest name by the name's embedding. A name none of these finds is an error whose
suggestions are real near-matches: names spelt nearly the same, or meaning nearly the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.store.graph import ConceptGraph
from granrag_mcp.text.concepts import ConceptMatcher
from granrag_mcp.text.words import CONNECTORS, concept_key, fold, words

MEANING_SIMILARITY = 0.85
"""Least cosine of a name's embedding with a concept's taken as the same name ("Nobel prize" for "Nobel Prize")."""
SUGGEST_SIMILARITY = 0.7
"""Least cosine of a concept suggested, when nothing resolves, as meaning nearly the same."""
SUGGEST_SPELLING = 85.0
"""Least whole-name edit similarity (0-100) of a concept suggested as spelt nearly the same."""
SUGGESTIONS = 5


class UnknownConceptError(InvalidInputError):
    """A concept name the graph does not hold."""


@dataclass(frozen=True)
class Resolved:
    concept: int
    how: str  # "exact", "alias" or "meaning"


def _initials(name: str) -> str:
    """The initials of a name's capitalised words ("World Meteorological Organization": "wmo"), or ""."""
    parts = [w for w in words(name) if w.lower() not in CONNECTORS and w.lower() != "the"]
    if len(parts) < 2 or not all(w[0].isupper() for w in parts):
        return ""
    return "".join(w[0].lower() for w in parts)


def _is_acronym(name: str) -> bool:
    letters = name.replace(".", "")
    return 2 <= len(letters) <= 8 and letters.isalpha() and letters.isupper()


class ConceptNames:
    """The lookups of one graph's names, built once per graph."""

    def __init__(self, graph: ConceptGraph, matcher: ConceptMatcher) -> None:
        self.graph = graph
        self.matcher = matcher
        keys = [str(k) for k in graph.keys]
        self.by_key = {k: n for n, k in enumerate(keys)}
        self.lower_names = [str(n).lower() for n in graph.names]
        for n, name in enumerate(self.lower_names):
            self.by_key.setdefault(name, n)
        frequency = graph.frequency
        # An alias maps to its most frequent holder: concepts in descending frequency, first one kept.
        self.expansions: dict[str, int] = {}  # acronym key -> expansion concept
        self.acronyms: dict[str, int] = {}  # initials -> acronym concept
        self.surnames: dict[str, int] = {}  # last word of a multi-word name -> that name
        for n in np.argsort(-frequency, kind="stable").tolist():
            name = str(graph.names[n])
            initials = _initials(name)
            if initials:
                self.expansions.setdefault(initials, n)
                last = keys[n].rsplit(" ", 1)[-1]
                self.surnames.setdefault(last, n)
            elif _is_acronym(name):
                self.acronyms.setdefault(name.replace(".", "").lower(), n)

    def exact(self, name: str) -> int | None:
        found = self.by_key.get(name.strip().lower())
        if found is None:
            key = concept_key(name)
            found = self.by_key.get(key) if key else None
        return found

    def alias(self, name: str) -> int | None:
        """An acronym's expansion or the other way round, a full name for its surname, or the longest known name
        inside the given one ("Westinghouse Electric Manufacturing Company": "Westinghouse Electric")."""
        text = name.strip()
        if _is_acronym(text):
            found = self.expansions.get(text.replace(".", "").lower())
            if found is not None:
                return found
        initials = _initials(text)
        if initials and initials in self.acronyms:
            return self.acronyms[initials]
        found_words = words(text)
        if not found_words:  # punctuation only: nothing a name could stand for
            return None
        if len(found_words) == 1 and fold(found_words[0]) in self.surnames:
            return self.surnames[fold(found_words[0])]
        if not all(w[0].isupper() or w.lower() in CONNECTORS for w in found_words):
            return None  # only a name stands for a name inside it; "sliding frction" is no "Sliding"
        # The name's first word, or a name of two words or more, inside it: "Westinghouse" in "Westinghouse
        # Electric Manufacturing Company", never a generic last word such as "Company".
        first = 1 if found_words[0].lower() == "the" else 0
        inside = [
            (end - start, int(self.graph.frequency[hit]), hit)
            for hit, start, end in self.matcher.spans(text)
            if str(self.graph.names[hit])[:1].isupper() and (start == first or end - start >= 2)
        ]
        return max(inside)[2] if inside else None

    def suggestions(self, name: str, vector: np.ndarray | None, nearest: Callable) -> list[str]:
        """Names spelt nearly the same, then names meaning nearly the same; none when nothing is close."""
        from rapidfuzz import fuzz, process

        rows: list[int] = [
            index
            for _, _, index in process.extract(
                name.strip().lower(),
                self.lower_names,
                scorer=fuzz.ratio,
                limit=SUGGESTIONS,
                score_cutoff=SUGGEST_SPELLING,
            )
        ]
        if vector is not None:
            found, similarity = nearest(vector, SUGGESTIONS)
            rows += [r for r, s in zip(found.tolist(), similarity.tolist()) if s >= SUGGEST_SIMILARITY]
        return [str(self.graph.names[r]) for r in list(dict.fromkeys(rows))[:SUGGESTIONS]]

    def resolve(self, name: str, embed: Callable[[str], np.ndarray], nearest: Callable) -> Resolved:
        """The concept `name` stands for; `embed` gives a name's vector, `nearest(vector, k)` the rows and cosines
        of the k nearest concept names."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError("the concept name is empty: pass a name as the documents write it")
        found = self.exact(name)
        if found is not None:
            return Resolved(found, "exact")
        found = self.alias(name)
        if found is not None:
            return Resolved(found, "alias")
        vector = embed(name)
        rows, similarity = nearest(vector, 1)
        if len(rows) and float(similarity[0]) >= MEANING_SIMILARITY:
            return Resolved(int(rows[0]), "meaning")
        close = self.suggestions(name, vector, nearest)
        if close:
            advice = f"the closest names are {', '.join(repr(c) for c in close)}: pass one of them"
        else:
            advice = "no concept is spelt or means nearly the same; search_narrow finds the sentences that name it"
        raise UnknownConceptError(f"unknown concept {name!r}; {advice}, or call find_concepts")
