from __future__ import annotations

import io
from pathlib import Path

import docx
import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import docx as docx_format
from granrag_mcp.indexing.formats.rows import row_lines
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
        "Name: Bob; Age: 32\n\nResults\n\nIt worked."
    )
    assert outline(extracted) == [(1, "Annual report"), (1, "Methods"), (2, "Statistical analysis"), (1, "Results")]
    assert [s.start for s in extracted.sections] == [0, 31, 61, 103]
    assert extracted.page_starts == ()


@pytest.mark.parametrize(
    ("style", "level"), [("Title", 1), ("Heading 1", 1), ("heading 3", 3), ("Normal", None), ("Heading", None)]
)
def test_heading_level_by_style_name(style: str, level: int | None) -> None:
    assert docx_format.heading_level(style) == level


def test_a_damaged_word_file_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable Word file"):
        docx_format.extract(Path("bad.docx"), b"PK\x03\x04 not a zip")


def test_a_word_table_is_in_the_table_form_under_its_caption_a_merged_cell_once() -> None:
    document = docx.Document()
    document.add_paragraph("The staff of the mill.")
    document.add_paragraph("Table 2: Staff and ages")
    table = document.add_table(rows=4, cols=3)
    values = [["Name", "Age", "Joined"], ["Bob", "32", "32"], ["Ann", "", ""], ["Cal", "41", "2001"]]
    for row, cells in zip(table.rows, values):
        for cell, value in zip(row.cells, cells):
            cell.text = value
    table.cell(2, 1).merge(table.cell(2, 2)).text = "retired"
    document.add_paragraph("After the table.")
    buffer = io.BytesIO()
    document.save(buffer)
    extracted = docx_format.extract(Path("staff.docx"), buffer.getvalue())
    assert extracted.text == (
        "The staff of the mill.\n\nTable 2: Staff and ages\nName: Bob; Age: 32; Joined: 32\nName: Ann; Age: retired\n"
        "Name: Cal; Age: 41; Joined: 2001\n\nAfter the table."
    )  # two cells of the same text both kept, a merged cell once; the caption heads the table's block
    expected = row_lines([values[0], values[1], ["Ann", "retired", ""], values[3]], caption="Table 2: Staff and ages")
    assert extracted.text.split("\n\n")[1].split("\n") == expected  # the form a sheet of the same table gives


def test_a_caption_after_a_word_table_is_its_caption_and_a_plain_paragraph_is_not() -> None:
    document = docx.Document()
    document.add_paragraph("Counts by year.")
    table = document.add_table(rows=2, cols=2)
    for row, cells in zip(table.rows, [["Year", "Count"], ["1901", "7"]]):
        for cell, value in zip(row.cells, cells):
            cell.text = value
    document.add_paragraph("Tab. 4 Mills counted")
    buffer = io.BytesIO()
    document.save(buffer)
    extracted = docx_format.extract(Path("counts.docx"), buffer.getvalue())
    assert extracted.text == "Counts by year.\n\nTab. 4 Mills counted\nYear: 1901; Count: 7"


def test_a_caption_between_two_tables_heads_the_one_below_it() -> None:
    document = docx.Document()
    for caption in ("", "Table 2: Mills"):
        if caption:
            document.add_paragraph(caption)
        table = document.add_table(rows=2, cols=2)
        for row, cells in zip(table.rows, [["Town", "Count"], ["Elwyn", "3"]]):
            for cell, value in zip(row.cells, cells):
                cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    extracted = docx_format.extract(Path("two.docx"), buffer.getvalue())
    assert extracted.text == "Town: Elwyn; Count: 3\n\nTable 2: Mills\nTown: Elwyn; Count: 3"
