"""The outline the index keeps: an extractor's headings and pages checked against its text, with each section's
tokens."""

from __future__ import annotations

from granrag_mcp.indexing.formats.base import ExtractedText, Section
from granrag_mcp.indexing.structure import MAX_TITLE_CHARS, outline_of
from granrag_mcp.outline import EMPTY
from granrag_mcp.tokens import get_tokenizer

TOKENIZER = get_tokenizer("cl100k_base")
TEXT = "Top\nsome words here\nSub one\nmore words in the first part\nSub two\nthe last words\n"


def extracted(sections: tuple[Section, ...], pages: tuple[int, ...] = ()) -> ExtractedText:
    return ExtractedText(TEXT, False, sections=sections, page_starts=pages)


def test_each_section_counts_the_tokens_of_its_whole_span() -> None:
    sub_one, sub_two = TEXT.index("Sub one"), TEXT.index("Sub two")
    outline = outline_of(
        extracted((Section(0, 1, "Top"), Section(sub_one, 2, "Sub one"), Section(sub_two, 2, "Sub two"))),
        TOKENIZER,
    )
    count = TOKENIZER.count
    assert outline.tokens == (
        count(TEXT[:sub_one]) + count(TEXT[sub_one:sub_two]) + count(TEXT[sub_two:]),
        count(TEXT[sub_one:sub_two]),
        count(TEXT[sub_two:]),
    )


def test_malformed_headings_and_pages_are_dropped_not_fatal() -> None:
    sub_one = TEXT.index("Sub one")
    outline = outline_of(
        extracted(
            (
                Section(sub_one, 0, "  Sub\n one  "),  # out of order, level 0, a line break in its title
                Section(0, 1, "Top"),
                Section(0, 2, "Also at 0"),  # a second heading at one place
                Section(len(TEXT) + 5, 1, "Past the end"),
                Section(5, 1, "   "),
                Section(-1, 1, "Before the start"),
            ),
            pages=(0, 30, 20, len(TEXT) + 1),
        ),
        TOKENIZER,
    )
    assert outline.sections == (Section(0, 1, "Top"), Section(sub_one, 1, "Sub one"))
    assert outline.page_starts == (0, 30)


def test_long_titles_are_cut_and_unstructured_text_has_no_outline() -> None:
    outline = outline_of(extracted((Section(0, 1, "word " * 200),)), TOKENIZER)
    assert len(outline.sections[0].title) == MAX_TITLE_CHARS
    assert outline_of(extracted(()), TOKENIZER) is EMPTY
