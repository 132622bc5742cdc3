"""Evidence chains: the sentences that link two names, found in one call from the question's own words.

"How is A connected to B?" names A and B as the documents write them. Each name is looked up in every sentence
of the store (case, accents and dashes folded; then the concept graph's aliases and meanings; then the longest
part of the name that the text holds), so a name the graph never kept is still found. A sentence naming both is
a direct link. Otherwise the bridges are the third names and terms C written in a sentence with A and in another
with B: the capitalised runs of those sentences and the graph's concepts mentioned there. Names come before
plain terms and rarer ones first (a name in few sentences says more than one in many), and each bridge gives the
chain A–C then C–B, up to two sentences a side, those that write the name as given (not inside a longer name)
and the shorter first. When no bridge of two hops exists, the concept graph's longer paths
give their evidence sentences.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST
from granrag_mcp.retrieval.view import View
from granrag_mcp.text.concepts import name_runs
from granrag_mcp.text.words import NAME_JOINS, STOP, folded, words

SENTENCES = "evidence sentences"  # the name of a generation's SentenceIndex among what its views reuse
MAX_MENTIONS = 2000  # sentences of one name read for bridges; a name in more is a hub, not a link
DIRECT = 3  # sentences naming both names, at most
PER_SIDE = 2  # sentences per side of one bridge: a frequent name's mentions of the link are not all the same
LONG_PATH_HOPS = 3
QUESTION_FORMS = (
    re.compile(
        r"^\s*(?:how|in what way|why)\s+(?:is|are|was|were|does|do|did)\s+(?P<a>.+?)\s+(?:be\s+)?"
        r"(?:connected|related|linked|tied|relate|connect|link)\s+(?:to|with)\s+(?P<b>.+?)\s*[?.!]*\s*$",
        re.I,
    ),
    re.compile(
        r"(?:connection|relation|relationship|link|links|path)\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*[?.!]*\s*$",
        re.I,
    ),
    re.compile(r"^\s*what\s+(?:connects|links|relates)\s+(?P<a>.+?)\s+(?:to|with|and)\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
)


class UnknownNameError(InvalidInputError):
    """A name no sentence of the store holds, in any spelling or part."""


class SentenceIndex:
    """Every sentence of a generation once (overlapping chunks repeat a sentence), folded and joined, so that a
    name is found in all of them by one regular-expression scan."""

    def __init__(self, view: View) -> None:
        seen: set[tuple[str, int, int]] = set()
        ids: list[int] = []
        texts: list[str] = []
        for chunk in view.catalog.chunks_of_level(FINEST):
            if (chunk.doc_id, chunk.start, chunk.end) not in seen:
                seen.add((chunk.doc_id, chunk.start, chunk.end))
                ids.append(chunk.id)
                texts.append(chunk.text)
        self.ids = np.asarray(ids, np.int64)
        self.texts = texts
        parts = [folded(t).replace("\n", " ") for t in texts]
        self.starts = np.cumsum([0] + [len(p) + 1 for p in parts[:-1]]).astype(np.int64)
        self.joined = "\n".join(parts)
        self.row_of = {int(i): n for n, i in enumerate(ids)}

    def rows(self, name: str) -> np.ndarray:
        """Rows of the sentences that write `name` as whole words (folded), in reading order."""
        key = folded(name).strip()
        if not key:
            return np.zeros(0, np.int64)
        pattern = re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in key.split()) + r"(?!\w)")
        positions = [m.start() for m in pattern.finditer(self.joined)]
        return np.unique(np.searchsorted(self.starts, np.asarray(positions, np.int64), side="right") - 1)


@dataclass(frozen=True)
class Named:
    written: str  # as the agent wrote it
    found: str  # as looked up in the text
    how: str  # "exact", "alias", "meaning" or "partial"
    rows: np.ndarray


@dataclass(frozen=True)
class Link:
    via: str | None  # the bridging name or term; None for a sentence naming both
    sentences: list[int]  # sentence chunk ids, in chain order


@dataclass(frozen=True)
class Chain:
    a: Named
    b: Named
    links: list[Link]


def names_of_question(question: str, view: View) -> tuple[str, str]:
    """The two names a question asks about: "How is A connected to B?" and its usual variants, else the first
    two capitalised runs past its first word, else the concepts of the graph it names."""
    for form in QUESTION_FORMS:
        match = form.search(question)
        if match:
            return _trim(match["a"]), _trim(match["b"])
    runs = [r for r in name_runs(question, first_word=False) if folded(r) not in STOP]
    if len(runs) < 2:
        runs += _graph_names(view, question)
    runs = list(dict.fromkeys(runs))
    if len(runs) < 2:
        raise InvalidInputError(
            f"could not tell two names in {question!r}: ask 'How is A connected to B?' or pass a and b"
        )
    return runs[0], runs[1]


def _trim(name: str) -> str:
    return name.strip().strip("\"'“”‘’").strip()


def _graph_names(view: View, question: str) -> list[str]:
    from granrag_mcp.retrieval import graph as techniques

    if view.snapshot.graph is None or len(view.snapshot.graph) == 0:
        return []
    graph, queries = techniques.graph_of(view)
    return [str(graph.names[c]) for c in queries.matcher.find(question)]


def _resolve(view: View, index: SentenceIndex, name: str) -> Named:
    """The sentences of a name: its exact words, the graph's alias or meaning, or its longest part found."""
    rows = index.rows(name)
    if len(rows):
        return Named(name, name, "exact", rows)
    graph = view.snapshot.graph
    if graph is not None and len(graph):
        from granrag_mcp.retrieval import graph as techniques

        _, queries = techniques.graph_of(view)
        try:
            resolved = queries.names.resolve(
                name, view.query_vector, lambda vector, k: techniques.nearest(queries.names_index, vector, k)
            )
        except InvalidInputError:
            resolved = None
        if resolved is not None:
            found = str(graph.names[resolved.concept])
            mentioned = [index.row_of[int(i)] for i in graph.mentions(resolved.concept) if int(i) in index.row_of]
            rows = np.union1d(index.rows(found), np.asarray(mentioned, np.int64))
            if len(rows):
                return Named(name, found, resolved.how, rows)
    parts = [w for w in words(name) if folded(w) not in STOP]
    for size in range(len(parts) - 1, 0, -1):  # the longest part of the name, the later words first (a surname)
        for start in range(len(parts) - size, -1, -1):
            part = " ".join(parts[start : start + size])
            if len(part) < 3:
                continue
            rows = index.rows(part)
            if len(rows):
                return Named(name, part, "partial", rows)
    raise UnknownNameError(
        f"no sentence names {name!r}, in any spelling or part: pass a name as the documents write it "
        "(find_concepts lists the graph's names) or search with search_narrow"
    )


def _terms(view: View, index: SentenceIndex, rows: Iterable[int]) -> dict[str, list[int]]:
    """Folded bridge terms -> the rows (among `rows`) that hold them: capitalised runs, each of their words of a
    name of several, and the graph's concepts mentioned in the sentence."""
    graph = view.snapshot.graph
    has_graph = graph is not None and len(graph) > 0
    out: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        keys: set[str] = set()
        for run in name_runs(index.texts[row]):
            keys.add(folded(run))
        if has_graph:
            assert graph is not None
            at = np.searchsorted(graph.sentence_ids, index.ids[row])
            if at < len(graph.sentence_ids) and graph.sentence_ids[at] == index.ids[row]:
                for concept in graph.sentence_concepts[graph.sentence_ptr[at] : graph.sentence_ptr[at + 1]]:
                    keys.add(folded(str(graph.names[int(concept)])))
        for key in keys:
            out[key].append(int(row))
    return out


def _own_words(*names: Named) -> set[str]:
    return {w for n in names for w in folded(f"{n.written} {n.found}").split()} - NAME_JOINS


def evidence_chain(view: View, a: str, b: str, k: int) -> Chain:
    """Up to `k` links between names `a` and `b`: sentences naming both, then bridges A–C–B, best first."""
    if not a.strip() or not b.strip():
        raise InvalidInputError("a name is empty: pass two names as the documents write them")
    index: SentenceIndex = view.per_generation.get(view.snapshot, SENTENCES, lambda: SentenceIndex(view))
    first, second = _resolve(view, index, a), _resolve(view, index, b)
    if folded(first.found) == folded(second.found):
        raise InvalidInputError(f"{a!r} and {b!r} name the same thing: pass two different names")
    links: list[Link] = []
    both = np.intersect1d(first.rows, second.rows)
    if len(both):
        shortest = sorted(both.tolist(), key=lambda r: len(index.texts[r]))[:DIRECT]
        links.append(Link(None, [int(index.ids[r]) for r in shortest]))
    side_a = _terms(view, index, first.rows[:MAX_MENTIONS].tolist())
    side_b = _terms(view, index, second.rows[:MAX_MENTIONS].tolist())
    own = _own_words(first, second)
    rows_a, rows_b = set(first.rows.tolist()), set(second.rows.tolist())
    # Names before plain terms, then the fewest sentences on the two sides (a rare link is a specific one); a
    # term sharing a word with A or B ("River" for "Maribyrnong River") is most often part of the same name: last.
    names = {folded(r) for row in rows_a | rows_b for r in name_runs(index.texts[row])}
    scored = []
    for term in side_a.keys() & side_b.keys():
        if term in (folded(first.found), folded(second.found)):
            continue
        left, right = side_a[term], side_b[term]
        if len(set(left) | set(right)) >= 2:  # two different sentences make a chain
            scored.append((bool(set(term.split()) & own), term not in names, len(left) + len(right), term))
    scored.sort()
    rank_a, rank_b = _mention_rank(index, first), _mention_rank(index, second)
    for _, _, _, term in scored:
        if len(links) >= k:
            break
        pick_a = sorted(side_a[term], key=rank_a)[:PER_SIDE]
        pick_b = [r for r in sorted(side_b[term], key=rank_b) if r not in pick_a][:PER_SIDE]
        if not pick_b:
            continue
        links.append(Link(_written(index, pick_a[0], term), [int(index.ids[r]) for r in pick_a + pick_b]))
    if not links:
        links = _long_paths(view, first, second, k)
    return Chain(first, second, links[:k])


def _mention_rank(index: SentenceIndex, named: Named) -> Callable[[int], tuple[int, int]]:
    """Sentences that write the name as given (its case, not inside a longer capitalised name) first, then the
    shorter: "Genghis" alone is another mention than "Genghis Khan"."""
    words_of = named.found.split()
    pattern = re.compile(r"(?<![\w])" + r"\s+".join(re.escape(w) for w in words_of) + r"(?![\w'’-])")
    runs = {named.found}

    def rank(row: int) -> tuple[int, int]:
        text = index.texts[row]
        if not pattern.search(text):
            return (2, len(text))
        return (0 if runs & set(name_runs(text)) else 1, len(text))

    return rank


def _written(index: SentenceIndex, row: int, term: str) -> str:
    """A folded term as the sentence writes it."""
    text = folded(index.texts[row])
    at = text.find(term)
    return index.texts[row][at : at + len(term)] if at >= 0 and len(text) == len(index.texts[row]) else term


def _long_paths(view: View, first: Named, second: Named, k: int) -> list[Link]:
    """The concept graph's paths of up to LONG_PATH_HOPS hops, each as the chain of its hops' evidence."""
    graph = view.snapshot.graph
    if graph is None or len(graph) == 0:
        return []
    from granrag_mcp.retrieval import graph as techniques

    try:
        paths = techniques.strongest_paths(view, first.found, second.found, LONG_PATH_HOPS, k, 1)
    except InvalidInputError:
        return []
    return [
        Link(" / ".join(str(graph.names[c]) for c in p.concepts[1:-1]), [i for hop in p.hops for i in hop.evidence])
        for p in paths
        if len(p.concepts) > 2
    ]
