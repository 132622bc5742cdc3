"""What every search tool does around its technique: drop the chunks the session already received, diversify,
budget the text, and tell the agent which earlier queries of its session were nearly the same."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Resolve

from granrag_mcp.retrieval.diversify import candidate_depth, diversify
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.fusion import FusionUsed
from granrag_mcp.retrieval.view import ScoredChunk, View
from granrag_mcp.server.schemas.results import PreviousQuery, SessionSearchResult
from granrag_mcp.server.session.handle import MEMORY_HANDLE
from granrag_mcp.server.tools.base import Served
from granrag_mcp.server.tools.presenting import hits_result


@dataclass(frozen=True)
class SearchOptions:
    """The arguments every search tool takes and passes on unchanged: the documents to search, the token budget,
    diversity and the chunks this session already received."""

    doc_ids: list[str] | None = None
    doc_prefix: str | None = None
    max_tokens: int = 2000
    diversify: str = "none"
    mmr_lambda: float = 0.5
    exclude_seen: bool = False
    language: str | None = None


async def search_options(
    doc_ids: list[str] | None,
    doc_prefix: str | None,
    max_tokens: int,
    diversify: str,
    mmr_lambda: float,
    exclude_seen: bool,
    language: str | None,
) -> SearchOptions:
    """The options from the tool's arguments of the same names (each search tool takes them all, with its
    defaults); a coroutine, so resolving it takes no thread."""
    return SearchOptions(doc_ids, doc_prefix, max_tokens, diversify, mmr_lambda, exclude_seen, language)


Options = Annotated[SearchOptions, Resolve(search_options)]
"""A search tool's parameter the SDK fills from the tool's own arguments of the same names, before it runs."""


def session_search(
    ctx: Any,
    current: Served,
    query: str,
    k: int,
    options: SearchOptions,
    search: Callable[[View, int], list[ScoredChunk]],
    used: Callable[[View, int], FusionUsed | None] | None = None,
) -> SessionSearchResult:
    """`search(view, depth)` runs the technique for `depth` candidates on the view of the documents `options`
    selects, and `used(view, depth)` names the weights, depths and RRF constant of its fused lists; the rest is the
    same for every search tool."""
    holder, tokens = current.holder, current.tokens
    view = current.view.filtered(DocFilter.of(options.doc_ids, options.doc_prefix, options.language))
    memory = holder.queries.of(ctx, MEMORY_HANDLE.get())
    exclude_seen = options.exclude_seen and memory is not None
    depth = candidate_depth(k, options.diversify, exclude_seen)
    candidates = search(view, depth)
    fusion = used(view, depth) if used is not None else None
    dropped = 0
    if exclude_seen and memory is not None:
        candidates, dropped = memory.unseen(candidates)
    hits = diversify(view, candidates, k, options.diversify, options.mmr_lambda)
    result = hits_result(view, tokens, hits, options.max_tokens)
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
        weights=dict(fusion.weights) if fusion is not None else None,
        depths=dict(fusion.depths) if fusion is not None else None,
        rrf_k=fusion.rrf_k if fusion is not None else None,
        memory=memory.handle if memory is not None else None,
    )
