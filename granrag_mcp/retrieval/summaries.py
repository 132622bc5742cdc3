"""Extractive summaries for global questions ("explain the whole chapter", "what are the main themes"): the
sentences of a section, a document or a concept-graph community that stand for the rest, within a token budget.

The technique: centrality over the stored sentence vectors (nothing is embedded again) with redundancy removed by
maximal marginal relevance. A sentence's centrality is its degree in the cosine-similarity graph of the span's
sentences, which for unit vectors is its cosine with the sum of them all (the centroid), so it costs one matrix
product however long the span; a community is centred on its stored centroid instead. In a section or a document
a sentence also gains by its place, the opening most (`span_prior`). The best sentence comes first, each next
one also unlike those already taken (MMR, as the NCERT system removes redundancy), while its tokens fit the
budget. A span's summary is returned in reading order, each sentence with its citation.

Summaries are made when asked for and kept per generation (in the views' shared `PerGeneration` store): one
document's summary reads its sentences' vectors and scores them in milliseconds, so the index run does no summary
work at all (measured in benchmarks/suite/bench_summaries.py).
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.graph import ConceptGraph

BALANCE = 0.7  # MMR: the weight of centrality against likeness to a sentence already taken
LEAD_WEIGHT = 0.5  # a span's sentences lean to its opening: documents state their gist first (see span_prior)
MIN_TOKENS = 6  # shorter sentences (headings, list stubs, captions) are left out wherever longer ones exist
COMMUNITY_CANDIDATES = 200  # a community's sentences considered: those naming most of its concepts
COMMUNITY_CONCEPTS = 10  # the community's members (by PageRank) whose sentences are candidates
CACHED = 512  # summaries kept per generation

Count = Callable[[str], int] | None
"""Tokens of a sentence's text as the caller budgets them (the tools: cl100k); None: the chunk's own count."""


@dataclass(frozen=True)
class Summary:
    """The chosen sentences (narrow chunks) of a span, in reading order, and what they were chosen from."""

    sentences: list[Chunk]
    candidates: int  # distinct sentences of the span
    tokens: int  # tokens of the chosen sentences, as counted


def span_prior(n: int, weight: float = LEAD_WEIGHT) -> np.ndarray:
    """What each of a span's `n` sentences (in reading order) adds to its centrality by its place: `weight` for
    the first, falling evenly towards 0 for the last. Abstracts, introductions and topic sentences hold what a
    span is asked about more often than its centre does (docs/summaries.md measures it)."""
    return weight * (1 - np.arange(n, dtype=np.float32) / max(n, 1))


def select(
    vectors: np.ndarray,
    tokens: np.ndarray,
    budget: int,
    centre: np.ndarray | None = None,
    balance: float = BALANCE,
    prior: np.ndarray | None = None,
) -> list[int]:
    """Rows of `vectors` (unit sentence vectors) chosen by centrality and MMR while their `tokens` fit `budget`,
    in the order chosen. `centre`: what centrality is measured against (default: the rows' own sum); `balance`
    1.0 ranks by centrality alone; `prior`: added to each row's centrality (a weight by position, say)."""
    n = len(vectors)
    if n == 0 or budget <= 0:
        return []
    if centre is None:
        centre = vectors.sum(axis=0)
    norm = float(np.linalg.norm(centre))
    relevance = vectors @ (centre / norm) if norm > 0 else np.zeros(n, np.float32)
    if prior is not None:
        relevance = relevance + prior
    open_ = tokens <= budget
    if (tokens[open_] >= MIN_TOKENS).any():
        open_ &= tokens >= MIN_TOKENS
    redundancy = np.full(n, -math.inf, np.float32)
    chosen: list[int] = []
    left = budget
    while open_.any():
        score = balance * relevance - (1 - balance) * np.maximum(redundancy, 0)
        score[~open_] = -math.inf
        best = int(np.argmax(score))
        chosen.append(best)
        left -= int(tokens[best])
        open_[best] = False
        open_ &= tokens <= left
        redundancy = np.maximum(redundancy, vectors @ vectors[best])
    return chosen


class _Cache:
    """The summaries made from one generation, the most recent `CACHED`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.made: OrderedDict[tuple[object, ...], Summary] = OrderedDict()

    def get(self, key: tuple[object, ...]) -> Summary | None:
        with self.lock:
            found = self.made.get(key)
            if found is not None:
                self.made.move_to_end(key)
            return found

    def put(self, key: tuple[object, ...], summary: Summary) -> None:
        with self.lock:
            self.made[key] = summary
            while len(self.made) > CACHED:
                self.made.popitem(last=False)


def _cache(view: View) -> _Cache:
    return view.per_generation.get(view.snapshot, "summaries", _Cache)


def _sentences_of(view: View, doc_id: str, start: int, end: int) -> list[int]:
    """The narrow chunk ids of a span of a document in reading order, each sentence once (overlapping broad chunks
    repeat them)."""
    seen: set[tuple[int, int]] = set()
    found = []
    for chunk_id, begin, stop in view.catalog.positions(doc_id, FINEST):
        if start <= begin < end and (begin, stop) not in seen:
            seen.add((begin, stop))
            found.append((begin, chunk_id))
    return [chunk_id for _, chunk_id in sorted(found)]


def _chosen(
    view: View, ids: list[int], budget: int, centre: np.ndarray | None, count: Count, in_order: bool
) -> Summary:
    """The summary of sentences `ids`; `in_order`: they are one span's in reading order (its opening leans)."""
    if not ids:
        return Summary([], 0, 0)
    chunks = view.catalog.chunks(ids)
    ids = [i for i in ids if i in chunks]
    vectors = view.snapshot.vectors[FINEST].reconstruct(np.array(ids, dtype=np.int64)).astype(np.float32)
    sizes = [chunks[i].token_count if count is None else count(chunks[i].text) for i in ids]
    tokens = np.maximum(np.array(sizes, dtype=np.int64), 1)
    rows = select(vectors, tokens, budget, centre, prior=span_prior(len(ids)) if in_order else None)
    picked = sorted(rows, key=lambda r: (chunks[ids[r]].doc_id, chunks[ids[r]].start))
    return Summary([chunks[ids[r]] for r in picked], len(ids), int(tokens[picked].sum()) if picked else 0)


def span_summary(view: View, doc_id: str, start: int, end: int, budget: int, count: Count = None) -> Summary:
    """The summary of characters [start, end) of a document (a section, or the whole text) within `budget`."""
    key = ("span", doc_id, start, end, budget, count is None)
    cache = _cache(view)
    found = cache.get(key)
    if found is None:
        found = _chosen(view, _sentences_of(view, doc_id, start, end), budget, None, count, in_order=True)
        cache.put(key, found)
    return found


def document_summary(view: View, doc_id: str, budget: int, count: Count = None) -> Summary:
    """The summary of a whole document within `budget` (unknown doc ids are an error)."""
    info = next((d for d in view.catalog.documents(doc_id, 1, 0) if d.doc_id == doc_id), None)
    if info is None:
        raise InvalidInputError(
            f"unknown doc_id {doc_id!r}: not in the index; list_documents shows the doc_ids it holds"
        )
    return span_summary(view, doc_id, 0, info.n_chars, budget, count)


def community_summary(
    view: View, graph: ConceptGraph, cluster: int, budget: int, count: Count = None, doc_id: str | None = None
) -> Summary:
    """The summary of a concept-graph community within `budget`: the sentences naming most of its central
    concepts (those of document `doc_id` only, when given), centred on the community's stored centroid."""
    key = ("community", id(graph), cluster, budget, count is None, doc_id)
    cache = _cache(view)
    found = cache.get(key)
    if found is None:
        covered: Counter[int] = Counter()
        for concept in graph.members(cluster)[:COMMUNITY_CONCEPTS]:
            covered.update(graph.mentions(int(concept)).tolist())
        if doc_id is not None:
            covered = Counter({s: n for s, n in covered.items() if _document_of(graph, s) == doc_id})
        ids = [s for s, _ in covered.most_common(COMMUNITY_CANDIDATES)]
        centre = graph.cluster_centroid[cluster] if cluster < len(graph.cluster_centroid) else None
        found = _chosen(view, ids, budget, centre, count, in_order=False)
        cache.put(key, found)
    return found


def _document_of(graph: ConceptGraph, sentence: int) -> str | None:
    at = int(np.searchsorted(graph.sentence_ids, sentence))
    if at < len(graph.sentence_ids) and graph.sentence_ids[at] == sentence:
        return str(graph.docs[graph.sentence_doc[at]])
    return None
