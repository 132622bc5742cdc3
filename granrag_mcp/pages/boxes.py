"""Where a span of a PDF's stored text lies on its pages, from the characters of each page's text layer.

The extractor keeps every character of a page's text layer in order and changes only whitespace (line breaks
joined into paragraphs, edges stripped, NULs dropped), so the i-th visible character of a page's stored text is the
i-th visible character of its text layer: a span's characters map back to theirs exactly, page by page. Where a
page's stored text holds more than its text layer (tables added after it), the two are aligned and only the
characters they share are placed (a table's cells on the cells it copies). A page the extractor read by OCR is
read again, in the document's language as the index stored it, and its characters placed on the words OCR finds.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from granrag_mcp.pages import ocr

Box = tuple[float, float, float, float]
"""x0, y0, x1, y1 in fractions of the page's width and height, from its top-left corner."""


@dataclass(frozen=True)
class PageBox:
    page: int  # 1-based
    box: Box


def visible(char: str) -> bool:
    """A character that shows on the page: not whitespace, not a control character."""
    return not char.isspace() and char.isprintable()


def span_boxes(
    document: Any,
    page_starts: Sequence[int],
    text: str,
    text_start: int,
    start: int,
    end: int,
    language: str | None = None,
) -> list[PageBox]:
    """The boxes of the span [start, end) of a PDF's stored text, one per line it covers on each page.

    `text` is the stored text from `text_start` on, holding at least the pages the span covers; `page_starts` are
    the document's (offsets of each page's first character); `language` the document's (ISO 639-1, as the catalog
    stores it), which a page read by OCR is read in again (`ocr.languages_for`; the first-language rule where it
    is None or has no OCR data)."""
    languages = ocr.languages_for(language) if language else None
    boxes: list[PageBox] = []
    for index, page_start in enumerate(page_starts):
        page_end = page_starts[index + 1] if index + 1 < len(page_starts) else text_start + len(text)
        if page_end <= start or page_start >= end or index >= len(document):
            continue
        page_text = text[page_start - text_start : page_end - text_start]
        stored = [i for i, char in enumerate(page_text) if visible(char)]
        wanted = {n for n, i in enumerate(stored) if start <= page_start + i < end}
        page = document[index]
        try:
            boxes += [PageBox(index + 1, box) for box in _line_boxes(page, page_text, stored, wanted, languages)]
        finally:
            page.close()
    return boxes


def _line_boxes(
    page: Any, page_text: str, stored: list[int], wanted: set[int], languages: tuple[str, ...] | None
) -> list[Box]:
    layer = _layer(page, languages)
    placed = _matched([page_text[i] for i in stored], [char for char, _ in layer])
    lines: list[list[float]] = []
    for n in sorted(placed[n] for n in wanted if n in placed):
        box = list(layer[n][1])
        line = lines[-1] if lines else None
        # The next character of the same line overlaps its height and does not start left of its end by more
        # than a character: a new line otherwise, so a span over two lines is two boxes, not their hull.
        if line and box[1] < line[3] and box[3] > line[1] and box[0] >= line[0] - (box[2] - box[0]):
            line[:] = [min(line[0], box[0]), min(line[1], box[1]), max(line[2], box[2]), max(line[3], box[3])]
        else:
            lines.append(box)
    return [tuple(min(max(v, 0.0), 1.0) for v in line) for line in lines]  # type: ignore[misc]


def _layer(page: Any, languages: tuple[str, ...] | None) -> list[tuple[str, Box]]:
    """The visible characters of a page in reading order with their boxes: from its text layer, or, for a page
    the extractor read by OCR, from the words OCR reads on it again in `languages`."""
    import pypdfium2.raw

    textpage = page.get_textpage()
    try:
        if ocr.scanned(page, textpage.get_text_bounded()) and ocr.missing() is None:
            try:
                return ocr.char_boxes(ocr.read_image(ocr.render_for_ocr(page), languages))
            except ocr.OcrError:
                return []
        left, bottom, right, top = page.get_cropbox()
        width, height = (right - left) or 1.0, (top - bottom) or 1.0
        layer = []
        for i in range(textpage.count_chars()):
            char = chr(pypdfium2.raw.FPDFText_GetUnicode(textpage.raw, i))
            if visible(char):
                x0, y0, x1, y1 = textpage.get_charbox(i, loose=True)
                layer.append(
                    (char, ((x0 - left) / width, (top - y1) / height, (x1 - left) / width, (top - y0) / height))
                )
        return layer
    finally:
        textpage.close()


def _matched(stored: list[str], layer: list[str]) -> dict[int, int]:
    """Index in `stored` -> index in `layer` of the same character: one to one as far as the sequences agree (the
    extractor's own output), the rest (a table's copy of cells the page already holds, or a text that differs)
    through their common blocks of two characters or more."""
    agree = 0
    while agree < min(len(stored), len(layer)) and stored[agree] == layer[agree]:
        agree += 1
    placed = {n: n for n in range(agree)}
    if agree == len(stored):
        return placed
    rest = stored[agree:] if agree == len(layer) else stored
    offset = len(stored) - len(rest)
    for block in difflib.SequenceMatcher(None, rest, layer, autojunk=False).get_matching_blocks():
        if block.size >= 2:
            placed.update(
                {offset + block.a + k: block.b + k for k in range(block.size) if offset + block.a + k not in placed}
            )
    return placed
