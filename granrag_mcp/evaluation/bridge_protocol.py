"""Bridge questions by a fixed protocol, from the store's sentences alone (neither the concept graph nor the QA
set's answers pick them), so the same check can be built on any corpus.

- Names are runs of capitalised words inside a sentence (never its first word); "of", "the", "de", "von", "van",
  "du", "la" and "and" may join two capitalised words; a name has at least MIN_NAME_CHARS characters; months,
  seasons and weekdays are no names. Only sentences of at least MIN_SENTENCE_WORDS words are read.
- Two names are neighbours when a sentence holds both. A bridge is A, B and C where A and C share exactly one
  sentence s1, C and B exactly one other sentence s2, A and B share no sentence and no neighbour but C, and C has
  at most MAX_LINK_NEIGHBOURS neighbours.
- The question is "How is A connected to B?", A and B as written. A tool path answers when both s1 and s2 are
  in the text it returns within the budget (all calls of the path together); C need not be named.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

WORD = re.compile(r"\w+(?:['’-]\w+)*|[^\w\s]")
JOINS = frozenset("of the de von van du la and".split())
CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday spring summer autumn fall winter".split()
)
MIN_NAME_CHARS = 5
MIN_SENTENCE_WORDS = 6
MAX_LINK_NEIGHBOURS = 25


@dataclass(frozen=True)
class Bridge:
    a: str
    b: str
    link: str
    s1: str  # the one sentence naming A and C
    s2: str  # the one sentence naming C and B

    @property
    def question(self) -> str:
        return f"How is {self.a} connected to {self.b}?"


def _capital(word: str) -> bool:
    return word[0].isupper() and word[0].isalpha() and word.lower() not in CALENDAR


def sentence_names(sentence: str) -> set[str]:
    """The names of one sentence by the protocol; none in a sentence of fewer than MIN_SENTENCE_WORDS words."""
    tokens = WORD.findall(sentence)
    if sum(t[0].isalnum() for t in tokens) < MIN_SENTENCE_WORDS:
        return set()
    out: set[str] = set()
    run: list[str] = []

    def close() -> None:
        while run and not _capital(run[-1]):
            run.pop()
        name = " ".join(run)
        if len(name) >= MIN_NAME_CHARS:
            out.add(name)
        run.clear()

    for n, token in enumerate(tokens):
        if n > 0 and _capital(token):
            run.append(token)
        elif run and token in JOINS:
            run.append(token)
        else:
            close()
    close()
    return out


def unique_sentences(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(" ".join(t.split()) for t in texts))


def find_bridges(sentences: list[str], n: int, seed: int = 0) -> list[Bridge]:
    """Up to n bridges drawn at random (seeded) from every one the sentences hold, one per (A, B) pair."""
    where: dict[str, set[int]] = defaultdict(set)
    for row, sentence in enumerate(sentences):
        for name in sentence_names(sentence):
            where[name].add(row)
    beside: dict[str, set[str]] = defaultdict(set)
    for row_names in (sentence_names(s) for s in sentences):
        for name in row_names:
            beside[name] |= row_names - {name}
    found: dict[tuple[str, str], tuple[str, int, int]] = {}
    for link in sorted(beside):
        around = beside[link]
        if len(around) > MAX_LINK_NEIGHBOURS:
            continue
        ones = {}
        for name in around:
            shared = where[name] & where[link]
            if len(shared) == 1:
                ones[name] = next(iter(shared))
        for a in sorted(ones):
            for b in sorted(ones):
                if a >= b or ones[a] == ones[b] or (where[a] & where[b]) or (beside[a] & beside[b]) != {link}:
                    continue
                found.setdefault((a, b), (link, ones[a], ones[b]))
    chosen = sorted(found.items())
    random.Random(seed).shuffle(chosen)
    return [Bridge(a, b, link, sentences[r1], sentences[r2]) for (a, b), (link, r1, r2) in chosen[:n]]


def answered(bridge: Bridge, texts: list[str]) -> bool:
    """Whether the returned texts hold both linking sentences (whitespace aside)."""
    joined = "\n".join(" ".join(t.split()) for t in texts)
    return bridge.s1 in joined and bridge.s2 in joined
