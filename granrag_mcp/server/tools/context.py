"""Context tools: the text around a chunk, the chunks that enclose it, and chunks fetched by id."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from granrag_mcp.packing import cut, pack
from granrag_mcp.records import format_chunk_id
from granrag_mcp.retrieval.citations import cite_chunks, cite_window
from granrag_mcp.retrieval.parents import find_parents
from granrag_mcp.retrieval.sections import SECTION_CHUNKS, enclosing_section
from granrag_mcp.retrieval.summaries import span_summary
from granrag_mcp.retrieval.view import ScoredChunk
from granrag_mcp.retrieval.window import expand_window as window_of
from granrag_mcp.server.schemas.arguments import ChunkId, ChunkIds, MaxTokens
from granrag_mcp.server.schemas.results import (
    Hit,
    ParentGroup,
    ParentsResult,
    SearchResult,
    WindowResult,
    citation_fields,
    clip_path,
)
from granrag_mcp.server.schemas.structure import SUMMARY_DESCRIPTION, SectionResult
from granrag_mcp.server.tools.base import CurrentView, Tokens, read_only_tool
from granrag_mcp.server.tools.presenting import hits_result
from granrag_mcp.server.tools.summarizing import presented


def register(server: MCPServer, budget: int) -> None:
    """Add the context tools; `budget` is the default of every max_tokens argument."""

    @read_only_tool(server, "Text around a chunk")
    def expand_window(
        chunk_id: ChunkId,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        before: Annotated[int, Field(ge=0, le=20, description="Chunks of the same level before it (0-20).")] = 2,
        after: Annotated[int, Field(ge=0, le=20, description="Chunks of the same level after it (0-20).")] = 2,
        max_tokens: MaxTokens = budget,
    ) -> WindowResult:
        """The text around one chunk: `before` and `after` neighbouring chunks of the same level in reading order,
        assembled into one text with its document offsets. Use it after search_narrow when a sentence needs its
        context. members lists the chunks in the window (their text is in `text`, not repeated).
        """
        window = window_of(view, chunk_id, before, after)
        piece = cut(window.text, max_tokens, tokens)
        end = window.start + len(piece.text)
        members = [m for m in window.members if m.start < end or m.id == window.center.id]
        citation, cited = cite_window(view, window.doc_id, window.start, piece.text, members)
        return WindowResult(
            generation=view.snapshot.generation,
            tokens_used=piece.tokens,
            omitted=len(window.members) - len(members),
            chunk_id=window.center.public_id,
            doc_id=window.doc_id,
            start=window.start,
            end=end,
            text=piece.text,
            truncated=piece.truncated,
            **citation_fields(citation),
            members=[Hit.of(m, text="", citation=cited[m.id]) for m in members],
        )

    @read_only_tool(server, "Enclosing chunks")
    def get_parent(
        chunk_ids: ChunkIds,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        merge_threshold: Annotated[
            float | None,
            Field(
                ge=0,
                le=1,
                description="Merge into the parent only when more than this share of its children "
                "is among chunk_ids; the others come back unchanged in `kept`. Null: always the parent.",
            ),
        ] = None,
        max_tokens: MaxTokens = budget,
    ) -> ParentsResult:
        """The enclosing chunk one level up of each given chunk (narrow -> mid, mid -> broad), with which of your
        ids it contains (children_hit) and how many children it has (children_total). Several hits in one parent
        come back as that one parent. With merge_threshold, a parent replaces its children only when more than
        that share of them was given; the others are returned unchanged in `kept`. Broad ids have no parent.
        """
        result = find_parents(view, chunk_ids, merge_threshold)
        packing = pack([g.parent.text for g in result.parents] + [c.text for c in result.kept], max_tokens, tokens)
        pieces = packing.pieces
        cited = cite_chunks(view, [g.parent for g in result.parents] + result.kept)
        parents = [
            ParentGroup(
                parent=Hit.of(g.parent, text=p.text, truncated=p.truncated, citation=cited[g.parent.id]),
                children_hit=g.children_hit,
                children_total=g.children_total,
            )
            for g, p in zip(result.parents, pieces)
        ]
        kept = [
            Hit.of(c, text=p.text, truncated=p.truncated, citation=cited[c.id])
            for c, p in zip(result.kept, pieces[len(parents) :])
        ]
        return ParentsResult(
            generation=view.snapshot.generation,
            tokens_used=packing.tokens_used,
            omitted=packing.omitted,
            parents=parents,
            kept=kept,
        )

    @read_only_tool(server, "Fetch chunks by id")
    def get_chunks(
        chunk_ids: ChunkIds,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        max_tokens: MaxTokens = budget,
    ) -> SearchResult:
        """Fetch chunks by id, in the order given (for example ids from `evidence`, `parent_id` or an earlier
        result). Unknown ids are an error naming them; search again if the index changed.
        """
        chunks = view.get_chunks(chunk_ids)
        return hits_result(view, tokens, [ScoredChunk(c, None) for c in chunks], max_tokens)

    @read_only_tool(server, "Enclosing section")
    def get_section(
        chunk_id: ChunkId,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        depth: Annotated[
            int | None,
            Field(
                ge=1,
                le=20,
                description="Climb to the enclosing section this deep or less (1: the chapter); "
                "null: the innermost section.",
            ),
        ] = None,
        summary: Annotated[bool, Field(description=SUMMARY_DESCRIPTION)] = False,
        max_tokens: MaxTokens = budget,
    ) -> SectionResult:
        """The section of its document that holds a chunk (by its headings, not by token windows): its heading
        path, pages, size, text from the heading on and its paragraph-level chunk ids. Use it when a hit needs
        its whole section; depth climbs to an enclosing one (1: the top-level section). summary=true returns,
        instead of the text, the section's central sentences with their citations ("explain the whole chapter").
        Documents without headings have no sections: use get_parent or expand_window for them (document_outline
        with summary=true summarizes a whole document).
        """
        chunk, span = enclosing_section(view, chunk_id, depth)
        if summary:
            chosen = span_summary(view, span.doc_id, span.start, span.end, max_tokens, tokens.count)
            shown, used = presented(view, tokens, chosen, max_tokens)
            return SectionResult(
                generation=view.snapshot.generation,
                tokens_used=used,
                omitted=0,
                chunk_id=chunk.public_id,
                doc_id=span.doc_id,
                number=span.number,
                level=span.level,
                section=clip_path(span.path),
                start=span.start,
                end=span.start,
                section_end=span.end,
                pages=list(span.pages) if span.pages else None,
                tokens=span.tokens,
                text="",
                truncated=False,
                chunk_ids=[format_chunk_id(SECTION_CHUNKS, i) for i in span.chunk_ids],
                summary=shown,
            )
        text = view.catalog.document_slice(span.doc_id, span.start, span.end) or ""
        piece = cut(text, max_tokens, tokens)
        end = span.start + len(piece.text)
        positions = {i: start for i, start, _ in view.catalog.positions(span.doc_id, SECTION_CHUNKS)}
        inside = [i for i in span.chunk_ids if positions.get(i, end) < end or i == span.chunk_ids[0]]
        return SectionResult(
            generation=view.snapshot.generation,
            tokens_used=piece.tokens,
            omitted=len(span.chunk_ids) - len(inside),
            chunk_id=chunk.public_id,
            doc_id=span.doc_id,
            number=span.number,
            level=span.level,
            section=clip_path(span.path),
            start=span.start,
            end=end,
            section_end=span.end,
            pages=list(span.pages) if span.pages else None,
            tokens=span.tokens,
            text=piece.text,
            truncated=piece.truncated,
            chunk_ids=[format_chunk_id(SECTION_CHUNKS, i) for i in inside],
        )
