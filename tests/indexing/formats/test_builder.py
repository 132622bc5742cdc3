from __future__ import annotations

from granrag_mcp.indexing.formats.base import ExtractedText, Section
from granrag_mcp.indexing.formats.builder import TextBuilder


def test_blocks_are_joined_by_a_blank_line_and_headings_recorded_where_they_land() -> None:
    builder = TextBuilder()
    builder.heading("  Intro\n  part ", 1)
    builder.block("Body one.")
    builder.block("   ")
    builder.heading("Details", 2)
    built = builder.build()
    assert built.text == "Intro part\n\nBody one.\n\nDetails"
    assert built.sections == (Section(0, 1, "Intro part"), Section(23, 2, "Details"))
    assert built.page_starts == ()


def test_a_page_starts_at_its_first_block_and_an_empty_page_at_the_next_one() -> None:
    builder = TextBuilder()
    builder.start_page()
    builder.block("one")
    builder.start_page()  # blank
    builder.start_page()
    builder.block("three")
    builder.start_page()  # blank, last
    built = builder.build()
    assert built.text == "one\n\nthree"
    assert built.page_starts == (0, 5, 5, 10)


def test_an_embedded_text_keeps_its_sections_at_their_new_offsets() -> None:
    builder = TextBuilder()
    builder.block("Preface")
    builder.embed(ExtractedText("\n# Head\ntext", False, sections=(Section(3, 1, "Head"),)), level_offset=1)
    built = builder.build()
    assert built.text == "Preface\n\n# Head\ntext"
    assert built.sections == (Section(11, 2, "Head"),)
