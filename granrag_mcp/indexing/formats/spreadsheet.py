"""Excel (.xlsx, openpyxl in read-only mode): each sheet a level-1 section named by the sheet, its rows as
`header: value` lines (`rows`), cached formula results rather than formulas."""

from __future__ import annotations

import io
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.archive import check_archive, is_xml
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.rows import row_lines

SHEET_PARTS = ("xl/worksheets/",)
"""Parts openpyxl reads row by row in read-only mode: a million-row sheet is a table to read, not a bomb, so they
are held to the compression ratio, not to the part size nor counted as a tree."""
STREAMED_PARTS = (*SHEET_PARTS, "xl/sharedStrings.xml")
"""Parts not counted as a tree: the sheets, and the shared strings (a flat list, bounded by the part size)."""


def tree_parsed(name: str) -> bool:
    """The XML parts openpyxl parses whole (workbook, styles, theme), whose elements are counted."""
    return is_xml(name) and not name.startswith(STREAMED_PARTS)


def extract(path: Path, data: bytes) -> ExtractedText:
    import openpyxl  # only a run that reads a spreadsheet pays for importing it

    check_archive(path, data, tree_parsed, lambda name: name.startswith(SHEET_PARTS))
    builder = TextBuilder()
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            for sheet in workbook.worksheets:
                if hasattr(sheet, "reset_dimensions"):
                    # The declared size (<dimension ref="A1:XFD1048576"/>) would pad every row to its width: read
                    # the cells that are there instead.
                    sheet.reset_dimensions()
                lines = row_lines(sheet.iter_rows(values_only=True))
                if lines:
                    builder.heading(sheet.title, 1)
                    builder.block("\n".join(lines))
        finally:
            workbook.close()
    except Exception as error:  # openpyxl and zipfile raise many types on damaged files
        raise ExtractionError(path, f"unreadable Excel file ({type(error).__name__}: {error})") from error
    return builder.build()
