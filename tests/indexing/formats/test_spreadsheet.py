from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import spreadsheet
from tests.indexing.formats.sections import outline


def build_xlsx() -> bytes:
    workbook = openpyxl.Workbook()
    staff = workbook.active
    staff.title = "Staff"
    for row in [["Name", "Age", None], ["Bob", 32, "extra"], [None, None, None], ["Ann", 41.0, None]]:
        staff.append(row)
    workbook.create_sheet("Empty")
    costs = workbook.create_sheet("Costs")
    costs.append(["Item", "Cost"])
    costs.append(["Rent", 1200.5])
    costs.append(["Total", "=B2*2"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_each_sheet_is_a_section_and_each_row_a_header_value_line() -> None:
    extracted = spreadsheet.extract(Path("b.xlsx"), build_xlsx())
    assert extracted.text == (
        "Staff\n\nName: Bob; Age: 32; column 3: extra\nName: Ann; Age: 41\n\n"
        "Costs\n\nItem: Rent; Cost: 1200.5\nItem: Total"  # a formula openpyxl never computed has no cached value
    )
    assert outline(extracted) == [(1, "Staff"), (1, "Costs")]
    assert extracted.page_starts == ()


def test_a_damaged_workbook_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable Excel file"):
        spreadsheet.extract(Path("bad.xlsx"), b"PK\x03\x04broken")
