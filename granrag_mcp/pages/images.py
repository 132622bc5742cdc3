"""Image files (a scan, a photo of a page) as the PDF of their frames, one page each, so they are read, cited and
drawn as scanned PDF pages are: the same OCR on the same page image, at extraction and in page_image."""

from __future__ import annotations

import io
from typing import Any

from granrag_mcp.pages import ocr

SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


class UnreadableImage(Exception):
    """Bytes Pillow cannot read as an image."""


WRITABLE_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "CMYK"})
"""Pillow's PDF writer takes frames in these modes as they are; a frame in another (16-bit grey, float) is
converted first."""


def writable(frame: Any) -> Any:
    """A frame in a mode the PDF writer takes: integer and float grey (16-bit scans) stretched from their own
    darkest to lightest value onto 8-bit grey (a plain conversion clips them to white); any other mode as RGB."""
    if frame.mode.startswith(("I", "F")):
        low, high = frame.convert("F").getextrema()
        scale = 255 / (high - low) if high > low else 0.0
        return frame.convert("F").point(lambda v: (v - low) * scale).convert("L")
    return frame.convert("RGB")


def as_pdf(data: bytes) -> bytes:
    """Each frame of the image (the pages of a multi-page TIFF) as a page of one PDF, at the resolution OCR renders
    pages at, so a page drawn for OCR has the image's own pixels. The frames are written one at a time, as the
    writer steps through them: a long TIFF is never held decoded whole."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    out = io.BytesIO()
    try:
        with Image.open(io.BytesIO(data)) as image:
            modes = set()
            for frame in ImageSequence.Iterator(image):
                modes.add(frame.mode)
            image.seek(0)
            if modes <= WRITABLE_MODES:
                image.save(out, "PDF", save_all=True, resolution=ocr.DPI)
            else:
                frames = [writable(frame) for frame in ImageSequence.Iterator(image)]
                frames[0].save(out, "PDF", save_all=True, append_images=frames[1:], resolution=ocr.DPI)
    except (UnidentifiedImageError, OSError, ValueError, EOFError) as error:
        raise UnreadableImage(str(error)) from error
    return out.getvalue()
