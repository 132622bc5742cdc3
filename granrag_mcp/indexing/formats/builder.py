"""The text of a structured document assembled block by block, with its headings and page starts recorded at the
offsets where they land: the formats that read a layout (PDF, DOCX, PPTX, sheets, e-books, notebooks) share it."""

from __future__ import annotations

from granrag_mcp.indexing.formats.base import ExtractedText, Section

BLOCK_SEPARATOR = "\n\n"
"""Between blocks (paragraphs, headings, pages): a blank line, which the sentence splitter reads as a break."""


def one_line(text: str) -> str:
    """A heading as it reads on one line: runs of whitespace, line breaks included, become one space."""
    return " ".join(text.split())


class TextBuilder:
    """Blocks of text joined by a blank line; a heading is a block whose offset becomes a Section, a page start the
    offset of the page's first block (or of the next page's, when a page has none)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._sections: list[Section] = []
        self._page_starts: list[int] = []
        self._pages_waiting = 0  # pages started whose first block has not come yet

    @property
    def length(self) -> int:
        return self._length

    def start_page(self) -> None:
        self._pages_waiting += 1

    def block(self, text: str) -> int | None:
        """Append a block (surrounding blank lines dropped); its start offset, or None when it holds no text."""
        text = text.strip("\n")
        if not text.strip():
            return None
        if self._parts:
            self._parts.append(BLOCK_SEPARATOR)
            self._length += len(BLOCK_SEPARATOR)
        start = self._length
        self._page_starts.extend([start] * self._pages_waiting)
        self._pages_waiting = 0
        self._parts.append(text)
        self._length += len(text)
        return start

    def heading(self, title: str, level: int) -> None:
        title = one_line(title)
        start = self.block(title)
        if start is not None:
            self._sections.append(Section(start, max(1, level), title))

    def embed(self, extracted: ExtractedText, level_offset: int = 0) -> None:
        """Append another extractor's text as one block, its sections moved to where it lands (and deepened)."""
        start = self.block(extracted.text)
        if start is None:
            return
        shift = start - (len(extracted.text) - len(extracted.text.lstrip("\n")))
        self._sections.extend(
            Section(shift + section.start, section.level + level_offset, section.title)
            for section in extracted.sections
        )

    def build(self, replaced_bytes: bool = False) -> ExtractedText:
        pages = self._page_starts + [self._length] * self._pages_waiting
        return ExtractedText(
            "".join(self._parts), replaced_bytes, sections=tuple(self._sections), page_starts=tuple(pages)
        )
