"""PDF: the text of each page (pypdfium2), pages separated by a blank line and their starts kept; the bookmarks
(the outline a PDF viewer shows) as sections where their title is found on their page; with the `pdf-tables`
extra, the tables pdfplumber finds (`pdf_tables`) follow the text of the page they start on, in the table form the
formats share, and a table's rows run on from the page before lead that page's text. A page without a text layer (a
scan, a photo) is read by OCR (`scanned_pages`, `pages.ocr`) where Tesseract is installed, its lines in larger type
its headings where it has no bookmarks."""

from __future__ import annotations

import bisect
import dataclasses
import logging
import re
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, Section, normalise_newlines
from granrag_mcp.indexing.formats.builder import TextBuilder, one_line
from granrag_mcp.indexing.formats.pdf_tables import find_tables, joined, leading, trailing, without_cells
from granrag_mcp.indexing.formats.scanned_pages import ScanReader
from granrag_mcp.pages import ocr

log = logging.getLogger(__name__)

TABLES_EXTRA = "pip install 'granrag-mcp[pdf-tables]'"
_MIN_RULES_FOR_A_TABLE = 4
"""pdfplumber's default strategy builds tables from drawn rules: a page with fewer path objects has none, so the
slow table finder runs only on the pages that may hold one."""


def extract(path: Path, data: bytes) -> ExtractedText:
    import pypdfium2  # only a run that reads a PDF pays for importing it

    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as error:
        if "password" in str(error).lower():
            raise ExtractionError(path, "encrypted PDF that needs a password") from error
        raise ExtractionError(path, f"unreadable PDF ({error})") from error
    scans = ScanReader(path, len(document))
    try:
        pages = list(_page_texts(path, document, scans))
        bookmarks = _bookmarks(document) or scans.headings  # a scan's outline: the lines in larger type
    finally:
        document.close()
    found = find_tables(data, [number for number, (_, may_hold_table) in enumerate(pages) if may_hold_table])
    tables = joined(found)
    continued, started = leading(tables), trailing(tables)
    builder = TextBuilder()
    for number, (text, _) in enumerate(pages):
        builder.start_page()
        for block in continued.get(number, []):  # the rows of a table run on from the page before come first
            builder.block(block)
        builder.block(without_cells(text, number, found))
        for block in started.get(number, []):
            builder.block(block)
    if not builder.length:
        raise ExtractionError(path, f"no text layer (a scanned PDF), and {ocr.missing() or 'OCR read no text in it'}")
    built = builder.build()
    return dataclasses.replace(built, sections=_sections(built.text, built.page_starts, bookmarks))


def _bookmarks(document: Any) -> list[tuple[int, int, str]]:
    """(page index, level from 1, title) of each bookmark that points at a page, in outline order."""
    import pypdfium2

    found = []
    try:
        for bookmark in document.get_toc():
            destination = bookmark.get_dest()
            page = destination.get_index() if destination is not None else None
            title = one_line(bookmark.get_title())
            if page is not None and title:
                found.append((page, bookmark.level + 1, title))
    except pypdfium2.PdfiumError:  # a damaged outline: the text is still worth indexing
        return []
    return found


def _sections(text: str, page_starts: tuple[int, ...], bookmarks: list[tuple[int, int, str]]) -> tuple[Section, ...]:
    """Each bookmark where its title first stands on its page (after the previous one found there), as the line it
    is in the text; a bookmark whose title is not on its page is left out.

    The title's words are looked for with any run of whitespace between them, in linear time: in the page's words
    joined by single spaces, by a plain substring search (a pattern built from a long title and tried at every
    position of a long page is quadratic)."""
    found: list[Section] = []
    pages: dict[int, _Words] = {}
    searched_from: dict[int, int] = {}
    for page, level, title in bookmarks:
        if page >= len(page_starts):
            continue
        if page not in pages:
            end = page_starts[page + 1] if page + 1 < len(page_starts) else len(text)
            pages[page] = _Words(text, page_starts[page], end)
        words = pages[page]
        needle = " ".join(title.split())
        at = words.joined.find(needle, searched_from.get(page, 0))
        if not needle or at < 0:
            continue
        searched_from[page] = at + len(needle)
        start, stop = words.original(at), words.original(at + len(needle) - 1) + 1
        found.append(Section(start, level, text[start:stop].split("\n", 1)[0].rstrip()))
    return tuple(sorted(found, key=lambda section: section.start))


class _Words:
    """A stretch of text as its words joined by single spaces, and the way back to offsets in the text."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self._joined_starts = array("q")
        self._starts = array("q")
        parts: list[str] = []
        length = 0
        for word in _WORD.finditer(text, start, end):
            self._joined_starts.append(length)
            self._starts.append(word.start())
            parts.append(word.group())
            length += len(word.group()) + 1
        self.joined = " ".join(parts)

    def original(self, joined_offset: int) -> int:
        """The text offset of a character of `joined` that is not a space between words."""
        word = bisect.bisect_right(self._joined_starts, joined_offset) - 1
        return self._starts[word] + joined_offset - self._joined_starts[word]


_WORD = re.compile(r"\S+")


def _page_texts(path: Path, document: Any, scans: ScanReader) -> Iterator[tuple[str, bool]]:
    """Each page's text (read by `scans` where it has no text layer), and whether it draws enough rules to hold a
    table."""
    import pypdfium2
    import pypdfium2.raw

    for number in range(len(document)):
        try:
            page = document[number]
            textpage = page.get_textpage()
            text = textpage.get_text_bounded()
            rules = sum(1 for _ in page.get_objects(filter=[pypdfium2.raw.FPDF_PAGEOBJ_PATH], max_depth=2))
            scanned = ocr.scanned(page, text)
            textpage.close()
            page.close()
        except pypdfium2.PdfiumError as error:  # a damaged page: the file is skipped, as a reader would fail too
            raise ExtractionError(path, f"unreadable PDF page {number + 1} ({error})") from error
        if scanned:
            text = scans.read(document, number)
        yield reflow(normalise_newlines(text).replace("\x00", "").strip()), rules >= _MIN_RULES_FOR_A_TABLE


_PARAGRAPH_END = re.compile(r"[.!?:;\"\u201d\u2019')\]]$")
FULL_LINE = 0.85
"""A line this share of the page's longest or more runs to the margin: the paragraph goes on below it."""
SHORT_LINE = 0.6
"""A line under this share of the longest that does not end a sentence stands alone: a heading or a list item."""


def reflow(page: str) -> str:
    """A page's lines joined back into its paragraphs: a PDF breaks every line, and a sentence cut at each margin
    would be split into pieces. A blank line, or a sentence's end short of the margin, ends a paragraph; a short
    line without one (a heading, a list item, a table cell) keeps its own line; any other line goes on with a space."""
    lines = [line.strip() for line in page.split("\n")]
    width = max((len(line) for line in lines), default=0)
    out: list[str] = []
    last, blank_before = "", False
    for line in lines:
        if not line:
            blank_before = True
            continue
        if last:
            if blank_before or (_PARAGRAPH_END.search(last) and len(last) < FULL_LINE * width):
                out.append("\n\n")
            elif len(last) < SHORT_LINE * width:
                out.append("\n")
            else:
                out.append(" ")
        out.append(line)
        last, blank_before = line, False
    return "".join(out)
