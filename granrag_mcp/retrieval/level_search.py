"""Search one level: dense, or dense and BM25 fused by reciprocal rank fusion; copies of one span removed."""

from __future__ import annotations

from collections.abc import Mapping

from granrag_mcp.levels import Level, list_name
from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from granrag_mcp.retrieval.spans import dedupe_by_span
from granrag_mcp.retrieval.view import ScoredChunk, View


def level_fusion(level: Level) -> str:
    """The name of one level's dense + BM25 fusion in a store's adaptation."""
    return f"level_{level}"


def level_weights(view: View, level: Level, lexical: bool | None) -> dict[str, float] | None:
    """The weights of the level's dense and BM25 lists, None for dense alone. `lexical` None: what the store
    adapted to (dense alone where it has no adaptation); True: fused, with the adapted weights where there are."""
    adapted = view.adaptation.weights(level_fusion(level)) if view.adaptation is not None else None
    if lexical is False or (lexical is None and adapted is None):
        return None
    return adapted or {list_name(level, "dense"): 1.0, list_name(level, "lexical"): 1.0}


def search_level(
    view: View,
    query: str,
    level: Level,
    k: int,
    lexical: bool | None = False,
    rrf_k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredChunk]:
    """Dense hits, or dense and BM25 fused (`level_weights`; `weights` given: those)."""
    vector = view.query_vector(query)
    depth = max(2 * k, k + 10)  # room for the copies that dedupe_by_span removes
    weights = weights if weights is not None else level_weights(view, level, lexical)
    dense = view.dense(level, vector, depth)
    if weights is None:
        return dedupe_by_span(view.scored_chunks(dense))[:k]
    lists = {list_name(level, "dense"): dense, list_name(level, "lexical"): view.lexical(level, query, depth)}
    fused = reciprocal_rank_fusion(lists, weights=weights, k=rrf_k)
    chunks = view.catalog.chunks([item.key for item in fused])
    hits = [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in fused]
    return dedupe_by_span(hits)[:k]
