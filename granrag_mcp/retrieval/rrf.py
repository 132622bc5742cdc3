"""Weighted reciprocal rank fusion across levels: the dense and BM25 lists of the top and finest levels, each hit
mapped to the level asked for, fused by w / (k + rank)."""

from __future__ import annotations

from collections.abc import Mapping

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST, LEVEL_SPECS, TOP, Level, list_name
from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from granrag_mcp.retrieval.spans import dedupe_by_span
from granrag_mcp.retrieval.view import Scored, ScoredChunk, View, check_query

FUSED_LEVELS: tuple[Level, ...] = (TOP, FINEST)
RRF_LISTS: tuple[str, ...] = tuple(
    list_name(spec.name, index) for spec in LEVEL_SPECS if spec.name in FUSED_LEVELS for index in spec.indices
)
"""The ranked lists fused, and the names of their weights."""


def check_weights(weights: Mapping[str, float] | None, names: tuple[str, ...]) -> dict[str, float]:
    weights = dict(weights or {})
    unknown = sorted(set(weights) - set(names))
    if unknown:
        raise InvalidInputError(f"unknown weight name(s) {unknown}; use {', '.join(names)}")
    if all(weights.get(name, 1.0) == 0 for name in names):
        raise InvalidInputError(
            "every list has weight 0, so the fused order would mean nothing: give at least one list a weight above 0"
        )
    return weights


def search_rrf(
    view: View,
    query: str,
    k: int,
    level: Level = "mid",
    weights: Mapping[str, float] | None = None,
    rrf_k: int = DEFAULT_RRF_K,
    lexical: bool = True,
    depth: int | None = None,
) -> list[ScoredChunk]:
    query = check_query(query)
    weights = check_weights(weights, RRF_LISTS)
    vector = view.query_vector(query)
    depth = depth or max(3 * k, 30)
    raw: dict[Level, dict[str, Scored]] = {}
    for source in FUSED_LEVELS:
        raw[source] = {list_name(source, "dense"): view.dense(source, vector, depth)}
        if lexical:
            raw[source][list_name(source, "lexical")] = view.lexical(source, query, depth)
    lists = view.map_lists(raw[FINEST], FINEST, level, vector)
    # A top-level hit stands for the descendant the sentences point to most strongly (else the closest vector).
    evidence: dict[int, int] = {}
    for mapped in lists.values():
        for position, (chunk_id, _) in enumerate(mapped):
            evidence[chunk_id] = min(evidence.get(chunk_id, position), position)
    lists.update(view.map_lists(raw[TOP], TOP, level, vector, evidence))
    fused = reciprocal_rank_fusion(lists, weights={n: w for n, w in weights.items() if n in lists}, k=rrf_k)
    chunks = view.catalog.chunks([item.key for item in fused])
    hits = [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in fused]
    return dedupe_by_span(hits)[:k]
