"""Word (.docx, python-docx): paragraphs and tables in document order; a paragraph styled Title or Heading N is a
heading of that level (Title and Heading 1 both level 1). A table is written in the table form every format shares
(`rows`), under its caption: the paragraph just before it (or else just after it) that opens with a table's name and
number or is styled Caption."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.archive import check_archive
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.rows import is_caption, row_lines

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
CAPTION_STYLE = "caption"


def heading_level(style_name: str) -> int | None:
    """The level a paragraph style gives (Title 1, Heading N N), None for a body style."""
    name = style_name.strip()
    if name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name)
    return int(match.group(1)) if match else None


_WORD_NAMESPACE = {"w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main"}


def _levels(document: object) -> list[int | None]:
    """The heading level of each body paragraph and table (None), in order: read from the style ids in the XML,
    since python-docx's `Paragraph.style` scans every style for each unstyled paragraph."""
    from docx.enum.style import WD_STYLE_TYPE
    from lxml import etree

    styles = document.styles  # type: ignore[attr-defined]
    by_id = {s.style_id: heading_level(s.name or "") for s in styles if s.type == WD_STYLE_TYPE.PARAGRAPH}
    default = styles.default(WD_STYLE_TYPE.PARAGRAPH)
    default_level = heading_level(default.name or "") if default is not None else None
    blocks = etree.XPath("./w:body/*[self::w:p or self::w:tbl]", namespaces=_WORD_NAMESPACE)
    style_id = etree.XPath("string(w:pPr/w:pStyle/@w:val)", namespaces=_WORD_NAMESPACE)
    levels: list[int | None] = []
    for block in blocks(document.element):  # type: ignore[attr-defined]
        found = style_id(block) if etree.QName(block).localname == "p" else None
        levels.append(None if found is None else by_id.get(found, default_level) if found else default_level)
    return levels


def extract(path: Path, data: bytes) -> ExtractedText:
    import docx  # only a run that reads a Word file pays for importing it
    from docx.table import Table

    check_archive(path, data)  # python-docx parses every related part whole: bounded before it opens any
    try:
        document = docx.Document(io.BytesIO(data))
        items = list(document.iter_inner_content())
        levels = _levels(document)
        if len(levels) != len(items):  # a layout the XPath does not see as python-docx does: ask each paragraph
            levels = [
                None if isinstance(i, Table) or i.style is None else heading_level(i.style.name or "") for i in items
            ]
        builder = TextBuilder()
        captions = table_captions(items, levels)
        for n, (item, level) in enumerate(zip(items, levels)):
            if isinstance(item, Table):
                builder.block(table_text(item, getattr(items[captions[n]], "text", "") if n in captions else ""))
                continue
            if n in captions.values():
                continue  # written as its table's caption
            if level is not None:
                builder.heading(item.text, level)
            else:
                builder.block(item.text)
    except Exception as error:  # python-docx and lxml raise many types on damaged files
        raise ExtractionError(path, f"unreadable Word file ({type(error).__name__}: {error})") from error
    return builder.build()


def table_captions(items: Sequence[object], levels: Sequence[int | None]) -> dict[int, int]:
    """{index of a table: index of its caption paragraph}, the body paragraph just before the table, or else just
    after it, that reads as a caption (`rows.is_caption`) or is styled Caption."""
    from docx.table import Table

    def caption(n: int) -> bool:
        if not 0 <= n < len(items) or isinstance(items[n], Table) or levels[n] is not None:
            return False
        style = getattr(items[n], "style", None)
        named = (getattr(style, "name", "") or "").strip().lower() == CAPTION_STYLE
        return named or is_caption(getattr(items[n], "text", ""))

    tables = [n for n, item in enumerate(items) if isinstance(item, Table)]
    found = {n: n - 1 for n in tables if caption(n - 1)}  # above the table first: Word places captions there
    for n in tables:
        if n not in found and caption(n + 1) and n + 1 not in found.values():
            found[n] = n + 1
    return found


def table_text(table: object, caption: str = "") -> str:
    """A table in the table form (`rows`: each row's cells after its column's header), a cell merged across
    columns once, in its first column."""
    rows = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            cells.append("" if cell is previous else cell.text)  # a merged cell is the same cell in each column
            previous = cell
        rows.append(cells)
    return "\n".join(row_lines(rows, caption=caption))
