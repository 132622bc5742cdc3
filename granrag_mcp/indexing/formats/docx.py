"""Word (.docx, python-docx): paragraphs and tables in document order; a paragraph styled Title or Heading N is a
heading of that level (Title and Heading 1 both level 1)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.builder import TextBuilder

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
CELL_SEPARATOR = " | "


def heading_level(style_name: str) -> int | None:
    """The level a paragraph style gives (Title 1, Heading N N), None for a body style."""
    name = style_name.strip()
    if name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name)
    return int(match.group(1)) if match else None


def extract(path: Path, data: bytes) -> ExtractedText:
    import docx  # only a run that reads a Word file pays for importing it
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
        builder = TextBuilder()
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                builder.block(table_text(item))
                continue
            style = item.style.name if item.style is not None else ""
            level = heading_level(style or "")
            if level is not None:
                builder.heading(item.text, level)
            else:
                builder.block(item.text)
    except Exception as error:  # python-docx and lxml raise many types on damaged files
        raise ExtractionError(path, f"unreadable Word file ({type(error).__name__}: {error})") from error
    return builder.build()


def table_text(table: object) -> str:
    """A table one row per line, cells separated by " | ", a merged cell once."""
    lines = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or text != cells[-1]:  # a cell merged across columns repeats in each
                cells.append(text)
        if any(cells):
            lines.append(CELL_SEPARATOR.join(cells))
    return "\n".join(lines)
