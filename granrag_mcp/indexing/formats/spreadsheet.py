"""Excel (.xlsx, openpyxl in read-only mode): each sheet a level-1 section named by the sheet, its rows as
`header: value` lines (`rows`), cached formula results rather than formulas."""

from __future__ import annotations

import io
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.rows import row_lines


def extract(path: Path, data: bytes) -> ExtractedText:
    import openpyxl  # only a run that reads a spreadsheet pays for importing it

    builder = TextBuilder()
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            for sheet in workbook.worksheets:
                lines = row_lines(sheet.iter_rows(values_only=True))
                if lines:
                    builder.heading(sheet.title, 1)
                    builder.block("\n".join(lines))
        finally:
            workbook.close()
    except Exception as error:  # openpyxl and zipfile raise many types on damaged files
        raise ExtractionError(path, f"unreadable Excel file ({type(error).__name__}: {error})") from error
    return builder.build()
