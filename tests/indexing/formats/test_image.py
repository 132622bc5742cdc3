"""Images of pages (PNG, JPEG, multi-page TIFF, WebP), drawn here from reportlab PDFs at 150 dpi, read by OCR a
frame a page; their words placed back on the frames for page_image. Skipped where Tesseract is not installed."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2
import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import image
from granrag_mcp.pages import images, ocr
from granrag_mcp.pages.boxes import span_boxes
from tests.indexing.formats.test_pdf import build_pdf

pytestmark = pytest.mark.skipif(ocr.missing() is not None, reason=ocr.missing() or "")

PAGES = [["The harbour of Elwyn was rebuilt by Margaret Hale."], ["The mill of Marrow was rebuilt by Thomas Reed."]]


def frames(dpi: int = 150) -> list:
    document = pypdfium2.PdfDocument(build_pdf(PAGES))
    try:
        return [document[i].render(scale=dpi / 72).to_pil().convert("RGB") for i in range(len(document))]
    finally:
        document.close()


def saved(kind: str, pages: list) -> bytes:
    buffer = io.BytesIO()
    pages[0].save(buffer, kind, save_all=len(pages) > 1, append_images=pages[1:])
    return buffer.getvalue()


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "WEBP"])
def test_an_image_of_a_page_is_read(kind: str) -> None:
    extracted = image.extract(Path(f"page.{kind.lower()}"), saved(kind, frames()[:1]))
    assert "Margaret Hale" in extracted.text and extracted.page_starts == (0,)


def test_a_multi_page_tiff_is_read_a_frame_a_page_and_its_words_keep_their_boxes() -> None:
    data = saved("TIFF", frames())
    extracted = image.extract(Path("scan.tiff"), data)
    assert len(extracted.page_starts) == 2 and "Thomas Reed" in extracted.text[extracted.page_starts[1] :]
    start = extracted.text.index("Reed")
    document = pypdfium2.PdfDocument(images.as_pdf(data))
    try:
        boxes = span_boxes(document, extracted.page_starts, extracted.text, 0, start, start + 4)
    finally:
        document.close()
    assert [b.page for b in boxes] == [2]
    x0, y0, x1, y1 = boxes[0].box
    assert 0.2 < x0 < x1 < 0.6 and y0 < 0.1  # "Reed" ends the first line, near the top left of the page


def test_bytes_that_are_no_image_are_skipped_in_one_line() -> None:
    with pytest.raises(ExtractionError, match="unreadable image"):
        image.extract(Path("broken.png"), b"not an image at all")


def test_a_picture_without_text_is_skipped_in_one_line() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (400, 300), (40, 120, 200)).save(buffer, "PNG")
    with pytest.raises(ExtractionError, match="an image without text OCR could read"):
        image.extract(Path("sky.png"), buffer.getvalue())


@pytest.mark.parametrize("mode", ["1", "L", "RGBA", "I;16"])
def test_an_image_in_any_mode_is_read(mode: str) -> None:
    """Bilevel and grey scans, a page on a see-through background, 16-bit grey: the writer's own modes are written
    frame by frame as they are, the others converted first."""
    page = frames()[0]
    if mode == "RGBA":  # black text on nothing: the background is transparent, not white
        picture = page.convert("L")
        page = picture.point(lambda v: 0).convert("RGBA")
        page.putalpha(picture.point(lambda v: 255 - v))
    elif mode == "I;16":
        page = page.convert("L").point(lambda v: v * 257, "I").convert("I;16")
    else:
        page = page.convert(mode)
    extracted = image.extract(Path(f"page-{mode}.png"), saved("PNG" if mode != "1" else "TIFF", [page]))
    assert "Margaret Hale" in extracted.text
