"""Search one level: dense, or dense and BM25 fused by reciprocal rank fusion; copies of one span removed."""

from __future__ import annotations

from granrag_mcp.levels import Level, list_name
from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from granrag_mcp.retrieval.spans import dedupe_by_span
from granrag_mcp.retrieval.view import ScoredChunk, View


def search_level(
    view: View, query: str, level: Level, k: int, lexical: bool = False, rrf_k: int = DEFAULT_RRF_K
) -> list[ScoredChunk]:
    vector = view.query_vector(query)
    depth = max(2 * k, k + 10)  # room for the copies that dedupe_by_span removes
    dense = view.dense(level, vector, depth)
    if not lexical:
        return dedupe_by_span(view.scored_chunks(dense))[:k]
    lists = {list_name(level, "dense"): dense, list_name(level, "lexical"): view.lexical(level, query, depth)}
    fused = reciprocal_rank_fusion(lists, k=rrf_k)
    chunks = view.catalog.chunks([item.key for item in fused])
    hits = [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in fused]
    return dedupe_by_span(hits)[:k]
