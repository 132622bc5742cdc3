from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import pdf
from tests.indexing.formats.sections import outline as outline_of
from tests.indexing.formats.sections import pages


def build_pdf(page_lines: list[list[str]], table_on: int | None = None) -> bytes:
    """A PDF with reportlab: each page's lines drawn top-down; a ruled 2x2 table on page `table_on`."""
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    for number, lines in enumerate(page_lines):
        y = 780
        for line in lines:
            sheet.drawString(72, y, line)
            y -= 20
        if number == table_on:
            cells = [["Name", "Age"], ["Bob", "32"]]
            for row, values in enumerate(cells):
                for column, value in enumerate(values):
                    x, top = 72 + column * 100, 500 - row * 30
                    sheet.rect(x, top - 30, 100, 30)
                    sheet.drawString(x + 5, top - 20, value)
        sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def test_each_page_starts_where_its_text_does() -> None:
    data = build_pdf([["First page, line one.", "Line two."], ["Second page."], ["Third page."]])
    extracted = pdf.extract(Path("r.pdf"), data)
    assert pages(extracted) == ["First page, line one. Line two.", "Second page.", "Third page."]
    assert extracted.page_starts == (0, 33, 47)
    assert extracted.sections == ()


def test_lines_are_joined_into_paragraphs_and_headings_keep_their_lines() -> None:
    page = "\n".join(
        [
            "Methods",
            "The samples were taken at dawn from the upper",
            "reaches of the river and kept cold until read.",
            "A short last line.",
            "Next paragraph starts here and runs on to the",
            "margin before it stops.",
        ]
    )
    assert pdf.reflow(page) == (
        "Methods\nThe samples were taken at dawn from the upper reaches of the river and kept cold until read. "
        "A short last line.\n\nNext paragraph starts here and runs on to the margin before it stops."
    )
    assert pdf.reflow("One.\n\nTwo.") == "One.\n\nTwo."


def test_a_blank_page_keeps_its_number_and_adds_no_text() -> None:
    extracted = pdf.extract(Path("r.pdf"), build_pdf([["one"], [], ["three"]]))
    assert extracted.text == "one\n\nthree"
    assert extracted.page_starts == (0, 5, 5)
    assert pages(extracted) == ["one", "", "three"]


def test_a_pdf_without_a_text_layer_is_skipped_saying_it_looks_scanned() -> None:
    with pytest.raises(ExtractionError, match="no text layer .*scanned PDF.*OCR"):
        pdf.extract(Path("scan.pdf"), build_pdf([[], []]))


def test_garbage_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable PDF"):
        pdf.extract(Path("bad.pdf"), b"%PDF-1.4 not really")


def test_a_ruled_table_follows_its_page_as_rows_under_their_header_when_pdfplumber_is_installed() -> None:
    pytest.importorskip("pdfplumber")
    extracted = pdf.extract(Path("t.pdf"), build_pdf([["Before the table."], ["Staff list"]], table_on=1))
    second = pages(extracted)[1]
    assert second.endswith("\n\nName: Bob; Age: 32")
    assert pages(extracted)[0] == "Before the table."


def test_without_pdfplumber_a_table_is_only_its_cells_in_the_page_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pdfplumber", None)  # what an install without the pdf-tables extra sees
    extracted = pdf.extract(Path("t.pdf"), build_pdf([["Staff list"]], table_on=0))
    assert "|" not in extracted.text
    assert extracted.text.split() == ["Staff", "list", "Name", "Age", "Bob", "32"]


def test_bookmarks_are_sections_where_their_titles_stand_on_their_pages() -> None:
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    outline = [
        [("Introduction", 0), ("Opening words.", None)],
        [("Some text first.", None), ("Methods", 1), ("We measured.", None), ("Missing title", None)],
        [("Results", 0), ("It worked.", None)],
    ]
    for number, lines in enumerate(outline):
        for row, (line, level) in enumerate(lines):
            sheet.drawString(72, 780 - 20 * row, line)
            if level is not None:
                sheet.bookmarkPage(f"m{number}{row}")
                sheet.addOutlineEntry(line, f"m{number}{row}", level=level)
        if number == 1:
            sheet.bookmarkPage("nowhere")
            sheet.addOutlineEntry("Not on its page", "nowhere", level=1)
        sheet.showPage()
    sheet.save()
    extracted = pdf.extract(Path("b.pdf"), buffer.getvalue())
    assert outline_of(extracted) == [(1, "Introduction"), (2, "Methods"), (1, "Results")]
    assert [s.start for s in extracted.sections] == [0, extracted.text.index("Methods"), extracted.page_starts[2]]
