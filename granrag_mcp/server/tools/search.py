"""Search tools: one level, levels fused, and the hierarchical rerank pipeline; and rerank itself."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from granrag_mcp.levels import Level
from granrag_mcp.retrieval.cross_lingual import lists_fused
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.fusion import FusionRequest
from granrag_mcp.retrieval.fusion_methods import DEFAULT_FUSION_METHOD, FUSION_METHODS, methods_description
from granrag_mcp.retrieval.hrr import hrr_search as hrr
from granrag_mcp.retrieval.hrr import hrr_weights
from granrag_mcp.retrieval.level_search import level_used, search_level
from granrag_mcp.retrieval.rerank import rerank as rerank_ids
from granrag_mcp.server.schemas.arguments import (
    ChunkIds,
    DiversifyMethod,
    DocIds,
    DocPrefix,
    ExcludeSeen,
    Language,
    Lexical,
    MaxTokens,
    MmrLambda,
    Query,
    Weights,
)
from granrag_mcp.server.schemas.results import RankedResult, SessionSearchResult
from granrag_mcp.server.tools.base import Current, read_only_tool
from granrag_mcp.server.tools.presenting import hits_result
from granrag_mcp.server.tools.session_search import Options, session_search


def register(server: MCPServer, budget: int) -> None:
    """Add the search tools; `budget` is the default of every max_tokens argument."""

    @read_only_tool(server, "Search long passages")
    def search_broad(
        query: Query,
        ctx: Context[Any, Any],
        current: Current,
        options: Options,
        k: Annotated[int, Field(ge=1, le=100, description="Number of passages (1-100).")] = 5,
        lexical: Lexical = None,
        doc_ids: DocIds = None,
        doc_prefix: DocPrefix = None,
        language: Language = None,
        max_tokens: MaxTokens = budget,
        diversify: DiversifyMethod = "none",
        mmr_lambda: MmrLambda = 0.5,
        exclude_seen: ExcludeSeen = False,
    ) -> SessionSearchResult:
        """Semantic search over broad chunks: long passages that keep a topic together. Use it for overview
        questions or when you need a whole section at once. With lexical=true, exact word matches (BM25) are
        fused in, which helps for names, codes and rare terms. Returns hits (chunk_id like 'broad:12', doc_id,
        offsets, score, text), best first, and similar_previous: earlier queries of this session that were nearly
        the same, with the ids they returned.
        """
        return session_search(
            ctx,
            current,
            query,
            k,
            options,
            lambda view, depth: search_level(view, query, "broad", depth, lexical=lexical),
            lambda view, depth: lists_fused(level_used(view, "broad", depth, lexical), view.words_match(query)),
        )

    @read_only_tool(server, "Search sentences or paragraphs")
    def search_narrow(
        query: Query,
        ctx: Context[Any, Any],
        current: Current,
        options: Options,
        k: Annotated[int, Field(ge=1, le=100, description="Number of hits (1-100).")] = 10,
        level: Annotated[
            Literal["narrow", "mid"], Field(description="narrow: sentences; mid: paragraph-sized chunks.")
        ] = "narrow",
        lexical: Lexical = None,
        doc_ids: DocIds = None,
        doc_prefix: DocPrefix = None,
        language: Language = None,
        max_tokens: MaxTokens = budget,
        diversify: DiversifyMethod = "none",
        mmr_lambda: MmrLambda = 0.5,
        exclude_seen: ExcludeSeen = False,
    ) -> SessionSearchResult:
        """Semantic search over single sentences (level='narrow', the default) or paragraph-sized mid chunks
        (level='mid'). Use it first for precise facts: it finds the exact spot. Each hit has a chunk_id
        ('narrow:311') and parent_id ('mid:40'); follow up with expand_window(chunk_id) for the surrounding
        text, get_parent(chunk_ids) for the enclosing paragraph or passage, then rerank(query, chunk_ids) to
        order candidates. lexical=true adds exact word matching (BM25) by RRF. diversify='mmr' or 'kmeans' drops
        near-repeats; exclude_seen=true leaves out chunks this session already received.
        """
        return session_search(
            ctx,
            current,
            query,
            k,
            options,
            lambda view, depth: search_level(view, query, level, depth, lexical=lexical),
            lambda view, depth: lists_fused(level_used(view, level, depth, lexical), view.words_match(query)),
        )

    @read_only_tool(server, "Search all levels, fused")
    def search_fused(
        query: Query,
        ctx: Context[Any, Any],
        current: Current,
        options: Options,
        k: Annotated[int, Field(ge=1, le=100, description="Number of hits (1-100).")] = 10,
        method: Annotated[
            Literal[tuple(FUSION_METHODS)],  # type: ignore[valid-type]  # read from the registry as the tool is added
            Field(description=methods_description()),
        ] = DEFAULT_FUSION_METHOD,
        weights: Weights = None,
        rrf_k: Annotated[
            int | None,
            Field(
                ge=1,
                le=1000,
                description="rrf only: the RRF constant; larger flattens ranks. null (default): the one this index "
                "adapted to its text (in `rrf_k`).",
            ),
        ] = None,
        lexical: Annotated[bool, Field(description="rrf only: include the two BM25 lists.")] = True,
        level: Annotated[
            Level,
            Field(description="rrf: level of the returned chunks; union: the fine level (mid if mid, else narrow)."),
        ] = "mid",
        doc_ids: DocIds = None,
        doc_prefix: DocPrefix = None,
        language: Language = None,
        max_tokens: MaxTokens = budget,
        diversify: DiversifyMethod = "none",
        mmr_lambda: MmrLambda = 0.5,
        exclude_seen: ExcludeSeen = False,
    ) -> SessionSearchResult:
        """Search with the broad and narrow levels combined. method='rrf' (default) fuses up to four ranked lists
        (broad_dense, broad_lexical, narrow_dense, narrow_lexical) by weighted reciprocal rank fusion and
        returns chunks of `level` (default mid), each with `sources` showing every list's rank, score and share;
        tune with weights and rrf_k. method='union' returns broad and fine hits together by score, dropping fine
        hits inside a returned broad one. Use it when a question needs both context and precision, or when
        single-level searches disagree.
        """
        fusion, request = FUSION_METHODS[method], FusionRequest(level, weights, rrf_k, lexical)
        return session_search(
            ctx,
            current,
            query,
            k,
            options,
            lambda view, depth: fusion.search(view, query, depth, request),
            lambda view, depth: lists_fused(fusion.used(view, depth, request), view.words_match(query)),
        )

    @read_only_tool(server, "Rerank chunks")
    def rerank(
        query: Query,
        chunk_ids: ChunkIds,
        ctx: Context[Any, Any],
        current: Current,
        top_n: Annotated[int, Field(ge=1, le=100, description="How many of the best to return (1-100).")] = 5,
        method: Annotated[
            Literal["auto", "candidate-ranker", "reranker"],
            Field(
                description="candidate-ranker: word coverage and sentence matches inside each chunk plus the "
                "reranker's score; reranker: the reranker alone; auto: the candidate ranker when configured."
            ),
        ] = "auto",
        max_tokens: MaxTokens = budget,
    ) -> RankedResult:
        """Reorder chunks by relevance to the query with the reranker (a cross-encoder when installed, else an
        embedding-similarity fallback), by default combined with the candidate ranker, which looks inside each
        chunk for the query's words and best-matching sentences; the name of what ranked is in `reranker`.
        Pass ids gathered from any searches, of any levels, to choose which to read before answering. Returns
        the best top_n, best first.
        """
        view = current.view
        result = rerank_ids(view, query, chunk_ids, top_n, method)
        return hits_result(view, current.tokens, result.hits, max_tokens, result.reranker)  # type: ignore[return-value]

    @read_only_tool(server, "Hierarchical rerank search")
    def hrr_search(
        query: Query,
        ctx: Context[Any, Any],
        current: Current,
        k: Annotated[int, Field(ge=1, le=100, description="Number of broad passages (1-100).")] = 5,
        sentence_k: Annotated[int, Field(ge=1, le=300, description="Sentences retrieved first (1-300).")] = 50,
        mid_k: Annotated[int, Field(ge=1, le=100, description="Mid chunks retrieved directly (1-100).")] = 20,
        rerank_n: Annotated[int, Field(ge=1, le=100, description="Mid candidates the reranker scores (1-100).")] = 20,
        doc_ids: DocIds = None,
        doc_prefix: DocPrefix = None,
        language: Language = None,
        max_tokens: MaxTokens = budget,
    ) -> RankedResult:
        """Hierarchical rerank retrieval in one call: finds sentences and mid chunks, reranks the mid chunks, and
        returns their broad passages best first, each with `evidence` (the mid chunk ids that led to it). Use it
        for questions that need a full passage but where the answer hides in one paragraph.
        """
        view = current.view.filtered(DocFilter.of(doc_ids, doc_prefix, language))
        result = hrr(view, query, k, sentence_k, mid_k, rerank_n)
        out = hits_result(view, current.tokens, result.hits, max_tokens, result.reranker)
        return out.model_copy(update={"weights": hrr_weights(view, query=query)})  # type: ignore[return-value]
