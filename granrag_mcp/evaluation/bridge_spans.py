"""Bridge questions from names found independently of the concept graph.

The names are the answer spans of a QA set that look like proper names (every word capitalised, or a joining
"of", "de", "the"...; no digits): spans people marked, not the graph's extractor. They are found in the store's
sentences by their exact words (case kept), with a tokeniser of their own. A bridge question names two of them,
A and B, that never share a sentence, each in at least two sentences, linked by exactly one third name C (one
sentence names A and C, another C and B); "How is A connected to B?" is answered when a method's returned text,
within the budget, holds a sentence naming A and C and one naming C and B. A, B and C share no word, so a name
and its own parts ("Tesla", "Nikola Tesla") never link each other.

Coverage: of the names found in at least two sentences, the share that are concepts of the graph (by key, as
`find_concepts` looks a name up) and the share that resolve (key, alias or meaning).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

NAME_TOKEN = re.compile(r"\w+(?:[-–]\w+)*|[^\w\s]")
JOINS = frozenset("of de du da di del della der van von la le the and".split())
CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
MAX_NAME_WORDS = 6
MIN_SENTENCES = 2


@dataclass(frozen=True)
class NameBridge:
    a: str
    b: str
    link: str

    @property
    def question(self) -> str:
        return f"How is {self.a} connected to {self.b}?"


def name_words(text: str) -> tuple[str, ...]:
    """Words and punctuation marks; the dot of an initial ("John F. Kennedy") is dropped."""
    out: list[str] = []
    for token in NAME_TOKEN.findall(text):
        if token == "." and out and len(out[-1]) == 1 and out[-1].isupper():
            continue
        out.append(token)
    return tuple(out)


def span_names(answers: Iterable[str]) -> set[tuple[str, ...]]:
    """The answer spans that look like proper names, as word tuples: capitalised words and joins, no digits, no
    punctuation, no calendar word (dates are not names)."""
    out = set()
    for answer in answers:
        found = name_words(answer)
        if found and found[0].lower() == "the":
            found = found[1:]
        if not found or len(found) > MAX_NAME_WORDS or len("".join(found)) < 3:
            continue
        if any(not w[0].isalpha() or any(ch.isdigit() for ch in w) or w.lower() in CALENDAR for w in found):
            continue
        if all(w[0].isupper() or w in JOINS for w in found) and found[-1][0].isupper() and found[0][0].isupper():
            out.add(found)
    return out


def _find(sentence: str, index: dict[tuple[str, ...], int], width: int) -> Iterable[tuple[int, int]]:
    """(name, position) of every name in a sentence."""
    found = name_words(sentence)
    for start in range(len(found)):
        for size in range(1, min(width, len(found) - start) + 1):
            hit = index.get(found[start : start + size])
            if hit is not None:
                yield hit, start


def names_by_sentence(sentences: list[str], names: set[tuple[str, ...]]) -> list[set[int]]:
    """For each sentence, the names it holds (indices into `sorted(names)`), by exact word sequence."""
    ordered = sorted(names)
    index = {words: n for n, words in enumerate(ordered)}
    width = max((len(w) for w in ordered), default=1)
    return [{hit for hit, _ in _find(sentence, index, width)} for sentence in sentences]


def proper_names(names: set[tuple[str, ...]], sentences: list[str]) -> set[tuple[str, ...]]:
    """The names written capitalised somewhere other than a sentence's first word at least once: "Five" and "Not"
    are capitalised only where a sentence starts."""
    ordered = sorted(names)
    index = {words: n for n, words in enumerate(ordered)}
    width = max((len(w) for w in ordered), default=1)
    inside = {ordered[hit] for sentence in sentences for hit, start in _find(sentence, index, width) if start > 0}
    return names & inside


def frequent_names(names: set[tuple[str, ...]], held: list[set[int]]) -> list[str]:
    """The names found in at least MIN_SENTENCES sentences, as text."""
    ordered = sorted(names)
    counts = [0] * len(ordered)
    for sentence in held:
        for n in sentence:
            counts[n] += 1
    return [" ".join(ordered[n]) for n, c in enumerate(counts) if c >= MIN_SENTENCES]


def bridges(names: set[tuple[str, ...]], held: list[set[int]], n: int, seed: int = 0) -> list[NameBridge]:
    """Up to n bridge questions, drawn at random (seeded) from every qualifying pair."""
    ordered = sorted(names)
    counts = [0] * len(ordered)
    beside: list[set[int]] = [set() for _ in ordered]
    for sentence in held:
        for x in sentence:
            counts[x] += 1
            beside[x] |= sentence
    words = [set(w) - JOINS for w in ordered]

    def apart(x: int, y: int) -> bool:
        return not (words[x] & words[y])

    for x in range(len(ordered)):
        beside[x] = {y for y in beside[x] if y != x and apart(x, y)}
    pairs: dict[tuple[int, int], int] = {}
    for link in range(len(ordered)):
        around = sorted(beside[link])
        for i, a in enumerate(around):
            if counts[a] < MIN_SENTENCES:
                continue
            for b in around[i + 1 :]:
                if counts[b] < MIN_SENTENCES or b in beside[a] or not apart(a, b):
                    continue
                if (a, b) not in pairs and len(beside[a] & beside[b]) == 1:
                    pairs[(a, b)] = link
    chosen = sorted(pairs.items())
    random.Random(seed).shuffle(chosen)
    text = [" ".join(w) for w in ordered]
    return [NameBridge(text[a], text[b], text[link]) for (a, b), link in chosen[:n]]


def answered(bridge: NameBridge, texts: list[str]) -> bool:
    """Whether the texts hold a sentence naming A and the link, and one naming the link and B."""
    held = names_by_sentence(texts, {name_words(bridge.a), name_words(bridge.b), name_words(bridge.link)})
    a, b, link = (
        sorted({name_words(bridge.a), name_words(bridge.b), name_words(bridge.link)}).index(name_words(x))
        for x in (bridge.a, bridge.b, bridge.link)
    )
    return any({a, link} <= s for s in held) and any({link, b} <= s for s in held)
