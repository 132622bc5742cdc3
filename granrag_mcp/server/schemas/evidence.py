"""The page_image tool's result: where a hit lies on its pages; the images themselves travel as image content."""

from __future__ import annotations

from pydantic import Field, PrivateAttr

from granrag_mcp.retrieval.citations import pages_label
from granrag_mcp.server.schemas.lean import Lean
from granrag_mcp.server.schemas.results import fence_doc_id


class PageBoxModel(Lean):
    page: int = Field(description="1-based page number.")
    box: list[float] = Field(
        min_length=4,
        max_length=4,
        description="[x0, y0, x1, y1] in fractions of the page's width and height from its top-left corner.",
    )


class ShownPage(Lean):
    page: int = Field(description="1-based page number of this image (images come in this order).")
    width: int = Field(description="Image width in pixels.")
    height: int = Field(description="Image height in pixels.")
    region: list[float] = Field(
        min_length=4, max_length=4, description="The part of the page shown, as a box; [0, 0, 1, 1] uncropped."
    )


class PageImageResult(Lean):
    generation: int = Field(description="Index generation that answered.")
    chunk_id: str
    doc_id: str
    pages: list[int] = Field(description="The pages the chunk's text lies on, first to last.")
    boxes: list[PageBoxModel] = Field(description="The chunk's text on its pages, one box per line it covers.")
    images: list[ShownPage] = Field(default_factory=list, description="The images returned, one per page.")
    formulas: list[PageBoxModel] = Field(
        default_factory=list,
        description="Regions of the formulas the hit's text touches, outlined in blue on the image: their text is not "
        "the mathematics as printed, so read them from the image.",
    )
    text: str | None = Field(
        default=None, description="The hit's text, for the evidence view (clients that render MCP Apps only)."
    )
    citation: str | None = Field(
        default=None, description="The hit's citation line, for the evidence view (clients that render MCP Apps only)."
    )
    _media: list[tuple[bytes, str]] = PrivateAttr(default_factory=list)

    def attach(self, media: list[tuple[bytes, str]]) -> None:
        """The images' bytes and MIME types, sent as image content beside the structured content."""
        self._media = media

    def media(self) -> list[tuple[bytes, str]]:
        return self._media

    def as_text(self) -> str:
        shown = ", ".join(f"p. {i.page} ({i.width}x{i.height})" for i in self.images) or "none"
        formulas = (
            f" | {len(self.formulas)} formula region(s) outlined: read them from the image" if self.formulas else ""
        )
        return (
            f"page image of {self.chunk_id} | {pages_label(self.pages)} | {len(self.boxes)} box(es) marked | "
            f"images: {shown}{formulas} | generation {self.generation}\n{fence_doc_id(self.doc_id)}"
        )
