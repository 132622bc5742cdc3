"""HTML (.html, .htm): the visible text, markup, scripts, styles and hidden elements dropped, blocks on lines of
their own, table cells separated, h1-h6 kept as sections; decoded by the charset the document declares.

Hand-written over the stdlib's streaming parser rather than a tree builder: a page of 300,000 unclosed tags is
read in linear time and flat memory, where lexbor (selectolax) takes quadratic time (BENCHMARKS.md).
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from html.parser import HTMLParser
from pathlib import Path

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


_HIDDEN_ELEMENTS = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object"}
_HEAD_ELEMENTS = {"head", "title", "meta", "link", "base", "style", "script", "noscript", "template"}
_PARAGRAPH_ELEMENTS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6",
    "pre", "blockquote", "table", "dl", "section", "article", "header", "footer", "nav", "aside", "main", "figure",
    "form", "fieldset", "hr", "address", "details", "hgroup", "menu",
}  # fmt: skip
_LINE_ELEMENTS = {
    "div", "li", "tr", "dt", "dd", "figcaption", "caption", "summary", "legend", "option", "thead", "tbody",
    "tfoot", "body", "html", "center", "textarea",
}  # fmt: skip
_CELL_ELEMENTS = {"td", "th"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCK_CONTAINERS = _PARAGRAPH_ELEMENTS | _LINE_ELEMENTS | {"ul", "ol", "dl", "li", "dd", "dt", "select"}
# Start tags that end an open element whose end tag may be left out, and what stops them from reaching it.
_IMPLIED_END = {
    "p": _PARAGRAPH_ELEMENTS | {"div", "ul", "ol", "dl", "li", "dd", "dt", "center", "summary", "figcaption"},
    "li": {"li"},
    "dt": {"dt", "dd"},
    "dd": {"dt", "dd"},
    "option": {"option", "optgroup"},
    "tr": {"tr"},
    "td": {"td", "th", "tr"},
    "th": {"td", "th", "tr"},
}
_IMPLIED_END_SCOPE = {
    "p": set(),
    "li": {"ul", "ol", "menu"},
    "dt": {"dl"},
    "dd": {"dl"},
    "option": {"select", "datalist"},
    "tr": {"table"},
    "td": {"table"},
    "th": {"table"},
}
_COLLAPSIBLE_SPACE = re.compile(r"[ \t\n\f\xa0]+")
_CELL_SEPARATOR = " | "


def _hides(attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element's own attributes keep it off the screen: `hidden`, or an inline style with
    display:none or visibility:hidden. Such text is not what a reader sees, and is a place to plant instructions.

    Kept: hidden="until-found" (collapsed content that find-in-page opens) and aria-hidden (it hides an element
    from screen readers only; sighted readers still see it).
    """
    for name, value in attrs:
        if name == "hidden" and (value or "").strip().lower() != "until-found":
            return True
        if name == "style" and value and _style_hides(value):
            return True
    return False


def _style_hides(style: str) -> bool:
    properties: dict[str, str] = {}
    for declaration in style.split(";"):  # a later declaration of a property overrides an earlier one
        name, colon, value = declaration.partition(":")
        if colon:
            value = value.strip().lower()
            properties[name.strip().lower()] = value.removesuffix("!important").strip()
    return properties.get("display") == "none" or properties.get("visibility") in ("hidden", "collapse")


class _HiddenElement:
    """An element hidden by its attributes, followed through the tags inside it until it ends.

    html.parser does not build a tree, so its end is found the way a browser would for tidy markup: its own end
    tag, the end tag of a block that contains it, or a start tag that implies its end (a new <p> or <li>).
    """

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self._inside: list[str] = []

    def ended_by_start(self, tag: str) -> bool:
        scope = _IMPLIED_END_SCOPE.get(self.tag, set())
        if tag in _IMPLIED_END.get(self.tag, ()) and not scope.intersection(self._inside):
            return True
        if tag not in _VOID_ELEMENTS:
            self._inside.append(tag)
        return False

    def ended_by_end(self, tag: str) -> tuple[bool, bool]:
        """(whether the element ended, whether the end tag is an enclosing block's, still to be handled)."""
        if tag in self._inside:
            del self._inside[len(self._inside) - 1 - self._inside[::-1].index(tag) :]
            return False, False
        if tag == self.tag:
            return True, False
        if tag in _BLOCK_CONTAINERS or tag in ("body", "html"):
            return True, True
        return False, False  # a stray end tag: ignored, as a browser does


class _VisibleTextExtractor(HTMLParser):
    """Visible text: one block (paragraph, heading, list item, table row) per line.

    A paragraph-like element is set off by a blank line; a line-like one (div, li, tr,
    br) by a single line break. List items get a "- " or "1. " marker so that a sentence
    splitter sees them as separate items.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._parts: list[str] = []
        self._title: list[str] = []
        self._pending_newlines = 0
        self._pending_space = False
        self._after_space = True  # at the start of a line or after a space
        self._pending_marker = ""
        self._hidden_depth = 0
        self._pre_depth = 0
        self._pre_just_opened = False
        self._in_head = False
        self._in_title = False
        self._title_done = False
        self._list_counters: list[int | None] = []  # None for <ul>, next number for <ol>
        self._row_has_cell = False
        self._hidden_element: _HiddenElement | None = None
        self._length = 0
        self._sections: list[Section] = []
        self._heading: tuple[int, int, int] | None = None  # level, offset of its first character (-1 before), part

    def result(self, with_title: bool = True) -> ExtractedText:
        raw = "".join(self._parts)
        body = raw.strip("\n")
        title = " ".join("".join(self._title).split()) if with_title else ""
        shift = (len(title) + 2 if title and body else 0) - (len(raw) - len(raw.lstrip("\n")))
        sections = tuple(Section(s.start + shift, s.level, s.title) for s in self._sections) if body else ()
        return ExtractedText(f"{title}\n\n{body}" if title and body else title or body, False, sections=sections)

    # -- tags --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._in_head and tag not in _HEAD_ELEMENTS:
            self._in_head = False  # the body started without </head>
        if self._hidden_element is not None:
            if not self._hidden_element.ended_by_start(tag):
                return
            self._hidden_element = None
        if _hides(attrs) and not self._hidden_depth and tag not in _HEAD_ELEMENTS:
            if tag not in _VOID_ELEMENTS:
                self._hidden_element = _HiddenElement(tag)
            return
        if tag == "head":
            self._in_head = True
        elif tag == "title" and not self._title_done and not self._hidden_depth:
            self._in_title = True
        elif tag in _HIDDEN_ELEMENTS:
            if tag not in _VOID_ELEMENTS:
                self._hidden_depth += 1
        elif self._hidden_depth or self._in_head:
            return
        elif tag == "br":
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
            self._pre_just_opened = True
        elif tag in _PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in _LINE_ELEMENTS:
            self._request_break(1)
        if tag == "tr":
            self._row_has_cell = False
        if tag in _HEADINGS and self._heading is None and not self._hidden_depth and not self._in_head:
            self._heading = (_HEADINGS[tag], -1, 0)

    def handle_endtag(self, tag: str) -> None:
        if self._hidden_element is not None:
            ended, enclosing = self._hidden_element.ended_by_end(tag)
            if ended:
                self._hidden_element = None
            if not enclosing:
                return
        if tag in _HEADINGS and self._heading is not None:
            self._end_heading()
        if tag == "head":
            self._in_head = False
        elif tag == "title" and self._in_title:
            self._in_title = False
            self._title_done = True
        elif tag in _HIDDEN_ELEMENTS:
            self._hidden_depth = max(0, self._hidden_depth - 1)
        elif self._hidden_depth or self._in_head:
            return
        elif tag in ("ul", "ol"):
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

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_ELEMENTS:
            self.handle_endtag(tag)

    # -- text --

    def handle_data(self, data: str) -> None:
        if self._in_head and not self._in_title and not self._hidden_depth and data.strip():
            self._in_head = False  # text cannot live in <head>: the body started
        if self._in_title:
            self._title.append(data)
        elif self._hidden_depth or self._in_head or self._hidden_element is not None:
            return
        elif self._pre_depth:
            if self._pre_just_opened and data.startswith("\n"):
                data = data[1:]  # HTML ignores a line break right after <pre>
            self._pre_just_opened = False
            self._emit(data, collapse=False)
        else:
            self._emit(data, collapse=True)

    def _end_heading(self) -> None:
        if self._heading is None:
            return
        level, start, first_part = self._heading
        self._heading = None
        title = "".join(self._parts[first_part:]).split("\n", 1)[0].strip() if start >= 0 else ""
        if title:
            self._sections.append(Section(start, level, title))

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


def _ordered_list_start(attrs: list[tuple[str, str | None]]) -> int:
    for name, value in attrs:
        if name == "start" and value and value.strip().lstrip("-").isdigit():
            return int(value)
    return 1


def markup_text(markup: str, *, with_title: bool = True) -> ExtractedText:
    """The text a reader sees in `markup` (newlines already normalised) with its headings: the document's title
    (unless `with_title` is False), a blank line, then its body."""
    extractor = _VisibleTextExtractor()
    extractor.feed(markup)
    extractor.close()
    return extractor.result(with_title)


def extract(path: Path, data: bytes) -> ExtractedText:
    markup, extracted = decode_text(path, data, html_encoding(data))
    try:
        found = markup_text(normalise_newlines(markup))
    except Exception as error:  # html.parser is lenient; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return dataclasses.replace(extracted, text=found.text, sections=found.sections)
