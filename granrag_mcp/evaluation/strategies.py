"""The retrieval strategies compared by the evaluation, all run through the retrieval functions the MCP tools use.

Every strategy turns one question into two ranked, duplicate-free lists of chunk ids: one at the broad level
and one at the mid level. What each list is:

=========  ===================================================  ================================================
strategy   broad list                                           mid list
=========  ===================================================  ================================================
Base       ``search_level(level="broad")``: broad dense index    ``search_level(level="mid")``: mid dense index
           (span copies from the broad overlap dropped)
BM25       the broad BM25 index alone                            the mid BM25 index alone
Level      ``search_level(lexical=None)``: the broad level's     the same at the mid level (``search_narrow``
           dense and BM25 lists with the store's adapted          level mid)
           weights (``search_broad``'s default)
C2P        narrow, mid and broad dense hits, each mapped to      narrow and mid dense hits mapped to their mid
           its broad ancestor, merged by max score               chunk, broad hits to their best-matching mid
                                                                 descendant, merged by max score
S2P        narrow (sentence) dense hits mapped to their broad    the same sentences mapped to their mid parents
           ancestors, in order of first occurrence
Union      ``search_union(k=10)`` (broad + sentences): a         the same list: a sentence counts as its mid
           broad hit counts as itself, a sentence as its broad   parent, a broad hit as its best-matching mid
           ancestor                                              descendant
RRF        ``search_rrf(k=10, level="broad")`` (dense +          ``search_rrf(k=10, level="mid")``
           BM25 of the broad and narrow levels)
HRR        ``hrr_search`` (broad parents of the fused,          ``hrr_candidates``: the reranked mid candidates
           reranked mid candidates)                              fused with their sentence and BM25 evidence
=========  ===================================================  ================================================

Lists are fetched deep enough for @10 at both levels (dense lists are doubled until they reach ten distinct
ancestors). Union and RRF are asked for exactly 10 hits, as a caller would: their depth depends on k, so a
deeper call would change the head of their lists rather than extend them.

Efficiency: the question is embedded once. `CachedEmbedder` sits between the View and the model, so the
retrieval functions (which embed their query) find the vector already computed, and the embedding
reranker's passage windows are embedded once for the whole run instead of once per question.
`MemoReranker` remembers the scores of one question, so the HRR mid list and `hrr_search` share one
rerank.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, ProgressCallback, TokenReducer
from granrag_mcp.embedding.queries import embed_queries
from granrag_mcp.evaluation.metrics import Span
from granrag_mcp.levels import FINEST, LEVELS, Level
from granrag_mcp.rerankers import EmbeddingReranker, Reranker
from granrag_mcp.retrieval.hrr import hrr_candidates, hrr_search
from granrag_mcp.retrieval.level_search import search_level
from granrag_mcp.retrieval.rrf import search_rrf
from granrag_mcp.retrieval.union import search_union
from granrag_mcp.retrieval.view import View, check_query

STRATEGIES: tuple[str, ...] = ("Base", "BM25", "Level", "C2P", "S2P", "Union", "RRF", "HRR")
EVAL_LEVELS: tuple[Level, ...] = LEVELS[:2]
"""The levels scored, as in the Hierarchical Re-ranker Retriever: passages and the chunks inside them."""
BROAD, MID = EVAL_LEVELS
NEEDED = 10  # the deepest cut-off reported (@10)
DENSE_FETCH = 100  # first over-fetch of a dense list; doubled while too few distinct parents come out
UNION_K = NEEDED  # hits asked from search_union (see `union` for why no more)
RRF_K = NEEDED  # hits asked from search_rrf, as an MCP caller asking for 10 (its lists as deep as the store adapted)
HRR_K = 50  # broad parents asked from hrr_search: all of them (at most rerank_n)

STRATEGY_NOTES = {
    "Base": "the broad dense index alone (`search_level`, level broad); mid column: the mid dense index.",
    "BM25": "the BM25 index of the level alone.",
    "Level": "`search_level` with the store's adapted dense and BM25 weights (the default of search_broad, and of "
    "search_narrow at level mid).",
    "C2P": "narrow, mid and broad dense hits mapped to their broad ancestor and merged by max score; mid column: "
    "narrow and mid hits mapped to mid, the top broad hits to their best-matching mid descendant, max score.",
    "S2P": "sentence (narrow) dense hits mapped to their broad (mid) ancestors, in order of first occurrence.",
    "Union": "`search_union(k=10)` (broad + sentences, what a caller asking for 10 hits gets): a sentence counts as "
    "its broad ancestor; mid column: a sentence counts as its mid parent, a broad hit as its best-matching mid "
    "descendant. Not over-fetched: a deeper call changes the head of the list.",
    "RRF": "`search_rrf(k=10)` (dense + BM25 over the broad and narrow levels, the store's adapted depths and "
    "constant), level broad / level mid.",
    "HRR": "`hrr_search` at its defaults (sentences and mid chunks fused, the mid candidates reranked, mapped to "
    "broad parents); mid column: the reranked mid candidates (`hrr_candidates`).",
}
"""What each strategy runs, for the report."""


class CachedEmbedder:
    """An Embedder that remembers every vector by text: each text reaches the model once per run."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self._vectors: dict[str, np.ndarray] = {}
        self._windows: dict[tuple[str, int | None], list[tuple[int, int]]] = {}
        self._tokens: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self.model_texts = 0  # texts actually embedded by the model

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        texts = list(texts)
        group_of = dict(zip(texts, groups)) if groups is not None else {}
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            missing_groups = [group_of[t] for t in missing] if groups is not None else None
            vectors = self.inner.embed(missing, progress=progress, groups=missing_groups)
            self.model_texts += len(missing)
            for text, vector in zip(missing, vectors):
                self._vectors[text] = vector
        elif progress is not None:
            progress(len(texts), len(texts))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def embed_queries(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """The inner embedder's query vectors, remembered apart from passage vectors of the same text."""
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._queries))
        if missing:
            self.model_texts += len(missing)
            self._queries.update(zip(missing, embed_queries(self.inner, missing, progress=progress)))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._queries[t] for t in texts])

    def embed_tokens(
        self,
        texts: Sequence[str],
        reduce: TokenReducer,
        progress: ProgressCallback | None = None,
        groups: Sequence[Hashable] | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """The inner embedder's, with each text's vector remembered (and its token vectors too, when `reduce`
        keeps them whole: then `query_tokens` of those texts needs no model run)."""
        texts = list(texts)
        vectors, tokens = self.inner.embed_tokens(  # type: ignore[attr-defined]
            texts, reduce, progress=progress, groups=groups
        )
        self.model_texts += len(texts)
        for text, vector, kept in zip(texts, vectors, tokens):
            self._vectors[text] = vector
            if kept.ndim == 2 and kept.shape[1] == self.dimension and kept.dtype == np.float32:
                self._tokens[text] = kept
        return vectors, tokens

    def query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        if text not in self._tokens:
            self._vectors[text], self._tokens[text] = self.inner.query_tokens(text)  # type: ignore[attr-defined]
            self.model_texts += 1
        return self._vectors[text], self._tokens[text]

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        key = (text, max_tokens)
        spans = self._windows.get(key)
        if spans is None:
            spans = self._windows[key] = self.inner.windows(text, max_tokens=max_tokens)
        return list(spans)


class MemoReranker:
    """A Reranker that remembers (query, passage) scores until `forget()`; new pairs are scored in one call."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.reads_sentence_vectors = inner.reads_sentence_vectors
        if inner.reads_sentence_vectors:  # scored from stored vectors: nothing to remember
            self.score_sentences = inner.score_sentences  # type: ignore[attr-defined]
        self._scores: dict[tuple[str, str], float] = {}
        self.pairs_scored = 0

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        missing = list(dict.fromkeys(p for p in passages if (query, p) not in self._scores))
        if missing:
            for passage, value in zip(missing, self.inner.score(query, missing)):
                self._scores[(query, passage)] = float(value)
            self.pairs_scored += len(missing)
        return [self._scores[(query, p)] for p in passages]

    def forget(self) -> None:
        self._scores.clear()


def uses_embedding_fallback(reranker: Reranker | None) -> bool:
    inner = reranker.inner if isinstance(reranker, MemoReranker) else reranker
    return isinstance(inner, EmbeddingReranker)


def prime_reranker(reranker: Reranker | None, passages: Sequence[str]) -> bool:
    """Embed every passage window of the embedding reranker in one batched pass; False if it does not apply.

    The windows land in the `CachedEmbedder` the reranker was built on, so later scoring finds them there.
    """
    if not uses_embedding_fallback(reranker) or not passages:
        return False
    inner = reranker.inner if isinstance(reranker, MemoReranker) else reranker
    inner.score("warm-up", list(passages))  # type: ignore[union-attr]
    return True


@dataclass
class Hierarchy:
    """Spans and ancestors of every chunk of one snapshot, read once through the View."""

    spans: dict[int, Span]  # broad and mid chunk id -> (doc_id, start, end)
    up: dict[Level, dict[int, int]]  # target level -> {chunk id -> its ancestor at that level, or itself}
    public: dict[int, str]  # broad and mid chunk id -> public id

    @classmethod
    def load(cls, view: View) -> Hierarchy:
        catalog = view.snapshot.catalog
        by_level = {level: {c.id: c for c in catalog.chunks_of_level(level)} for level in LEVELS}
        spans: dict[int, Span] = {}
        public: dict[int, str] = {}
        for level in EVAL_LEVELS:
            for chunk in by_level[level].values():
                spans[chunk.id] = (chunk.doc_id, chunk.start, chunk.end)
                public[chunk.id] = chunk.public_id
        up: dict[Level, dict[int, int]] = {BROAD: {}, MID: {}}
        if by_level[FINEST]:
            up[MID].update(view.ancestors(by_level[FINEST], MID))
            up[BROAD].update(view.ancestors(by_level[FINEST], BROAD))
        if by_level[MID]:
            up[BROAD].update(view.ancestors(by_level[MID], BROAD))
        for level in EVAL_LEVELS:
            up[level].update({chunk_id: chunk_id for chunk_id in by_level[level]})
        return cls(spans, up, public)

    def climb(self, chunk_ids: Iterable[int], level: Level) -> list[int]:
        """Ancestors at `level` (a chunk of that level is its own), first occurrence order, duplicates dropped."""
        table = self.up[level]
        return list(dict.fromkeys(table[i] for i in chunk_ids if i in table))


Ranking = dict[Level, list[int]]  # level -> ranked chunk ids of that level


@dataclass
class StrategyContext:
    view: View
    hierarchy: Hierarchy
    question: str  # as the View sees it (check_query applied)
    vector: np.ndarray


def _max_merge(scored: Iterable[tuple[int, float]]) -> list[int]:
    best: dict[int, float] = {}
    for chunk_id, score in scored:
        if chunk_id not in best or score > best[chunk_id]:
            best[chunk_id] = score
    return sorted(best, key=lambda i: -best[i])  # stable: ties keep first-seen order


def _deep_dense(ctx: StrategyContext, level: Level, target: Level) -> list[tuple[int, float]]:
    """Dense hits of `level`, fetched deep enough that they reach NEEDED distinct ancestors at `target`."""
    view, size = ctx.view, len(ctx.view.snapshot.vectors[level])
    depth = DENSE_FETCH
    while True:
        scored = view.dense(level, ctx.vector, depth)
        if depth >= size or len(ctx.hierarchy.climb((i for i, _ in scored), target)) >= NEEDED:
            return scored
        depth *= 2


def base(ctx: StrategyContext) -> Ranking:
    return {
        level: [h.chunk.id for h in search_level(ctx.view, ctx.question, level, NEEDED, lexical=False)]
        for level in EVAL_LEVELS
    }


def bm25(ctx: StrategyContext) -> Ranking:
    """BM25 alone at each level: the bar every default search must clear."""
    return {level: [i for i, _ in ctx.view.lexical(level, ctx.question, NEEDED)] for level in EVAL_LEVELS}


def level(ctx: StrategyContext) -> Ranking:
    """What search_broad and search_narrow (level mid) return by default: dense and BM25 with the adapted weights."""
    return {
        lv: [h.chunk.id for h in search_level(ctx.view, ctx.question, lv, NEEDED, lexical=None)] for lv in EVAL_LEVELS
    }


def c2p(ctx: StrategyContext) -> Ranking:
    h = ctx.hierarchy
    narrow = _deep_dense(ctx, FINEST, MID)
    mid = ctx.view.dense(MID, ctx.vector, DENSE_FETCH)
    broad = ctx.view.dense(BROAD, ctx.vector, DENSE_FETCH)
    to_broad = [(h.up[BROAD][i], s) for i, s in narrow + mid if i in h.up[BROAD]] + broad
    to_mid = [(h.up[MID][i], s) for i, s in narrow if i in h.up[MID]] + mid
    down = ctx.view.best_descendants([i for i, _ in broad[: 2 * NEEDED]], MID, ctx.vector, source_level=BROAD)
    to_mid += [(down[i], s) for i, s in broad[: 2 * NEEDED]]
    return {BROAD: _max_merge(to_broad), MID: _max_merge(to_mid)}


def s2p(ctx: StrategyContext) -> Ranking:
    narrow = [i for i, _ in _deep_dense(ctx, FINEST, BROAD)]
    return {level: ctx.hierarchy.climb(narrow, level) for level in EVAL_LEVELS}


def union(ctx: StrategyContext) -> Ranking:
    """`search_union` asked for NEEDED hits, exactly what a caller asking for 10 gets, then mapped per level.

    No deeper over-fetch: search_union is not prefix-stable. A deeper call fetches more broad hits, and each
    broad hit that arrives replaces the better-ranked sentences inside it and goes to the end of the list,
    which changes the head of the list (measured on 300 questions: broad MRR@10 0.805 at k=10, 0.744 at k=40).
    """
    h = ctx.hierarchy
    hits = search_union(ctx.view, ctx.question, UNION_K)
    broad = h.climb((hit.chunk.id for hit in hits), BROAD)
    down = ctx.view.best_descendants(
        [hit.chunk.id for hit in hits if hit.chunk.level == BROAD], MID, ctx.vector, source_level=BROAD
    )
    mid = list(
        dict.fromkeys(down[hit.chunk.id] if hit.chunk.level == BROAD else h.up[MID][hit.chunk.id] for hit in hits)
    )
    return {BROAD: broad, MID: mid}


def rrf(ctx: StrategyContext) -> Ranking:
    return {
        level: [hit.chunk.id for hit in search_rrf(ctx.view, ctx.question, RRF_K, level=level)] for level in EVAL_LEVELS
    }


def hrr(ctx: StrategyContext) -> Ranking:
    """The broad list is `retrieval.hrr.hrr_search`; the mid list is its mid stage, `retrieval.hrr.hrr_candidates`.

    The reranker is a `MemoReranker`, so the mid candidates are scored once for both lists.
    """
    view = ctx.view
    result = hrr_search(view, ctx.question, k=HRR_K)
    _, mids = hrr_candidates(view, ctx.question)
    return {BROAD: [hit.chunk.id for hit in result.hits], MID: [hit.chunk.id for hit in mids]}


RUNNERS: dict[str, Callable[[StrategyContext], Ranking]] = {
    "Base": base,
    "BM25": bm25,
    "Level": level,
    "C2P": c2p,
    "S2P": s2p,
    "Union": union,
    "RRF": rrf,
    "HRR": hrr,
}


class StrategyRunner:
    """Runs the chosen strategies on one question after another and keeps their wall time."""

    def __init__(self, view: View, strategies: Sequence[str]) -> None:
        unknown = [s for s in strategies if s not in RUNNERS]
        if unknown:
            raise ValueError(f"unknown strategies {unknown}; choose from {', '.join(STRATEGIES)}")
        self.view = view
        self.strategies = list(strategies)
        self.hierarchy = Hierarchy.load(view)
        self.seconds: dict[str, float] = {s: 0.0 for s in self.strategies}
        self.hrr_mismatches = 0  # questions whose mid list, mapped to parents, disagrees with hrr_search

    def run(self, question: str, vector: np.ndarray) -> dict[str, Ranking]:
        ctx = StrategyContext(self.view, self.hierarchy, check_query(question), vector)
        out: dict[str, Ranking] = {}
        for name in self.strategies:
            began = time.perf_counter()
            out[name] = RUNNERS[name](ctx)
            self.seconds[name] += time.perf_counter() - began
        if "HRR" in out:
            parents = self.hierarchy.climb(out["HRR"][MID], BROAD)
            if parents[: len(out["HRR"][BROAD])] != out["HRR"][BROAD]:
                self.hrr_mismatches += 1
        if isinstance(self.view.reranker, MemoReranker):
            self.view.reranker.forget()
        return out

    def spans(self, chunk_ids: Sequence[int]) -> list[Span]:
        return [self.hierarchy.spans[i] for i in chunk_ids]

    def public_ids(self, chunk_ids: Sequence[int], n: int = NEEDED) -> list[str]:
        return [self.hierarchy.public[i] for i in chunk_ids[:n]]


def parse_strategies(value: str) -> list[str]:
    """A comma-separated, case-insensitive list of strategy names, in the canonical order."""
    wanted = {part.strip().lower() for part in value.split(",") if part.strip()}
    known = {s.lower(): s for s in STRATEGIES}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValueError(f"unknown strategies {', '.join(unknown)}; choose from {', '.join(STRATEGIES)}")
    return [s for s in STRATEGIES if s.lower() in wanted]
