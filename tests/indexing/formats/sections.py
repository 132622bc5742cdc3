"""Checks every format's test shares: each section's title stands in the text at its offset, each page start is a
page's first character."""

from __future__ import annotations

from granrag_mcp.indexing.formats.base import ExtractedText


def outline(extracted: ExtractedText) -> list[tuple[int, str]]:
    """(level, title) of each section, after checking that the title is the text at its start."""
    for section in extracted.sections:
        assert extracted.text[section.start : section.start + len(section.title)] == section.title, section
    assert [s.start for s in extracted.sections] == sorted(s.start for s in extracted.sections)
    return [(section.level, section.title) for section in extracted.sections]


def pages(extracted: ExtractedText) -> list[str]:
    """The text of each page, cut at the page starts (a page's text without the blank line before the next)."""
    starts = list(extracted.page_starts)
    ends = starts[1:] + [len(extracted.text)]
    return [extracted.text[start:end].rstrip("\n") for start, end in zip(starts, ends)]
