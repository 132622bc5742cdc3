"""Weighted reciprocal rank fusion across levels: the dense and BM25 lists of the top and finest levels, each hit
mapped to the level asked for, fused by w / (k + rank)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST, LEVEL_SPECS, TOP, Level, list_name
from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K, FusionRequest, FusionUsed, list_depth, reciprocal_rank_fusion
from granrag_mcp.retrieval.view import Scored, ScoredChunk, View, check_query

FUSED_LEVELS: tuple[Level, ...] = (TOP, FINEST)
RRF_LISTS: tuple[str, ...] = tuple(list_name(spec.name, index) for spec in LEVEL_SPECS for index in spec.indices)
"""The ranked lists fused, and the names of their weights: the top and finest levels' always, and a level
between them its own lists when its chunks are asked for."""
OWN_LEVEL_FACTORS = {"dense": 1.0, "lexical": 20.0}
"""The weights of the asked level's own lists against the others' 1.0: its BM25 list scores exactly the chunks
returned, and the other lists fill in below it and break its ties. Chosen on 400 SQuAD-A questions at level mid
(factors 3, 6, 10, 20: 20 was best, MRR@10 0.837 and HR@5 0.965 against BM25 alone's 0.837 and 0.955, and the four
lists alone 0.819 and 0.905), then checked on COVID-A (0.691 and 0.838 against BM25 alone's 0.691 and 0.820)."""
RRF_FACTORS: dict[str, float] = {
    list_name(spec.name, index): OWN_LEVEL_FACTORS[index]
    for spec in LEVEL_SPECS
    if spec.name not in FUSED_LEVELS
    for index in spec.indices
}
"""Each list's weight where the store has not adapted them (1.0 for the lists not named)."""
RRF_FUSION = "rrf"
"""The name of this fusion's weights, depths and constant in a store's adaptation."""
RRF_DEPTH = 30
"""Each list's depth for ten hits where the store has not adapted it."""
SUMMARY = "weighted reciprocal rank fusion of four lists"
"""This method as `search_fused` describes it (retrieval/fusion_methods.py)."""


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


def rrf_weights(
    view: View, weights: Mapping[str, float] | None = None, lexical: bool = True, level: Level = "mid"
) -> dict[str, float]:
    """The weight of every list `search_rrf` fuses: the adapted ones, overridden by `weights`, 1.0 for the rest.
    Without the lexical lists the adapted weights (a balance between the two kinds) do not apply."""
    given = check_weights(weights, RRF_LISTS)
    present = [n for n in RRF_LISTS if n.startswith(tuple(f"{lv}_" for lv in (*FUSED_LEVELS, level)))]
    if not lexical:
        dense = [n for n in present if not n.endswith("_lexical")]
        return {name: given.get(name, RRF_FACTORS.get(name, 1.0)) for name in dense}
    chosen = {**RRF_FACTORS, **view.fusion_weights(RRF_FUSION, given)}
    return {name: chosen.get(name, 1.0) for name in present}


def rrf_depths(view: View, k: int, names: Iterable[str]) -> dict[str, int]:
    """Each named list's depth for `k` hits: the store's adapted depth for ten hits (else RRF_DEPTH), in proportion."""
    adapted = view.adaptation.list_depths(RRF_FUSION) if view.adaptation is not None else {}
    return {name: list_depth(adapted.get(name, RRF_DEPTH), k) for name in names}


def rrf_constant(view: View, rrf_k: int | None) -> int:
    """The RRF constant: the caller's, else the store's adapted one, else DEFAULT_RRF_K."""
    if rrf_k is not None:
        return rrf_k
    adapted = view.adaptation.rrf_k(RRF_FUSION) if view.adaptation is not None else None
    return adapted or DEFAULT_RRF_K


def rrf_searches(
    view: View, query: str, vector: np.ndarray, level: Level, depth: int | Mapping[str, int], lexical: bool
) -> dict[Level, dict[str, Scored]]:
    """The searches `rrf_lists` maps, by the level searched: the dense (and BM25) lists of the top and finest
    levels and, for a level between them, its own; `depth` is every list's, or each list's by name."""

    def deep(name: str) -> int:
        return depth if isinstance(depth, int) else depth[name]

    raw: dict[Level, dict[str, Scored]] = {}
    for source in (*FUSED_LEVELS, *([] if level in FUSED_LEVELS else [level])):
        dense_name, lexical_name = list_name(source, "dense"), list_name(source, "lexical")
        raw[source] = {dense_name: view.dense(source, vector, deep(dense_name))}
        if lexical:
            raw[source][lexical_name] = view.lexical(source, query, deep(lexical_name))
    return raw


def rrf_mapped(
    view: View, raw: Mapping[Level, Mapping[str, Scored]], level: Level, vector: np.ndarray
) -> dict[str, Scored]:
    """The searched lists with each hit mapped to `level` (the level's own lists as they are)."""
    lists = view.map_lists(raw[FINEST], FINEST, level, vector)
    # A top-level hit stands for the descendant the sentences point to most strongly (else the closest vector).
    evidence: dict[int, int] = {}
    for mapped in lists.values():
        for position, (chunk_id, _) in enumerate(mapped):
            evidence[chunk_id] = min(evidence.get(chunk_id, position), position)
    lists.update(view.map_lists(raw[TOP], TOP, level, vector, evidence))
    lists.update(raw.get(level, {}) if level not in FUSED_LEVELS else {})
    return lists


def rrf_lists(
    view: View, query: str, vector: np.ndarray, level: Level, depth: int | Mapping[str, int], lexical: bool
) -> dict[str, Scored]:
    """The dense (and BM25) lists of the top and finest levels, each hit mapped to `level`, and the level's own."""
    return rrf_mapped(view, rrf_searches(view, query, vector, level, depth, lexical), level, vector)


def search_rrf(
    view: View,
    query: str,
    k: int,
    level: Level = "mid",
    weights: Mapping[str, float] | None = None,
    rrf_k: int | None = None,
    lexical: bool = True,
    depth: int | None = None,
) -> list[ScoredChunk]:
    """The fused hits; `weights` override the store's adapted weights (`View.fusion_weights`) list by list, `rrf_k`
    its adapted constant, `depth` every list's adapted depth (`rrf_depths`)."""
    query = check_query(query)
    used = rrf_used(view, k, FusionRequest(level, weights, rrf_k, lexical))
    vector = view.query_vector(query)
    lists = rrf_lists(view, query, vector, level, depth or used.depths, lexical)
    fused = reciprocal_rank_fusion(lists, weights={n: w for n, w in used.weights.items() if n in lists}, k=used.rrf_k)
    return view.fused_hits(fused, k)


def rrf_used(view: View, k: int, request: FusionRequest) -> FusionUsed:
    """The weights, depths and constant `search_rrf` runs with for `k` hits."""
    chosen = rrf_weights(view, request.weights, request.lexical, request.level)
    return FusionUsed(chosen, rrf_depths(view, k, chosen), rrf_constant(view, request.rrf_k))


def search(view: View, query: str, depth: int, request: FusionRequest) -> list[ScoredChunk]:
    """`search_rrf` as a fusion method of `search_fused`."""
    return search_rrf(
        view, query, depth, level=request.level, weights=request.weights, rrf_k=request.rrf_k, lexical=request.lexical
    )


def used(view: View, depth: int, request: FusionRequest) -> FusionUsed:
    return rrf_used(view, depth, request)
