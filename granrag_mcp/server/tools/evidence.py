"""Evidence tools: the page a hit lies on, as an image with the hit marked; hosts that render MCP Apps show it to a
person in the evidence view (see `evidence_view`) with the hit's text and citation beside it."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.apps import client_supports_apps
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from granrag_mcp.retrieval.citations import citation_line, cite_chunks
from granrag_mcp.retrieval.page_evidence import page_evidence
from granrag_mcp.server.schemas.arguments import ChunkId
from granrag_mcp.server.schemas.evidence import PageBoxModel, PageImageResult, ShownPage
from granrag_mcp.server.tools.base import CurrentView, read_only_tool
from granrag_mcp.server.tools.evidence_view import tool_meta

PNG = "image/png"


def register(server: MCPServer, budget: int) -> None:
    """Add the evidence tools (`budget`, the text budget of the other tools, does not bound images)."""

    @read_only_tool(server, "Page image of a hit", meta=tool_meta())
    def page_image(
        chunk_id: ChunkId,
        ctx: Context[Any, Any],
        view: CurrentView,
        page: Annotated[
            int | None,
            Field(ge=1, le=100_000, description="Draw only this page of the document; null: the hit's pages."),
        ] = None,
        max_pixels: Annotated[
            int,
            Field(
                ge=10_000,
                le=4_000_000,
                description="Pixels of all images together at most (10,000-4,000,000); pages are scaled down to fit.",
            ),
        ] = 800_000,
        crop: Annotated[
            bool, Field(description="Show only the marked region with a margin, at a higher resolution.")
        ] = False,
    ) -> PageImageResult:
        """The page (or pages, up to 4) a hit lies on, drawn from the document's file as a PNG image with the hit's
        text marked, so the evidence can be checked as printed. boxes locate the hit's text on each page in
        fractions of its width and height from the top-left corner. PDFs and images of pages only; the file must be as
        indexed.
        """
        found = page_evidence(view, chunk_id, page, max_pixels, crop)
        result = PageImageResult(
            generation=view.snapshot.generation,
            chunk_id=found.chunk.public_id,
            doc_id=found.chunk.doc_id,
            pages=list(found.pages),
            boxes=[PageBoxModel(page=b.page, box=[round(v, 4) for v in b.box]) for b in found.boxes],
            images=[
                ShownPage(page=i.page, width=i.width, height=i.height, region=list(i.region)) for i in found.images
            ],
            formulas=[PageBoxModel(page=f.page, box=[round(v, 4) for v in f.box]) for f in found.formulas],
        )
        if client_supports_apps(ctx):  # the view shows a person the text beside the page; the model has it already
            citation = cite_chunks(view, [found.chunk])[found.chunk.id]
            result.text = found.chunk.text
            result.citation = citation_line(found.chunk.doc_id, citation)
        result.attach([(image.png, PNG) for image in found.images])
        return result
