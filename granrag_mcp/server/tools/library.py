"""Library tools: what the index holds."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from granrag_mcp.records import format_chunk_id
from granrag_mcp.retrieval.sections import SECTION_CHUNKS
from granrag_mcp.retrieval.sections import document_outline as outline_of
from granrag_mcp.retrieval.summaries import document_summary
from granrag_mcp.server.library.state import holder_of
from granrag_mcp.server.schemas.arguments import MaxTokens
from granrag_mcp.server.schemas.results import DocumentInfo, DocumentList, clip_path
from granrag_mcp.server.schemas.structure import OutlineEntry, OutlineResult, Summary
from granrag_mcp.server.tools.base import CurrentView, Tokens, read_only_tool
from granrag_mcp.server.tools.summarizing import presented


def register(server: MCPServer, budget: int) -> None:
    """Add the library tools; `budget` is the default max_tokens of document_outline."""

    @read_only_tool(server, "List indexed documents")
    def list_documents(
        ctx: Context[Any, Any],
        prefix: Annotated[
            str | None, Field(max_length=1000, description="Only documents whose doc_id starts with this.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Page size (1-500).")] = 50,
        offset: Annotated[int, Field(ge=0, le=1_000_000_000, description="Documents to skip, for paging.")] = 0,
        language: Annotated[
            str | None,
            Field(min_length=2, max_length=8, description="Only documents in this language (ISO 639-1, such as 'zh')."),
        ] = None,
    ) -> DocumentList:
        """The indexed documents (doc_id, source path, size in characters and tokens, language), sorted by doc_id,
        with the total count for paging. Use a doc_id prefix to narrow to a folder, a language to one language.
        """
        holder = holder_of(ctx)
        if holder.empty():  # a writing server started on an empty store, before its first index_paths
            return DocumentList(generation=0, total=0, offset=offset, documents=[])
        view, _ = holder.view()
        documents, total = view.list_documents(prefix, limit, offset, language.strip().lower() if language else None)
        return DocumentList(
            generation=view.snapshot.generation,
            total=total,
            offset=offset,
            documents=[
                DocumentInfo(
                    doc_id=d.doc_id, source=d.source, n_chars=d.n_chars, n_tokens=d.n_tokens, language=d.language
                )
                for d in documents
            ],
        )

    @read_only_tool(server, "Outline of a document")
    def document_outline(
        doc_id: Annotated[
            str, Field(min_length=1, max_length=1000, description="A doc_id from a hit or from list_documents.")
        ],
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        max_depth: Annotated[
            int | None, Field(ge=1, le=20, description="Only headings this deep or less (1: top-level only).")
        ] = None,
        offset: Annotated[int, Field(ge=0, le=1_000_000, description="Sections to skip, for paging.")] = 0,
        summary: Annotated[
            bool,
            Field(
                description="Also the whole document's extractive summary (its central sentences with their "
                "citations), within half of max_tokens."
            ),
        ] = False,
        max_tokens: MaxTokens = budget,
    ) -> OutlineResult:
        """A document's outline: its sections in reading order, each with its level, heading path, character
        span, pages (null where the format has none), size in tokens and chunk_id, its first paragraph-level
        chunk. Read a section with get_section(chunk_id, depth=level). Empty for a document without headings.
        summary=true adds the document's central sentences, for "what is this document about" questions.
        """
        outline = outline_of(view, doc_id, max_depth)
        kept: list[OutlineEntry] = []
        used = 0
        shown: Summary | None = None
        if summary:
            share = max_tokens // 2 if outline.sections else max_tokens
            shown, used = presented(view, tokens, document_summary(view, doc_id, share, tokens.count), share)
        for s in outline.sections[offset:]:  # whole entries while they fit, the first one always
            entry = OutlineEntry(
                number=s.number,
                level=s.level,
                section=clip_path(s.path),
                start=s.start,
                end=s.end,
                pages=list(s.pages) if s.pages else None,
                tokens=s.tokens,
                chunk_id=format_chunk_id(SECTION_CHUNKS, s.chunk_ids[0]) if s.chunk_ids else None,
                chunks=len(s.chunk_ids),
            )
            cost = tokens.count(entry.model_dump_json())
            if kept and used + cost > max_tokens:
                break
            kept.append(entry)
            used += cost
        return OutlineResult(
            generation=view.snapshot.generation,
            tokens_used=used,
            omitted=max(len(outline.sections) - offset, 0) - len(kept),
            doc_id=outline.doc_id,
            n_chars=outline.n_chars,
            page_count=outline.pages,
            total=outline.total,
            offset=offset,
            sections=kept,
            summary=shown,
        )
