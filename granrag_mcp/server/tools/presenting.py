"""From the core's answers to what a tool returns: budgeted result models, errors the model can act on, and
text content that quotes document text as data."""

from __future__ import annotations

import base64
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ContentBlock, ImageContent, ResourceLink, TextContent
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from granrag_mcp.errors import GranragError
from granrag_mcp.packing import Packing, TokenCounter, pack
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.citations import citation_line, cite_chunks
from granrag_mcp.retrieval.view import ScoredChunk, View
from granrag_mcp.server.library.watch import chunk_uri
from granrag_mcp.server.schemas.results import Hit, RankedResult, SearchResult, render

F = TypeVar("F", bound=Callable[..., Any])
Cited = TypeVar("Cited", bound=BaseModel)
RESOURCE_LINKS_SINCE = "2025-06-18"
"""The first protocol revision with `resource_link` content."""


def tool_errors(fn: F) -> F:
    """Turn a GranragError (its message is written for the caller) into a ToolError the model can act on.

    Anything else propagates: the SDK logs its traceback to stderr and tells the model only that the tool failed.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GranragError as exc:
            raise ToolError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def presented(fn: F) -> F:
    """Return the tool's result with readable text that quotes document text as data (see `schemas.results.render`),
    followed by a resource link to each hit's chunk where the client's protocol has them.

    The structured content is the result model as it is; only the text content differs from the SDK's JSON dump,
    and only for results that carry document text. The tool declares its result model as `dumped` says.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        text = render(result) if isinstance(result, BaseModel) else None
        if text is None:
            return result
        content: list[ContentBlock] = [TextContent(type="text", text=text), *media_content(result)]
        if links_allowed(kwargs.get("ctx")):
            content += chunk_links(result)
        return CallToolResult(content=content, structured_content=result.model_dump(mode="json"))

    signature = inspect.signature(fn, eval_str=True)
    if isinstance(signature.return_annotation, type) and issubclass(signature.return_annotation, BaseModel):
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=dumped(signature.return_annotation)
        )
    return wrapper  # type: ignore[return-value]


@functools.cache
def dumped(model: type[BaseModel]) -> type[BaseModel]:
    """`model` as a tool's declared output: the same output schema, and its dump taken as it is.

    The SDK validates a tool's structured content against the declared model on every call, rebuilding every hit
    from the dump; a result model validated its fields when it was built and its dump follows its schema, so the
    second validation finds nothing and costs the event loop more than any other step of a search's answer. The
    client still validates what it receives against the published schema.
    """

    class Dumped(model):  # type: ignore[valid-type,misc]  # the schema hook is pydantic's public customisation
        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
            schema = handler.generate_schema(model)
            return core_schema.no_info_plain_validator_function(_as_given, json_schema_input_schema=schema)

    Dumped.__name__ = Dumped.__qualname__ = model.__name__
    Dumped.__doc__ = model.__doc__
    return Dumped


def _as_given(value: Any) -> Any:
    return value


def media_content(result: BaseModel) -> list[ContentBlock]:
    """The images a result carries beside its structured content (`media()`: bytes and MIME type), if any."""
    media = getattr(result, "media", None)
    if not callable(media):
        return []
    return [
        ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime)
        for data, mime in media()
    ]


def links_allowed(ctx: Any) -> bool:
    version = getattr(getattr(ctx, "request_context", None), "protocol_version", None)
    return isinstance(version, str) and is_version_at_least(version, RESOURCE_LINKS_SINCE)


def chunk_links(result: BaseModel) -> list[ContentBlock]:
    """A resource link to the chunk of each hit of `result` (none for results without hits), best first."""
    hits = getattr(result, "hits", None) or []
    return [
        ResourceLink(type="resource_link", uri=chunk_uri(h.chunk_id), name=h.chunk_id, mime_type="text/plain")
        for h in hits
        if isinstance(h, Hit)
    ]


def description(fn: Callable[..., Any]) -> str:
    """A tool's description: its docstring on one line (the source wraps it; the model reads it whole)."""
    return " ".join(inspect.cleandoc(fn.__doc__ or "").split())


def cited_sentences(
    view: View, tokens: TokenCounter, chunks: Sequence[Chunk], max_tokens: int, model: type[Cited]
) -> tuple[list[Cited], Packing]:
    """The chunks' texts packed within `max_tokens`, each kept one as `model` (a sentence with `chunk_id`, `doc_id`,
    `start`, `end`, `text`, `truncated` and `citation`: document, pages, heading path); and the packing."""
    packing = pack([c.text for c in chunks], max_tokens, tokens)
    citations = cite_chunks(view, chunks[: len(packing.pieces)])
    sentences = [
        model(
            chunk_id=c.public_id,
            doc_id=c.doc_id,
            start=c.start,
            end=c.end,
            text=p.text,
            truncated=p.truncated,
            citation=citation_line(c.doc_id, citations[c.id]),
        )
        for c, p in zip(chunks, packing.pieces)
    ]
    return sentences, packing


def hits_result(
    view: View, tokenizer: TokenCounter, hits: list[ScoredChunk], max_tokens: int, reranker: str | None = None
) -> SearchResult:
    packing = pack([h.chunk.text for h in hits], max_tokens, tokenizer)
    cited = cite_chunks(view, [h.chunk for h in hits])
    languages = view.document_languages(h.chunk.doc_id for h in hits)
    models = [
        Hit.of(
            h.chunk,
            h.score,
            h.sources,
            h.evidence,
            p.text,
            p.truncated,
            h.cluster,
            h.folded,
            cited[h.chunk.id],
            languages.get(h.chunk.doc_id),
        )
        for h, p in zip(hits, packing.pieces)
    ]
    fields: dict[str, Any] = dict(
        generation=view.snapshot.generation, tokens_used=packing.tokens_used, omitted=packing.omitted, hits=models
    )
    return RankedResult(reranker=reranker, **fields) if reranker is not None else SearchResult(**fields)
