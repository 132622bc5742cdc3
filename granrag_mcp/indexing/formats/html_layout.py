"""The visible text of HTML laid out from a stream of start tags, end tags and text: one block (paragraph,
heading, list item, table row) per line, h1-h6 recorded as sections.

A paragraph-like element is set off by a blank line; a line-like one (div, li, tr, br) by a single line break.
List items get a "- " or "1. " marker so that a sentence splitter sees them as separate items. Whatever walks the
markup (the stdlib's streaming parser in `html`, or a tree) decides what is visible and feeds only that here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from granrag_mcp.indexing.formats.base import ExtractedText, Section

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
PARAGRAPH_ELEMENTS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6",
    "pre", "blockquote", "table", "dl", "section", "article", "header", "footer", "nav", "aside", "main", "figure",
    "form", "fieldset", "hr", "address", "details", "hgroup", "menu",
}  # fmt: skip
LINE_ELEMENTS = {
    "div", "li", "tr", "dt", "dd", "figcaption", "caption", "summary", "legend", "option", "thead", "tbody",
    "tfoot", "body", "html", "center", "textarea",
}  # fmt: skip
_CELL_ELEMENTS = {"td", "th"}
_COLLAPSIBLE_SPACE = re.compile(r"[ \t\n\f\xa0]+")
_CELL_SEPARATOR = " | "

Attributes = Sequence[tuple[str, str | None]]


class TextLayout:
    """The text of the visible elements fed to it, in reading order, and the headings among them."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._sections: list[Section] = []
        self._pending_newlines = 0
        self._pending_space = False
        self._after_space = True  # at the start of a line or after a space
        self._pending_marker = ""
        self._pre_depth = 0
        self._list_counters: list[int | None] = []  # None for <ul>, next number for <ol>
        self._row_has_cell = False
        self._heading: tuple[int, int, int] | None = None  # level, offset of its first character (-1 before), part

    @property
    def in_pre(self) -> bool:
        """Inside a <pre>: its text keeps its spaces and line breaks."""
        return self._pre_depth > 0

    def start(self, tag: str, attrs: Attributes) -> None:
        if tag == "br":
            self._pending_newlines = min(2, self._pending_newlines + 1)
            self._pending_space = False
        elif tag in ("ul", "ol"):
            self._list_counters.append(None if tag == "ul" else _ordered_list_start(attrs))
            self._request_break(2 if len(self._list_counters) == 1 else 1)
        elif tag == "li":
            self._request_break(1)
            self._start_list_item()
        elif tag in _CELL_ELEMENTS:
            if self._row_has_cell and not self._after_space and not self._pending_newlines:
                self._pending_space = False
                self._emit(_CELL_SEPARATOR, collapse=False)
            self._row_has_cell = True
        elif tag == "pre":
            self._request_paragraph_break()
            self._pre_depth += 1
        elif tag in PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in LINE_ELEMENTS:
            self._request_break(1)
        if tag == "tr":
            self._row_has_cell = False
        if tag in HEADINGS and self._heading is None:
            self._heading = (HEADINGS[tag], -1, 0)

    def end(self, tag: str) -> None:
        if tag in HEADINGS:
            self.end_heading()
        if tag in ("ul", "ol"):
            if self._list_counters:
                self._list_counters.pop()
            self._request_break(2 if not self._list_counters else 1)
        elif tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
            self._request_paragraph_break()
        elif tag in PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in LINE_ELEMENTS:
            self._request_break(1)

    def end_heading(self) -> None:
        """Close the open heading, if any, as a section titled by its first line of text."""
        if self._heading is None:
            return
        level, start, first_part = self._heading
        self._heading = None
        title = "".join(self._parts[first_part:]).split("\n", 1)[0].strip() if start >= 0 else ""
        if title:
            self._sections.append(Section(start, level, title))

    def text(self, data: str) -> None:
        self._emit(data, collapse=not self._pre_depth)

    def result(self, title: str) -> ExtractedText:
        """The laid-out body under `title` (a blank line between; no title: the body alone), sections shifted."""
        raw = "".join(self._parts)
        body = raw.strip("\n")
        shift = (len(title) + 2 if title and body else 0) - (len(raw) - len(raw.lstrip("\n")))
        sections = tuple(Section(s.start + shift, s.level, s.title) for s in self._sections) if body else ()
        return ExtractedText(f"{title}\n\n{body}" if title and body else title or body, False, sections=sections)

    def _append(self, text: str) -> None:
        self._parts.append(text)
        self._length += len(text)

    def _start_list_item(self) -> None:
        if not self._list_counters:
            return
        number = self._list_counters[-1]
        if number is None:
            self._pending_marker = "- "
        else:
            self._pending_marker = f"{number}. "
            self._list_counters[-1] = number + 1

    def _request_break(self, newlines: int) -> None:
        self._pending_newlines = max(self._pending_newlines, newlines)
        self._pending_space = False

    def _request_paragraph_break(self) -> None:
        # Inside a list a paragraph is part of an item: keep items one per line.
        self._request_break(1 if self._list_counters else 2)

    def _emit(self, data: str, *, collapse: bool) -> None:
        trailing_space = False
        if collapse:
            data = _COLLAPSIBLE_SPACE.sub(" ", data)
            if data.startswith(" "):
                self._pending_space = True
            trailing_space = data.endswith(" ")
            data = data.strip(" ")
        if not data:
            return
        self._flush_pending_breaks()
        if self._pending_space and not self._after_space:
            self._append(" ")
        if self._heading is not None and self._heading[1] < 0:
            self._heading = (self._heading[0], self._length, len(self._parts))
        self._append(data)
        self._after_space = data[-1].isspace()
        self._pending_space = trailing_space

    def _flush_pending_breaks(self) -> None:
        # The list marker waits for the item's first text, so "<li><p>text" keeps them together.
        if self._pending_newlines and self._parts:
            last = self._parts[-1]
            already_there = len(last) - len(last.rstrip("\n"))  # <pre> text may end with a line break
            if self._pending_newlines > already_there:
                self._append("\n" * (self._pending_newlines - already_there))
            self._after_space = True
        self._pending_newlines = 0
        if self._pending_marker:
            self._append(self._pending_marker)
            self._pending_marker = ""
            self._after_space = True


def _ordered_list_start(attrs: Attributes) -> int:
    for name, value in attrs:
        if name == "start" and value and value.strip().lstrip("-").isdigit():
            return int(value)
    return 1
