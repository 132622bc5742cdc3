"""Image files (a scan, a photo of a page) as the PDF of their frames, one page each, so they are read, cited and
drawn as scanned PDF pages are: the same OCR on the same page image, at extraction and in page_image."""

from __future__ import annotations

import io

from granrag_mcp.pages import ocr

SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


class UnreadableImage(Exception):
    """Bytes Pillow cannot read as an image."""


def as_pdf(data: bytes) -> bytes:
    """Each frame of the image (the pages of a multi-page TIFF) as a page of one PDF, at the resolution OCR renders
    pages at, so a page drawn for OCR has the image's own pixels."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            frames = [frame.convert("RGB") for frame in ImageSequence.Iterator(image)]
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise UnreadableImage(str(error)) from error
    if not frames:
        raise UnreadableImage("no frames")
    out = io.BytesIO()
    frames[0].save(out, "PDF", save_all=True, append_images=frames[1:], resolution=ocr.DPI)
    return out.getvalue()
