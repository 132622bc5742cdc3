"""A span of a PDF's stored text maps back to its own characters on its pages: every word of the extracted text,
placed by span_boxes, lies on the box pdfplumber gives that word, across pages and beside tables."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pdfplumber
import pypdfium2

from granrag_mcp.indexing.formats import pdf
from granrag_mcp.pages.boxes import span_boxes
from granrag_mcp.pages.render import region_of, render_pages
from tests.indexing.formats.test_pdf import build_pdf

PAGES = [
    ["Alpha beta gamma delta.", "Epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho."],
    ["Sigma tau upsilon.", "Phi chi psi omega, the last letters."],
    ["Closing words on page three."],
]


def word_boxes(data: bytes) -> list[tuple[int, str, list[float]]]:
    with pdfplumber.open(io.BytesIO(data)) as document:
        return [
            (n, w["text"], [w["x0"] / p.width, w["top"] / p.height, w["x1"] / p.width, w["bottom"] / p.height])
            for n, p in enumerate(document.pages, 1)
            for w in p.extract_words()
        ]


def overlaps(a: tuple[float, ...] | list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def check_every_word(data: bytes) -> None:
    extracted = pdf.extract(Path("r.pdf"), data)
    expected = word_boxes(data)
    document = pypdfium2.PdfDocument(data)
    try:
        found = 0
        for match in re.finditer(r"\S+", extracted.text):
            page_starts = extracted.page_starts
            boxes = span_boxes(document, page_starts, extracted.text, 0, match.start(), match.end())
            page = max(i for i, s in enumerate(page_starts, 1) if s <= match.start())
            truth = [b for n, word, b in expected if n == page and word == match.group()]
            if not truth:  # a table's Markdown (pipes, rules) is not a word on the page
                continue
            assert len(boxes) == 1 and boxes[0].page == page, (match.group(), boxes)
            assert any(overlaps(boxes[0].box, t) for t in truth), (match.group(), boxes, truth)
            found += 1
        assert found >= len(expected) - 4
    finally:
        document.close()


def test_every_word_maps_to_its_own_characters_on_its_page() -> None:
    check_every_word(build_pdf(PAGES))


def test_a_page_with_a_table_after_its_text_still_maps() -> None:
    check_every_word(build_pdf(PAGES, table_on=1))


def test_a_span_across_pages_is_boxed_on_each_page_line_by_line() -> None:
    data = build_pdf(PAGES)
    extracted = pdf.extract(Path("r.pdf"), data)
    start = extracted.text.index("Epsilon")
    end = extracted.text.index("Sigma tau") + len("Sigma tau")
    document = pypdfium2.PdfDocument(data)
    try:
        boxes = span_boxes(document, extracted.page_starts, extracted.text, 0, start, end)
    finally:
        document.close()
    assert [b.page for b in boxes] == [1, 2]
    assert all(b.box[3] - b.box[1] < 0.05 for b in boxes)  # one line high each, not the hull of a page


def test_the_drawn_page_keeps_within_its_pixels_and_crops_to_the_marked_region() -> None:
    data = build_pdf(PAGES)
    extracted = pdf.extract(Path("r.pdf"), data)
    start = extracted.text.index("Sigma")
    document = pypdfium2.PdfDocument(data)
    try:
        boxes = span_boxes(document, extracted.page_starts, extracted.text, 0, start, start + 5)
        whole, cropped = (render_pages(document, [2], boxes, 40_000, crop)[0] for crop in (False, True))
    finally:
        document.close()
    assert whole.width * whole.height <= 40_000 and cropped.width * cropped.height <= 40_000
    assert whole.region == (0.0, 0.0, 1.0, 1.0)
    assert cropped.region == region_of([b.box for b in boxes], True)
    assert cropped.png.startswith(b"\x89PNG")
