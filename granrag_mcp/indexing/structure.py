"""A document's outline as the index keeps it: the headings and page starts its extractor found, checked against
its text, with each section's size in tokens.

An extractor's structure is taken as a hint, never trusted to be well formed: headings outside the text or out of
order, empty titles and page starts that go backwards are dropped rather than failing the document.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate

from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.outline import EMPTY, Outline, Section
from granrag_mcp.tokens import Tokenizer

MAX_TITLE_CHARS = 300
"""Longer headings are cut here: a heading path is shown on every hit."""


def outline_of(extracted: ExtractedText, tokenizer: Tokenizer) -> Outline:
    """The outline of an extracted document, cleaned, with each section's tokens (its subsections included)."""
    text = extracted.text
    sections = _clean_sections(extracted.sections, len(text))
    pages = _clean_pages(extracted.page_starts, len(text))
    if not sections and not pages:
        return EMPTY
    # Each stretch between two consecutive headings is counted once; a section sums the stretches it spans.
    starts = [s.start for s in sections]
    summed = list(accumulate((tokenizer.count(text[a:b]) for a, b in zip(starts, [*starts[1:], len(text)])), initial=0))
    ends = Outline(sections, pages).ends(len(text))
    tokens = tuple(summed[bisect_left(starts, end)] - summed[i] for i, end in enumerate(ends))
    return Outline(sections, pages, tokens)


def _clean_sections(sections: tuple[Section, ...], length: int) -> tuple[Section, ...]:
    kept: list[Section] = []
    for section in sorted(sections, key=lambda s: s.start):
        title = " ".join(section.title.split())[:MAX_TITLE_CHARS]
        if not title or not 0 <= section.start < length:
            continue
        if kept and kept[-1].start == section.start:  # two headings at one place: the first one read stays
            continue
        kept.append(Section(section.start, max(int(section.level), 1), title))
    return tuple(kept)


def _clean_pages(page_starts: tuple[int, ...], length: int) -> tuple[int, ...]:
    kept: list[int] = []
    for start in page_starts:
        if 0 <= start <= length and (not kept or start >= kept[-1]):
            kept.append(int(start))
    return tuple(kept)
