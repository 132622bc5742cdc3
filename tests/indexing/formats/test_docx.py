from __future__ import annotations

import io
from pathlib import Path

import docx
import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import docx as docx_format
from tests.indexing.formats.sections import outline


def build_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Annual report", level=0)  # the Title style
    document.add_paragraph("Opening words.")
    document.add_heading("Methods", level=1)
    document.add_paragraph("We measured things.")
    document.add_heading("Statistical analysis", level=2)
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [["Name", "Age"], ["Bob", "32"]]):
        for cell, value in zip(row.cells, values):
            cell.text = value
    document.add_paragraph("")
    document.add_heading("Results", level=1)
    document.add_paragraph("It worked.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_paragraphs_tables_and_headings_in_document_order() -> None:
    extracted = docx_format.extract(Path("r.docx"), build_docx())
    assert extracted.text == (
        "Annual report\n\nOpening words.\n\nMethods\n\nWe measured things.\n\nStatistical analysis\n\n"
        "Name | Age\nBob | 32\n\nResults\n\nIt worked."
    )
    assert outline(extracted) == [(1, "Annual report"), (1, "Methods"), (2, "Statistical analysis"), (1, "Results")]
    assert [s.start for s in extracted.sections] == [0, 31, 61, 104]
    assert extracted.page_starts == ()


@pytest.mark.parametrize(
    ("style", "level"), [("Title", 1), ("Heading 1", 1), ("heading 3", 3), ("Normal", None), ("Heading", None)]
)
def test_heading_level_by_style_name(style: str, level: int | None) -> None:
    assert docx_format.heading_level(style) == level


def test_a_damaged_word_file_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable Word file"):
        docx_format.extract(Path("bad.docx"), b"PK\x03\x04 not a zip")
