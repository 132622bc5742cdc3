"""PDF tables on PDFs written here with reportlab: a ruled table that runs on to the next page is one table under
one header and caption, its rows standing together across the page break; tables of their own stay apart; a
sheet and a PDF holding the same table give the same lines."""

from __future__ import annotations

import io
from bisect import bisect_right
from pathlib import Path

import openpyxl
import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from granrag_mcp.indexing.formats import pdf, pdf_tables, rows, spreadsheet
from granrag_mcp.indexing.formats.base import ExtractedText
from tests.indexing.formats.sections import pages

pytest.importorskip("pdfplumber")

HEADER = ["Town", "Mill", "Keeper"]
ROWS = [[f"Town{n:02d}", f"mill-{n}", f"Keeper{chr(65 + n % 26)}{n}"] for n in range(40)]
CAPTION = "Table 3: Mills and their keepers"
ROW_HEIGHT = 20
WIDTH = 120


def draw_table(sheet: canvas.Canvas, top: float, rows: list[list[str]]) -> float:
    """A ruled table whose top edge is at `top` (points from the bottom); returns its bottom edge."""
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            x, y = 72 + c * WIDTH, top - (r + 1) * ROW_HEIGHT
            sheet.rect(x, y, WIDTH, ROW_HEIGHT)
            sheet.drawString(x + 4, y + 6, value)
    return top - len(rows) * ROW_HEIGHT


def split_table_pdf(*, repeat_header: bool = True, caption_on_second: str = "", columns_second: int = 3) -> bytes:
    """Page 1: a paragraph, 'Table 3: Mills and their keepers', the table to the foot of the page; page 2: the rest
    of the table at its head (its header printed again), then a paragraph."""
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    sheet.drawString(72, 790, "The survey of the valley counted every working mill.")
    sheet.drawString(72, 750, "Table 3: Mills and their keepers")
    first = 30
    draw_table(sheet, 740, [HEADER, *ROWS[:first]])
    sheet.showPage()
    top = 800.0
    if caption_on_second:
        sheet.drawString(72, 805, caption_on_second)
        top = 795.0
    rest = [row[:columns_second] for row in ROWS[first:]]
    header = HEADER[:columns_second]
    bottom = draw_table(sheet, top, [header, *rest] if repeat_header else rest)
    sheet.drawString(72, bottom - 30, "After the table the survey turns to the roads.")
    sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def page_of(extracted: ExtractedText, offset: int) -> int:
    return bisect_right(list(extracted.page_starts), offset)


def row_line(row: list[str], header: list[str] = HEADER) -> str:
    return "; ".join(f"{h}: {v}" for h, v in zip(header, row))


def test_a_table_run_on_to_the_next_page_is_one_table_whose_rows_stand_together_across_the_break() -> None:
    extracted = pdf.extract(Path("survey.pdf"), split_table_pdf())
    text = extracted.text
    lines = [row_line(row) for row in ROWS]
    first_part, second_part = rows.captioned([lines[:30], lines[30:]], CAPTION)
    assert first_part[0] == CAPTION and second_part.count(CAPTION) == 1  # again after CAPTION_EVERY_CHARS of rows
    block = "\n".join(first_part) + "\n\n" + "\n".join(second_part)
    start = text.index(block)  # caption, then every row under the one header, the header row not read as data
    assert text.count("Town: Town00;") == 1 and "Town: Town;" not in text
    assert text.count("Town35") == 1, "the page's own copy of the cells, without their header, is taken out"
    end = start + len(block)
    assert (page_of(extracted, start), page_of(extracted, end - 1)) == (1, 2)  # it cites both pages
    first, second = pages(extracted)
    assert second.startswith(second_part[0])  # the rows run on lead the page they are printed on
    assert second.endswith("After the table the survey turns to the roads.")
    assert first.startswith("The survey of the valley")


def test_the_cells_words_in_the_prose_around_the_table_stay() -> None:
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    sheet.drawString(72, 790, "Each keeper wrote to Town07 mill-7 about Town08 and its mill-8 in spring.")
    draw_table(sheet, 740, [HEADER, *ROWS[:10]])
    sheet.drawString(72, 500, "Afterwards KeeperH7 and KeeperI8 Town09 met to settle it.")
    sheet.showPage()
    sheet.save()
    text = pdf.extract(Path("mills.pdf"), buffer.getvalue()).text
    assert text.startswith("Each keeper wrote to Town07 mill-7 about Town08 and its mill-8 in spring.")
    assert "Afterwards KeeperH7 and KeeperI8 Town09 met to settle it." in text
    assert text.count("Town05") == 1 and row_line(ROWS[5]) in text


def test_a_header_not_printed_again_is_still_the_first_pages_header() -> None:
    text = pdf.extract(Path("survey.pdf"), split_table_pdf(repeat_header=False)).text
    assert all(row_line(row) in text for row in ROWS)


@pytest.mark.parametrize(
    ("options", "why"),
    [({"caption_on_second": "Table 4: Ferries"}, "a caption of its own"), ({"columns_second": 2}, "other columns")],
)
def test_a_table_at_the_head_of_the_next_page_with_its_own_caption_or_columns_is_another_table(
    options: dict[str, object], why: str
) -> None:
    extracted = pdf.extract(Path("survey.pdf"), split_table_pdf(**options))  # type: ignore[arg-type]
    header = HEADER[: int(options.get("columns_second", 3))]  # type: ignore[call-overload]
    caption = [str(options["caption_on_second"])] if "caption_on_second" in options else []
    second = "\n".join([*caption, *(row_line(row[: len(header)], header) for row in ROWS[30:])])
    first, page_two = pages(extracted)
    assert first.endswith(row_line(ROWS[29])), why  # the first table ends on its page
    assert page_two.endswith("the roads.\n\n" + second), why  # the second follows its page's text, on its own


def test_parts_are_joined_only_from_the_foot_of_one_page_to_the_head_of_the_next() -> None:
    rows = [["a", "b"], ["1", "2"]]
    foot = pdf_tables.PageTable(0, rows, 0.5, 0.9)
    head = pdf_tables.PageTable(1, [["3", "4"]], 0.1, 0.2)
    assert [t.pages for t in pdf_tables.joined([foot, head])] == [[0, 1]]
    mid_page = pdf_tables.PageTable(0, rows, 0.2, 0.4)
    assert [t.pages for t in pdf_tables.joined([mid_page, head])] == [[0], [1]]
    low_on_next = pdf_tables.PageTable(1, [["3", "4"]], 0.5, 0.7)
    assert [t.pages for t in pdf_tables.joined([foot, low_on_next])] == [[0], [1]]
    two_pages_on = pdf_tables.PageTable(2, [["3", "4"]], 0.1, 0.2)
    assert [t.pages for t in pdf_tables.joined([foot, two_pages_on])] == [[0], [2]]


def test_a_sheet_and_a_pdf_with_the_same_table_give_the_same_lines() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Mills"
    for row in [["Table 3: Mills and their keepers"], HEADER, *ROWS]:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    from_sheet = spreadsheet.extract(Path("mills.xlsx"), buffer.getvalue()).text.split("\n\n", 1)[1]
    from_pdf = pdf.extract(Path("survey.pdf"), split_table_pdf()).text
    assert from_sheet.split("\n") == [line for line in from_pdf.split("\n") if line.startswith(("Table 3", "Town:"))]


def long_table_pdf(pages: int) -> tuple[bytes, dict[str, int]]:
    """A paragraph, the caption and a table that fills `pages` pages, its header printed again at the head of each
    later page, then a paragraph; and the page (from 1) each row's first cell is printed on."""
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    sheet.drawString(72, 790, "The survey of the valley counted every working mill.")
    sheet.drawString(72, 750, CAPTION)
    per_page = 34
    long_rows = [[f"Town{n:03d}", f"mill-{n}", f"Keeper{chr(65 + n % 26)}{n}"] for n in range(per_page * pages)]
    printed_on: dict[str, int] = {}
    for page in range(pages):
        part = long_rows[page * per_page : (page + 1) * per_page]
        printed_on |= {row[0]: page + 1 for row in part}
        bottom = draw_table(sheet, 740 if page == 0 else 800, [HEADER, *part])
        if page == pages - 1:
            sheet.drawString(72, bottom - 30, "After the table the survey turns to the roads.")
        sheet.showPage()
    sheet.save()
    return buffer.getvalue(), printed_on


def test_a_table_longer_than_a_broad_chunk_is_cut_into_parts_each_under_its_caption_citing_its_rows_pages() -> None:
    from granrag_mcp.indexing.chunking import chunk_document
    from granrag_mcp.settings import ChunkSettings
    from granrag_mcp.tokens import get_tokenizer

    data, printed_on = long_table_pdf(pages=5)
    extracted = pdf.extract(Path("long.pdf"), data)
    text = extracted.text
    assert [t.pages for t in pdf_tables.joined(pdf_tables.find_tables(data, list(range(5))))] == [[0, 1, 2, 3, 4]]
    spans = [s for s in chunk_document(text, get_tokenizer(), ChunkSettings()) if s.level == "broad"]
    holding = [s for s in spans if "Town: Town" in text[s.start : s.end]]
    assert len(holding) >= 2, "the table is longer than one broad chunk"
    for span in holding:
        chunk = text[span.start : span.end]
        assert CAPTION in chunk, f"broad chunk {span.seq} is cut off from the table's caption"
        cited = range(page_of(extracted, span.start), page_of(extracted, span.end - 1) + 1)
        towns = [line.split(";")[0].removeprefix("Town: ") for line in chunk.split("\n") if line.startswith("Town: ")]
        assert towns and {printed_on[town] for town in towns if town in printed_on} <= set(cited)
        assert len(cited) < 5 or span.seq == 0, "a part cites the pages of its own rows, not the whole table's"
