"""Search one level: dense, or dense and BM25 fused by reciprocal rank fusion; copies of one span removed."""

from __future__ import annotations

from collections.abc import Mapping

from granrag_mcp.levels import Level, list_name
from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K, FusionUsed, list_depth, reciprocal_rank_fusion
from granrag_mcp.retrieval.spans import dedupe_by_span
from granrag_mcp.retrieval.view import ScoredChunk, View

LEVEL_DEPTH = 20
"""Each list's depth for ten hits where the store has not adapted it."""


def level_fusion(level: Level) -> str:
    """The name of one level's dense + BM25 fusion in a store's adaptation."""
    return f"level_{level}"


def level_weights(view: View, level: Level, lexical: bool | None) -> dict[str, float] | None:
    """The weights of the level's dense and BM25 lists, None for dense alone. `lexical` None: what the store
    adapted to (dense alone where it has no adaptation); True: fused, with the adapted weights where there are."""
    adapted = view.adapted_weights(level_fusion(level))
    if lexical is False or (lexical is None and adapted is None):
        return None
    return adapted or {list_name(level, "dense"): 1.0, list_name(level, "lexical"): 1.0}


def level_used(
    view: View, level: Level, k: int, lexical: bool | None, weights: Mapping[str, float] | None = None
) -> FusionUsed | None:
    """The weights, depths and RRF constant a search of one level for `k` hits fuses with (None: dense alone).
    Each list reads its adapted depth for ten hits (else LEVEL_DEPTH), in proportion, and at least `k` + 10, the
    room for the copies that dedupe_by_span removes."""
    weights = dict(weights) if weights is not None else level_weights(view, level, lexical)
    if weights is None:
        return None
    fusion = level_fusion(level)
    adapted = view.adaptation.list_depths(fusion) if view.adaptation is not None else {}
    names = (list_name(level, "dense"), list_name(level, "lexical"))
    depths = {name: max(k + 10, list_depth(adapted.get(name, LEVEL_DEPTH), k)) for name in names}
    rrf_k = view.adaptation.rrf_k(fusion) if view.adaptation is not None else None
    return FusionUsed(weights, depths, rrf_k or DEFAULT_RRF_K)


def search_level(
    view: View,
    query: str,
    level: Level,
    k: int,
    lexical: bool | None = False,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredChunk]:
    """Dense hits, or dense and BM25 fused (`level_used`; `weights` given: those)."""
    vector = view.query_vector(query)
    used = level_used(view, level, k, lexical, weights)
    dense_name, lexical_name = list_name(level, "dense"), list_name(level, "lexical")
    if used is None:
        return dedupe_by_span(view.scored_chunks(view.dense(level, vector, max(2 * k, k + 10))), k)
    lists = {
        dense_name: view.dense(level, vector, used.depths[dense_name]),
        lexical_name: view.lexical(level, query, used.depths[lexical_name]),
    }
    fused = reciprocal_rank_fusion(lists, weights=dict(used.weights), k=used.rrf_k)
    return view.fused_hits(fused, k)
