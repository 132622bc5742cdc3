"""The page as evidence: the pages a chunk lies on, drawn from the document's own file with the chunk's text
marked, and where that text lies on them (boxes from the characters of the pages' text layer)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.outline import trimmed
from granrag_mcp.pages import images as image_files
from granrag_mcp.pages.boxes import Box, PageBox, span_boxes
from granrag_mcp.pages.formulas import formula_boxes
from granrag_mcp.pages.render import PageImage, render_pages
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.view import View

DRAWN_SUFFIXES = (".pdf", *image_files.SUFFIXES)
"""The formats whose pages can be drawn: their pages are the file's own, not a reading order's (an image's frames
as the PDF the extractor read them as)."""
MAX_PAGES = 4
"""Pages drawn for one chunk at most (a broad chunk can span several): the first ones, each a share of the pixels."""


@dataclass(frozen=True)
class PageEvidence:
    chunk: Chunk
    pages: tuple[int, ...]  # the pages the chunk's text lies on
    boxes: list[PageBox]
    images: list[PageImage]
    formulas: list[PageBox]  # the regions of the formulas the chunk's text touches on the pages shown


def page_evidence(view: View, public_id: str, page: int | None, max_pixels: int, crop: bool) -> PageEvidence:
    """The chunk `public_id` on its pages (or only `page`), drawn within `max_pixels` with its text marked."""
    import pypdfium2  # only a server asked for a page pays for importing it

    chunk = view.resolve([public_id])[0]
    outline = view.catalog.outlines([chunk.doc_id])[chunk.doc_id]
    info = next((d for d in view.catalog.documents(chunk.doc_id, 1, 0) if d.doc_id == chunk.doc_id), None)
    source = Path(info.source) if info else Path(chunk.doc_id)
    if not outline.page_starts or source.suffix.lower() not in DRAWN_SUFFIXES:
        raise InvalidInputError(
            f"{chunk.doc_id!r} has no pages to show (page_image draws the pages of PDFs and images); use get_chunks "
            "or expand_window for the chunk's text"
        )
    data = _indexed_bytes(source, info.content_hash if info else "", chunk.doc_id)
    begin, end = trimmed(chunk.start, chunk.text)
    first, last = outline.pages(begin, end) or (1, 1)
    n_pages = len(outline.page_starts)
    if page is not None and not 1 <= page <= n_pages:
        raise InvalidInputError(f"page {page} is not in {chunk.doc_id!r}, which has pages 1 to {n_pages}")
    shown = [page] if page is not None else list(range(first, last + 1))[:MAX_PAGES]
    text_start = outline.page_starts[first - 1]
    text_end = outline.page_starts[last] if last < n_pages else end
    text = view.catalog.document_slice(chunk.doc_id, text_start, text_end) or ""
    try:
        if source.suffix.lower() in image_files.SUFFIXES:
            data = image_files.as_pdf(data)
        document = pypdfium2.PdfDocument(data)
    except image_files.UnreadableImage as error:
        raise InvalidInputError(f"{source} can no longer be read as an image ({error}); index it again") from error
    except pypdfium2.PdfiumError as error:
        raise InvalidInputError(f"{source} can no longer be read as a PDF ({error}); index it again") from error
    try:
        language = info.language if info else None  # an OCR'd page is read again as the index read it
        boxes = span_boxes(document, outline.page_starts, text, text_start, begin, end, language)
        formulas = touched_formulas(document, shown, boxes)
        images = render_pages(document, shown, boxes, max_pixels, crop, formulas)
    finally:
        document.close()
    return PageEvidence(chunk, tuple(range(first, last + 1)), boxes, images, formulas)


def touched_formulas(document: Any, pages: list[int], boxes: list[PageBox]) -> list[PageBox]:
    """The formulas on `pages` that a box of the chunk's text overlaps: their text layer does not keep the
    mathematics, so they are shown as printed."""
    found = []
    for number in pages:
        marked = [b.box for b in boxes if b.page == number]
        if not marked:
            continue
        page = document[number - 1]
        try:
            found += [PageBox(number, f) for f in formula_boxes(page) if any(_overlap(f, b) for b in marked)]
        finally:
            page.close()
    return found


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _indexed_bytes(source: Path, content_hash: str, doc_id: str) -> bytes:
    """The document's file as it was indexed; an error saying what to do where it is gone or has changed."""
    try:
        data = source.read_bytes()
    except OSError as error:
        raise InvalidInputError(
            f"the file of {doc_id!r} ({source}) cannot be read now ({error.strerror or error}); it was moved or "
            "removed since it was indexed: index it again where it is"
        ) from None
    if content_hash and hashlib.sha256(data).hexdigest() != content_hash:
        raise InvalidInputError(
            f"the file of {doc_id!r} ({source}) has changed since it was indexed, so its pages no longer match the "
            "index: index it again to see them"
        )
    return data
