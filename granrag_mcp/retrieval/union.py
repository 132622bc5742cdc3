"""Dual-granularity union: top-level and fine hits in one list by score, a fine hit inside a returned top-level
hit not repeated."""

from __future__ import annotations

from granrag_mcp.levels import FINEST, TOP, Level
from granrag_mcp.retrieval.fusion import FusionRequest
from granrag_mcp.retrieval.spans import dedupe_by_span, inside
from granrag_mcp.retrieval.view import ScoredChunk, View

SUMMARY = "broad and fine hits by score"
"""This method as `search_fused` describes it (retrieval/fusion_methods.py)."""


def search_union(view: View, query: str, k: int, fine_level: Level = FINEST) -> list[ScoredChunk]:
    """A top-level hit that covers better-scoring fine hits is placed where the best of them was."""
    vector = view.query_vector(query)
    depth = max(2 * k, k + 10)
    coarse = dedupe_by_span(view.scored_chunks(view.dense(TOP, vector, depth)))
    fine = dedupe_by_span(view.scored_chunks(view.dense(fine_level, vector, depth)))
    result: list[ScoredChunk] = []
    for hit in sorted(coarse + fine, key=lambda h: -(h.score or 0.0)):
        if hit.chunk.level == TOP:
            # The top-level hit takes the place of the best fine hit it covers, which it then replaces.
            covered = [i for i, h in enumerate(result) if h.chunk.level != TOP and inside(h.chunk, hit.chunk)]
            position = covered[0] if covered else len(result)
            result = [h for i, h in enumerate(result) if i not in covered]
            result.insert(position, hit)
        elif not any(h.chunk.level == TOP and inside(hit.chunk, h.chunk) for h in result):
            result.append(hit)
        if len(result) >= k:
            break
    return result[:k]


def search(view: View, query: str, depth: int, request: FusionRequest) -> list[ScoredChunk]:
    """`search_union` as a fusion method of `search_fused`: the fine level is mid when mid is asked, else the
    finest."""
    return search_union(view, query, depth, fine_level="mid" if request.level == "mid" else FINEST)


def used(view: View, depth: int, request: FusionRequest) -> None:
    """Union fuses no weighted lists."""
    return None
