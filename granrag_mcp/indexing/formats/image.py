"""Images of pages (PNG, JPEG, TIFF with its pages, WebP): read by OCR as the pages of a scanned PDF."""

from __future__ import annotations

from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.pdf import extract as read_pdf
from granrag_mcp.pages import images, ocr

SUFFIXES = images.SUFFIXES


def extract(path: Path, data: bytes) -> ExtractedText:
    if (missing := ocr.missing()) is not None:
        raise ExtractionError(path, f"an image of text: {missing}")
    try:
        pages = images.as_pdf(data)
    except images.UnreadableImage as error:
        raise ExtractionError(path, f"unreadable image ({error})") from error
    try:
        return read_pdf(path, pages)
    except ExtractionError as error:  # the PDF's words for a scan without text do not fit a picture
        raise ExtractionError(path, "an image without text OCR could read (a photo, a drawing)") from error
