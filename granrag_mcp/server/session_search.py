"""What every search tool does around its technique: drop the chunks the session already received, diversify,
budget the text, and tell the agent which earlier queries of its session were nearly the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from granrag_mcp.retrieval.diversify import candidate_depth, diversify
from granrag_mcp.retrieval.view import ScoredChunk, View
from granrag_mcp.server.models import PreviousQuery, SessionSearchResult
from granrag_mcp.server.packing import TokenCounter
from granrag_mcp.server.results import hits_result
from granrag_mcp.server.state import holder_of


def session_search(
    ctx: Any,
    view: View,
    tokens: TokenCounter,
    query: str,
    search: Callable[[int], list[ScoredChunk]],
    k: int,
    max_tokens: int,
    method: str = "none",
    mmr_lambda: float = 0.5,
    exclude_seen: bool = False,
    weights: dict[str, float] | None = None,
) -> SessionSearchResult:
    """`search(depth)` runs the technique for `depth` candidates; the rest is the same for every search tool."""
    holder = holder_of(ctx)
    memory = holder.queries.of(ctx)
    candidates = search(candidate_depth(k, method, exclude_seen and memory is not None))
    dropped = 0
    if exclude_seen and memory is not None:
        candidates, dropped = memory.unseen(candidates)
    hits = diversify(view, candidates, k, method, mmr_lambda)
    result = hits_result(view, tokens, hits, max_tokens)
    similar: list[PreviousQuery] = []
    if memory is not None:
        vector = view.query_vector(query)  # computed by the technique already: the view keeps it
        similar = [
            PreviousQuery(
                query=s.previous.query,
                similarity=round(s.similarity, 4),
                chunk_ids=list(s.previous.chunk_ids),
                generation=s.previous.generation,
            )
            for s in memory.similar(vector, holder.settings.similar_query_threshold)
        ]
        memory.record(query, vector, [h.chunk_id for h in result.hits], view.snapshot.generation)
    return SessionSearchResult(
        generation=result.generation,
        tokens_used=result.tokens_used,
        omitted=result.omitted,
        hits=result.hits,
        similar_previous=similar,
        seen_dropped=dropped,
        weights=weights,
    )
