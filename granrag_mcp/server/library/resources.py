"""The library as MCP resources: each document (its extracted text, in pages, with its outline) and each chunk,
so that clients that browse resources see what the index holds.

`resources/list` pages through the documents of the current generation (a middleware adds them to the SDK's
answer, which only knows static resources); documents and chunks are read through two templates. Each new
generation is announced to subscribed clients by the library watch (`library.watch`). The first page of a
document with headings or pages comes with a second content, its outline as JSON (`OUTLINE_MIME`): a read has one
content per value its function returns, so a middleware adds it to the SDK's answer.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import Resource

from granrag_mcp.errors import GranragError
from granrag_mcp.retrieval.sections import document_outline
from granrag_mcp.server.library.state import EngineHolder, holder_of
from granrag_mcp.server.library.watch import document_uri
from granrag_mcp.server.schemas.results import clip_path

log = logging.getLogger(__name__)

DOCUMENT_TEMPLATE = "granrag://documents/{+doc_id}{?page}"
LIBRARY_URI = "granrag://library"
"""`serve --library`: what the library holds and how far its sync is."""
CHUNK_TEMPLATE = "granrag://chunks/{chunk_id}"
PAGE_CHARS = 50_000
"""Characters of a document per resource read: long documents are read page by page (`?page=2`...)."""
LIST_PAGE = 100
"""Documents per `resources/list` page."""
OUTLINE_MIME = "application/json"
OUTLINE_CHARS = 200_000
"""Characters of outline a document's first page carries at most: a document with thousands of deep or long
headings would otherwise make one read many times its own size; document_outline pages through the rest."""
REST_CHARS = 500
"""Of OUTLINE_CHARS, what is kept for saying how many sections were left out and where they are."""
DOCUMENT_PREFIX = "granrag://documents/"


def pages_of(n_chars: int) -> int:
    return max(1, -(-n_chars // PAGE_CHARS))


def register(server: MCPServer, library: bool = False) -> None:
    """Documents and chunks as resources; with `library` (a server that keeps folders in step), the library's
    status too."""

    @server.resource(
        DOCUMENT_TEMPLATE,
        name="document",
        title="Indexed document",
        mime_type="text/plain",
        description=f"The extracted text of an indexed document, {PAGE_CHARS} characters a page: page=1 (the "
        "default) is the beginning, and comes with the document's outline (its sections with heading paths, "
        "character spans and pages, and its page starts) as a second, JSON content; resources/list gives each "
        "document's size and pages. The outline holds at most "
        f"{OUTLINE_CHARS:,} characters; past them it says how many sections it left out (document_outline lists "
        "them with an offset).",
    )
    def read_document(doc_id: str, ctx: Context[Any, Any], page: str = "1") -> str:
        # Taken as text and read here, so that `?page=abc` is one clear line rather than a validation traceback.
        number = int(page) if page.isascii() and page.isdigit() and len(page) < 10 else 0
        if number < 1:
            raise ResourceNotFoundError(f"page must be a whole number from 1, got {page[:20]!r}: ask for ?page=1")
        view, _ = _view(ctx)
        info = next((d for d in view.catalog.documents(doc_id, 1, 0) if d.doc_id == doc_id), None)
        if info is None:
            raise ResourceNotFoundError(
                f"no document {doc_id!r} in the index; resources/list or list_documents show the documents it holds"
            )
        pages = pages_of(info.n_chars)
        if number > pages:
            raise ResourceNotFoundError(
                f"{doc_id!r} has {pages} page(s) of {PAGE_CHARS} characters; ask for page 1 to {pages}"
            )
        start = (number - 1) * PAGE_CHARS
        return view.catalog.document_slice(doc_id, start, start + PAGE_CHARS) or ""

    @server.resource(
        CHUNK_TEMPLATE,
        name="chunk",
        title="Indexed chunk",
        mime_type="text/plain",
        description="The text of one chunk, by the chunk_id of a search result (such as 'mid:42').",
    )
    def read_chunk(chunk_id: str, ctx: Context[Any, Any]) -> str:
        view, _ = _view(ctx)
        try:
            return view.get_chunks([chunk_id])[0].text
        except GranragError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    if library:

        @server.resource(
            LIBRARY_URI,
            name="library",
            title="Library status",
            mime_type="application/json",
            description="What the library folders' index holds and how far its sync is, as JSON: the generation "
            "served and its documents; while a run is going on, its stage, and for a first run that commits in "
            "steps, the documents already searchable of those it indexes; the last run's outcome.",
        )
        def read_library() -> str:
            # A static resource is read without the server's state: `read_with_outline` puts the status in.
            return "{}"


def library_status(holder: EngineHolder) -> dict[str, Any]:
    """The library's status: the generation served, its documents, the run in progress and the last run."""
    from mcp.server.mcpserver.exceptions import ToolError

    status: dict[str, Any] = {"folders": [str(folder) for folder in holder.settings.library]}
    try:
        empty = holder.empty() if holder.ready() else None
    except ToolError as exc:  # the index could not be loaded
        status["error"] = str(exc)
        empty = None
    if empty is None:
        status["loading"] = "error" not in status
    elif not empty:
        view, _ = holder.view()
        status["generation"] = view.snapshot.generation
        status["documents"] = view.snapshot.manifest.counts.get("documents", 0)
    sync = holder.library
    running = sync.running if sync is not None else None
    if running is not None:
        status["indexing"] = {"stage": running.stage}
        if running.searchable is not None:
            searchable, total = running.searchable
            status["indexing"].update(searchable=searchable, of=total)
    last = sync.last if sync is not None else None
    if last is not None:
        status["last_run"] = {"outcome": last.outcome, "message": last.message}
    return status


def _view(ctx: Context[Any, Any]):
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return holder_of(ctx).view()
    except ToolError as exc:  # the index is loading or cannot be read: the same words as the tools
        raise ResourceNotFoundError(str(exc)) from None


def _resources(holder: EngineHolder, offset: int) -> tuple[list[Resource], int]:
    if holder.empty():
        return [], 0
    view, _ = holder.view()
    documents, total = view.list_documents(None, LIST_PAGE, offset)
    return [
        Resource(
            uri=document_uri(d.doc_id),
            name=d.doc_id,
            title=d.doc_id,
            mime_type="text/plain",
            size=d.n_chars,
            description=f"{d.source}: {d.n_chars} characters, {d.n_tokens} tokens, {pages_of(d.n_chars)} page(s)",
        )
        for d in documents
    ], total


async def list_documents_as_resources(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Add one page of documents to the SDK's `resources/list` answer, with a cursor to the next page (the server's
    middleware calls it for that method only)."""
    result = await call_next(ctx)
    if not isinstance(result, dict):
        return result
    holder = ctx.lifespan_context
    if not isinstance(holder, EngineHolder):
        return result
    cursor = (ctx.params or {}).get("cursor")
    try:
        offset = int(cursor) if cursor else 0
    except (TypeError, ValueError):
        offset = -1
    if offset < 0:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        raise MCPError(INVALID_PARAMS, f"invalid cursor {cursor!r}: pass the nextCursor of the previous page")
    try:
        resources, total = await anyio.to_thread.run_sync(_resources, holder, offset)
    except Exception as exc:  # the tools report a store that cannot be read; the listing keeps the static part
        log.warning("documents not listed as resources: %s", exc)
        return result
    result["resources"] = [
        *result.get("resources", []),
        *(r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources),
    ]
    if offset + len(resources) < total:
        result["nextCursor"] = str(offset + len(resources))
    return result


def outline_json(holder: EngineHolder, doc_id: str) -> str | None:
    """The outline of a document as the resource's second content, at most about OUTLINE_CHARS characters: its
    sections in reading order while they fit (titles and paths clipped as in the tools' results), then how many
    were left out and where the rest is (document_outline's offset). None where it has neither headings nor pages
    (or is unknown: the read itself says so)."""
    view, _ = holder.view()
    try:
        outline = document_outline(view, doc_id)
    except GranragError:
        return None
    page_starts = list(view.catalog.outlines([doc_id])[doc_id].page_starts)
    if not outline.sections and not page_starts:
        return None
    head: dict[str, Any] = {"doc_id": doc_id, "total": len(outline.sections)}
    kept_pages = _within(page_starts, OUTLINE_CHARS // 4)
    head["page_starts"] = page_starts[:kept_pages]
    if kept_pages < len(page_starts):
        head["page_starts_omitted"] = len(page_starts) - kept_pages
    used = len(json.dumps(head))
    sections: list[str] = []
    for s in outline.sections:
        item = json.dumps(
            {
                "level": s.level,
                "section": clip_path(s.path),
                "start": s.start,
                "end": s.end,
                "pages": list(s.pages) if s.pages else None,
                "tokens": s.tokens,
            },
            ensure_ascii=False,
        )
        if used + len(item) + 2 > OUTLINE_CHARS - REST_CHARS:
            break
        sections.append(item)
        used += len(item) + 2
    omitted = len(outline.sections) - len(sections)
    if omitted:
        head["omitted"] = omitted
        head["rest"] = (
            f"{omitted} more section(s) over the outline's {OUTLINE_CHARS:,} characters: call document_outline "
            f"with this doc_id and offset={len(sections)}"
        )
    body = json.dumps(head, ensure_ascii=False)
    return f'{body[:-1]}, "sections": [{", ".join(sections)}]}}'


def _within(numbers: list[int], chars: int) -> int:
    """How many of `numbers`, from the first, a JSON list of at most `chars` characters holds."""
    used = 0
    for n, number in enumerate(numbers):
        used += len(str(number)) + 2
        if used > chars:
            return n
    return len(numbers)


async def read_with_outline(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Add the outline to the SDK's answer to `resources/read` of a document's first page, and the library's status
    to a read of LIBRARY_URI (the server's middleware calls it for that method only)."""
    result = await call_next(ctx)
    holder = ctx.lifespan_context
    uri = (ctx.params or {}).get("uri")
    if not isinstance(result, dict) or not isinstance(holder, EngineHolder) or not isinstance(uri, str):
        return result
    if uri == LIBRARY_URI and holder.settings.library:
        status = await anyio.to_thread.run_sync(library_status, holder)
        result["contents"] = [{"uri": uri, "mimeType": "application/json", "text": json.dumps(status, indent=1)}]
        return result
    parts = urlsplit(uri)
    if not uri.startswith(DOCUMENT_PREFIX) or parse_qs(parts.query).get("page", ["1"]) != ["1"]:
        return result
    doc_id = unquote(uri[len(DOCUMENT_PREFIX) :].split("?", 1)[0])
    try:
        outline = await anyio.to_thread.run_sync(outline_json, holder, doc_id)
    except Exception as exc:  # the text was read; an outline that cannot be is left out, not the read failed
        log.warning("outline of %r not added: %s", doc_id, exc)
        return result
    if outline is not None:
        result["contents"] = [*result.get("contents", []), {"uri": uri, "mimeType": OUTLINE_MIME, "text": outline}]
    return result
