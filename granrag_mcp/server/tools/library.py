"""Library tools: what the index holds."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from granrag_mcp.server.schemas.results import DocumentInfo, DocumentList
from granrag_mcp.server.state import holder_of
from granrag_mcp.server.tools.base import read_only_tool


def register(server: MCPServer, budget: int) -> None:
    """Add the library tools (`budget` is unused: they return no document text)."""

    @read_only_tool(server, "List indexed documents")
    def list_documents(
        ctx: Context[Any, Any],
        prefix: Annotated[
            str | None, Field(max_length=1000, description="Only documents whose doc_id starts with this.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Page size (1-500).")] = 50,
        offset: Annotated[int, Field(ge=0, le=1_000_000_000, description="Documents to skip, for paging.")] = 0,
    ) -> DocumentList:
        """The indexed documents (doc_id, source path, size in characters and tokens), sorted by doc_id, with the
        total count for paging. Use a doc_id prefix to narrow to a folder.
        """
        holder = holder_of(ctx)
        if holder.empty():  # a writing server started on an empty store, before its first index_paths
            return DocumentList(generation=0, total=0, offset=offset, documents=[])
        view, _ = holder.view()
        documents, total = view.list_documents(prefix, limit, offset)
        return DocumentList(
            generation=view.snapshot.generation,
            total=total,
            offset=offset,
            documents=[
                DocumentInfo(doc_id=d.doc_id, source=d.source, n_chars=d.n_chars, n_tokens=d.n_tokens)
                for d in documents
            ],
        )
