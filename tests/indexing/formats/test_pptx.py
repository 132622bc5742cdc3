from __future__ import annotations

import io
from pathlib import Path

import pptx
import pytest
from pptx.util import Inches

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import pptx as pptx_format
from tests.indexing.formats.sections import outline, pages


def build_pptx() -> bytes:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Quarterly results"
    first.placeholders[1].text = "Revenue grew.\nCosts fell."
    first.notes_slide.notes_text_frame.text = "Mention the new office."
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title, no text
    third = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    third.shapes.title.text = "Staff"
    table = third.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for row, values in enumerate([["Name", "Age"], ["Bob", "32"]]):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_a_slide_is_a_page_its_title_a_heading_and_its_notes_included() -> None:
    extracted = pptx_format.extract(Path("d.pptx"), build_pptx())
    assert pages(extracted) == [
        "Quarterly results\n\nRevenue grew.\nCosts fell.\n\nNotes: Mention the new office.",
        "",
        "Staff\n\nName: Bob; Age: 32",
    ]
    assert extracted.page_starts == (0, 78, 78)
    assert outline(extracted) == [(1, "Quarterly results"), (1, "Staff")]
    assert [s.start for s in extracted.sections] == [0, 78]


def test_a_damaged_deck_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable PowerPoint file"):
        pptx_format.extract(Path("bad.pptx"), b"not a deck")


def test_a_slide_table_is_in_the_table_form_a_merged_cell_once() -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Mills"
    table = slide.shapes.add_table(4, 3, Inches(1), Inches(2), Inches(6), Inches(2)).table
    values = [
        ["Mills by town", "", ""],
        ["Town", "Mill", "Keeper"],
        ["Elwyn", "North mill", "Hale"],
        ["Marrow", "", ""],
    ]
    for row, cells in enumerate(values):
        for column, value in enumerate(cells):
            table.cell(row, column).text = value
    table.cell(0, 0).merge(table.cell(0, 2))
    table.cell(3, 1).merge(table.cell(3, 2))
    table.cell(3, 1).text = "closed"
    buffer = io.BytesIO()
    deck.save(buffer)
    extracted = pptx_format.extract(Path("m.pptx"), buffer.getvalue())
    assert pages(extracted) == [
        "Mills\n\nMills by town\nTown: Elwyn; Mill: North mill; Keeper: Hale\nTown: Marrow; Mill: closed"
    ]  # the merged title row is the caption, as in a sheet
