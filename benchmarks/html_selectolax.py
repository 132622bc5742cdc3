"""The HTML extractor built on selectolax (lexbor), kept as the candidate that bench_formats.py measures against
granrag_mcp/indexing/formats/html.py: the same text rules over a browser-built tree instead of a stream."""

from __future__ import annotations

import codecs
import dataclasses
import re
from pathlib import Path
from typing import Any

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, Section, decode_text, normalise_newlines

_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_CHARSET_SNIFF_BYTES = 4096
# Browsers read these labels as windows-1252, and so do we.
_WINDOWS_1252_ALIASES = {"latin-1", "iso8859-1", "ascii"}


def html_encoding(data: bytes) -> str | None:
    """The codec named by a <meta charset>, if Python knows it; None otherwise."""
    declared = _META_CHARSET.search(data[:_CHARSET_SNIFF_BYTES])
    if declared is None:
        return None
    try:
        name = codecs.lookup(declared.group(1).decode("ascii")).name
    except LookupError:
        return None
    if name in _WINDOWS_1252_ALIASES:
        return "cp1252"
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"  # a document that can declare it in ASCII is not UTF-16
    return name


_HIDDEN_ELEMENTS = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "head"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_PARAGRAPH_ELEMENTS = {
    *_HEADINGS, "p", "pre", "blockquote", "table", "dl", "section", "article", "header", "footer", "nav", "aside",
    "main", "figure", "form", "fieldset", "hr", "address", "details", "hgroup", "menu",
}  # fmt: skip
_LINE_ELEMENTS = {
    "div", "li", "tr", "dt", "dd", "figcaption", "caption", "summary", "legend", "option", "thead", "tbody",
    "tfoot", "body", "html", "center", "textarea",
}  # fmt: skip
_CELL_ELEMENTS = {"td", "th"}
_COLLAPSIBLE_SPACE = re.compile(r"[ \t\n\f\xa0]+")
_CELL_SEPARATOR = " | "


def _hides(attributes: dict[str, str | None]) -> bool:
    """Whether an element's own attributes keep it off the screen: `hidden`, or an inline style with
    display:none or visibility:hidden. Such text is not what a reader sees, and is a place to plant instructions.

    Kept: hidden="until-found" (collapsed content that find-in-page opens) and aria-hidden (it hides an element
    from screen readers only; sighted readers still see it).
    """
    if "hidden" in attributes and (attributes["hidden"] or "").strip().lower() != "until-found":
        return True
    style = attributes.get("style")
    return bool(style) and _style_hides(style or "")


def _style_hides(style: str) -> bool:
    properties: dict[str, str] = {}
    for declaration in style.split(";"):  # a later declaration of a property overrides an earlier one
        name, colon, value = declaration.partition(":")
        if colon:
            value = value.strip().lower()
            properties[name.strip().lower()] = value.removesuffix("!important").strip()
    return properties.get("display") == "none" or properties.get("visibility") in ("hidden", "collapse")


class _Writer:
    """Visible text: one block (paragraph, heading, list item, table row) per line.

    A paragraph-like element is set off by a blank line; a line-like one (div, li, tr, br) by a single line break.
    List items get a "- " or "1. " marker so that a sentence splitter sees them as separate items.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.sections: list[Section] = []
        self._pending_newlines = 0
        self._pending_space = False
        self._after_space = True  # at the start of a line or after a space
        self._pending_marker = ""
        self._pre_depth = 0
        self._list_counters: list[int | None] = []  # None for <ul>, next number for <ol>
        self._row_has_cell = False
        self._heading: tuple[int, int, int] | None = None  # level, offset of its first character (-1 before it), part

    def start(self, tag: str, attributes: dict[str, str | None]) -> None:
        if tag == "br":
            self._pending_newlines = min(2, self._pending_newlines + 1)
            self._pending_space = False
        elif tag in ("ul", "ol"):
            self._list_counters.append(None if tag == "ul" else _ordered_list_start(attributes))
            self._request_break(2 if len(self._list_counters) == 1 else 1)
        elif tag == "li":
            self._request_break(1)
            if self._list_counters:
                number = self._list_counters[-1]
                self._pending_marker = "- " if number is None else f"{number}. "
                if number is not None:
                    self._list_counters[-1] = number + 1
        elif tag in _CELL_ELEMENTS:
            if self._row_has_cell and not self._after_space and not self._pending_newlines:
                self._pending_space = False
                self._emit(_CELL_SEPARATOR, collapse=False)
            self._row_has_cell = True
        elif tag == "pre":
            self._request_paragraph_break()
            self._pre_depth += 1
        elif tag in _PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in _LINE_ELEMENTS:
            self._request_break(1)
        if tag == "tr":
            self._row_has_cell = False
        if tag in _HEADINGS and self._heading is None:
            self._heading = (_HEADINGS[tag], -1, 0)

    def end(self, tag: str) -> None:
        if tag in _HEADINGS and self._heading is not None:
            level, start, first_part = self._heading
            self._heading = None
            title = "".join(self.parts[first_part:]).split("\n", 1)[0].strip() if start >= 0 else ""
            if title:
                self.sections.append(Section(start, level, title))
        if tag in ("ul", "ol"):
            if self._list_counters:
                self._list_counters.pop()
            self._request_break(2 if not self._list_counters else 1)
        elif tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
            self._request_paragraph_break()
        elif tag in _PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in _LINE_ELEMENTS:
            self._request_break(1)

    def text(self, data: str) -> None:
        self._emit(data, collapse=not self._pre_depth)

    def _request_break(self, newlines: int) -> None:
        self._pending_newlines = max(self._pending_newlines, newlines)
        self._pending_space = False

    def _request_paragraph_break(self) -> None:
        # Inside a list a paragraph is part of an item: keep items one per line.
        self._request_break(1 if self._list_counters else 2)

    def _append(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

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
            self._heading = (self._heading[0], self.length, len(self.parts))
        self._append(data)
        self._after_space = data[-1].isspace()
        self._pending_space = trailing_space

    def _flush_pending_breaks(self) -> None:
        # The list marker waits for the item's first text, so "<li><p>text" keeps them together.
        if self._pending_newlines and self.parts:
            last = self.parts[-1]
            already_there = len(last) - len(last.rstrip("\n"))  # <pre> text may end with a line break
            if self._pending_newlines > already_there:
                self._append("\n" * (self._pending_newlines - already_there))
            self._after_space = True
        self._pending_newlines = 0
        if self._pending_marker:
            self._append(self._pending_marker)
            self._pending_marker = ""
            self._after_space = True


def _ordered_list_start(attributes: dict[str, str | None]) -> int:
    value = (attributes.get("start") or "").strip()
    return int(value) if value.lstrip("-").isdigit() else 1


def _walk(root: Any, writer: _Writer) -> None:
    """Every visible node under `root` in document order, with an explicit stack: a tree of 300,000 unclosed tags
    is 300,000 levels deep, too deep to recurse."""
    node = root.first_child
    while node is not None:
        tag = node.tag
        descend = False
        if tag == "-text":
            writer.text(node.text_content or "")
        elif not tag.startswith(("-", "_", "!")) and tag not in _HIDDEN_ELEMENTS and not _hides(node.attributes):
            writer.start(tag, node.attributes)
            descend = True
        child = node.first_child if descend else None
        if child is not None:
            node = child
            continue
        if descend:
            writer.end(tag)
        while node.next is None:
            node = node.parent
            if node is None or node.mem_id == root.mem_id:
                return
            writer.end(node.tag)
        node = node.next


def markup_text(markup: str, *, with_title: bool = True) -> ExtractedText:
    """The visible text of `markup` (newlines already normalised) with its headings: the document's title (unless
    `with_title` is False), a blank line, then its body."""
    from selectolax.lexbor import LexborHTMLParser  # only a run that reads HTML pays for importing it

    tree = LexborHTMLParser(markup)
    title_node = tree.head.css_first("title") if tree.head is not None else None
    title = " ".join((title_node.text() if title_node is not None and with_title else "").split())
    writer = _Writer()
    if tree.body is not None:
        _walk(tree.body, writer)
    raw = "".join(writer.parts)
    body = raw.strip("\n")
    lead = len(raw) - len(raw.lstrip("\n"))
    shift = (len(title) + 2 if title and body else 0) - lead
    sections = tuple(Section(s.start + shift, s.level, s.title) for s in writer.sections)
    text = f"{title}\n\n{body}" if title and body else title or body
    return ExtractedText(text, False, sections=sections if body else ())


def extract(path: Path, data: bytes) -> ExtractedText:
    markup, extracted = decode_text(path, data, html_encoding(data))
    try:
        found = markup_text(normalise_newlines(markup))
    except Exception as error:  # lexbor is lenient; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return dataclasses.replace(extracted, text=found.text, sections=found.sections)
