"""A PDF's ruled tables (pdfplumber, the `pdf-tables` extra) in the table form every format shares (`rows`: one
line per row, each cell after its column's header), with their captions, and joined where a table runs on from
the foot of one page to the head of the next: the part on the next page is read as more rows under the first
part's header (a header row the next page repeats is dropped), and it leads that page's text, so the table's rows
stand together across the page break and a span of them cites every page they cover; its caption comes again
every so many rows (`rows.captioned`), as in a sheet of the same table."""

from __future__ import annotations

import difflib
import io
import logging
import re
from dataclasses import dataclass, field

from granrag_mcp.indexing.formats.rows import captioned, cell_text, is_caption, row_lines

log = logging.getLogger(__name__)
CAPTION_REACH = 3.0
"""A caption stands within this many of its line heights above the table (or below it)."""
FOOT = 0.6
"""A table that ends below this share of its page's height may run on to the next page."""
HEAD = 0.4
"""A table that starts above this share of its page's height may continue one from the page before."""


@dataclass
class PageTable:
    """One table as pdfplumber finds it on one page: its rows, its caption, where it stands (fractions of height)."""

    page: int  # 0-based
    rows: list[list[str]]
    top: float
    bottom: float
    caption: str = ""


@dataclass
class Table:
    """A table, possibly over several pages: its header, its caption, and its data rows in parts, one per page."""

    header: list[str]
    caption: str
    parts: list[tuple[int, list[list[str]]]] = field(default_factory=list)  # (0-based page, rows on it)

    @property
    def pages(self) -> list[int]:
        return [page for page, _ in self.parts]


def leading(tables: list[Table]) -> dict[int, list[str]]:
    """The blocks of each page that continue a table from the page before (they come before the page's text)."""
    return _split(tables, continued=True)


def trailing(tables: list[Table]) -> dict[int, list[str]]:
    """The blocks of each page that start a table, under its caption (they follow the page's text). Every row
    names its columns, so a chunk that starts in the middle of a table still carries its header."""
    return _split(tables, continued=False)


def _split(tables: list[Table], continued: bool) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for table in tables:
        # The whole table's lines, captioned as one table, so its caption comes where a sheet of it would show it.
        lines = captioned([row_lines([table.header, *rows]) for _, rows in table.parts], table.caption)
        for n, ((page, rows), part) in enumerate(zip(table.parts, lines)):
            if (n > 0) != continued or (n > 0 and not rows):
                continue
            found.setdefault(page, []).append("\n".join(part))
    return found


def without_cells(text: str, page: int, found: list[PageTable]) -> str:
    """A page's text with the cells of its tables taken out, where they run in the text as in the table (row by
    row): the table form holds them, each under its column's header, and a copy without the header would be
    found in their place (the caption stays, as the page prints it). Only the stretch of text where the table's
    cells run longest is cut, so the same words in the prose around it stay."""
    for table in (t for t in found if t.page == page):
        cells = [word for row in table.rows for cell in row for word in cell.split()]
        words = list(_WORD.finditer(text))
        if not cells or not words:
            continue
        blocks = [
            b
            for b in difflib.SequenceMatcher(
                None, [w.group() for w in words], cells, autojunk=False
            ).get_matching_blocks()
            if b.size >= MIN_RUN
        ]
        if not blocks:
            continue
        long = [b for b in blocks if b.size >= ZONE_RUN] or [max(blocks, key=lambda b: b.size)]
        first, last = min(b.a for b in long), max(b.a + b.size for b in long)
        cuts = [(words[b.a].start(), words[b.a + b.size - 1].end()) for b in blocks if first <= b.a < last]
        for start, end in reversed(cuts):
            text = text[:start] + text[end:]
    return _BLANK_LINES.sub("\n\n", "\n".join(line.strip() for line in text.split("\n"))).strip()


MIN_RUN = 2
"""Words of a table's cells that must run in the page text in the table's order to be taken as its copy."""
ZONE_RUN = 3
"""Runs this long mark where the table's copy stands in the page text; shorter runs are cut only inside it."""
_WORD = re.compile(r"\S+")
_BLANK_LINES = re.compile(r"\n{3,}")


def joined(found: list[PageTable]) -> list[Table]:
    """The tables of a document, each table that runs on to the next page joined with its continuation there.

    A part continues the table before it when that table is the last one on the page before and ends near its
    foot, the part is the first on its page, starts near its head, has no caption of its own and as many columns.
    """
    tables: list[Table] = []
    last: PageTable | None = None
    for part in found:
        rows = [row for row in part.rows if any(row)]
        if not rows:
            continue
        previous = tables[-1] if tables else None
        if (
            previous is not None
            and last is not None
            and last.page == part.page - 1
            and last.bottom >= FOOT
            and part.top <= HEAD
            and not part.caption
            and len(rows[0]) == len(previous.header)
            and not any(t.page == part.page and t.top < part.top for t in found if t is not part)
        ):
            if rows[0] == previous.header:  # the header printed again on the new page
                rows = rows[1:]
            previous.parts.append((part.page, rows))
        else:
            tables.append(Table(header=rows[0], caption=part.caption, parts=[(part.page, rows[1:])]))
        last = part
    return tables


def find_tables(data: bytes, page_numbers: list[int]) -> list[PageTable]:
    """The tables pdfplumber finds on the given pages (0-based), in reading order; none where it is not installed
    (the cells are still in the page's text) or cannot read the file."""
    if not page_numbers:
        return []
    try:
        import pdfplumber
    except ImportError:  # tables are an extra: without it the cells are still in the page's text
        return []
    found: list[PageTable] = []
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number in page_numbers:
                page = pdf.pages[number]
                height = float(page.height) or 1.0
                for table in sorted(page.find_tables(), key=lambda t: (t.bbox[1], t.bbox[0])):
                    rows = [[cell_text(cell) for cell in row] for row in table.extract() if row]
                    x0, top, x1, bottom = table.bbox
                    found.append(
                        PageTable(number, rows, top / height, bottom / height, _caption(page, x0, top, x1, bottom))
                    )
    except Exception as error:  # noqa: BLE001 - the tables are a bonus: the page text already holds the cells
        log.debug("tables not read: %s", error)
        return found
    return found


def _caption(page: object, x0: float, top: float, x1: float, bottom: float) -> str:
    """The caption line just above the table (or else just below it), where one opens with a table's name."""
    lines = page.extract_text_lines()  # type: ignore[attr-defined]
    sizes = [float(line["bottom"]) - float(line["top"]) for line in lines] or [12.0]
    reach = CAPTION_REACH * max(sizes)
    above = [line for line in lines if top - reach <= float(line["bottom"]) <= top + 1]
    below = [line for line in lines if bottom - 1 <= float(line["top"]) <= bottom + reach]
    nearest = [*sorted(above, key=lambda line: -float(line["bottom"])), *sorted(below, key=lambda line: line["top"])]
    for line in nearest:
        text = " ".join(str(line["text"]).split())
        if is_caption(text) and float(line["x1"]) > x0 and float(line["x0"]) < x1:
            return text
    return ""
