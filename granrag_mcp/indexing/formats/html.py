"""HTML (.html, .htm): the visible text, markup, scripts, styles and hidden elements dropped, blocks on lines of
their own, table cells separated, h1-h6 kept as sections; decoded by the charset the document declares.

Read as a stream of events from libxml2's HTML tokenizer (lxml with a parser target: no tree is built), which is
linear on the markup that made the stdlib's html.parser quadratic (an attribute quote never closed, repeated) and
keeps flat memory on 300,000 unclosed tags, where lexbor (selectolax) takes quadratic time (BENCHMARKS.md). What is
visible is decided here, tag by tag.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from collections import Counter
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, decode_text, normalise_newlines
from granrag_mcp.indexing.formats.html_layout import (
    HEADINGS,
    LINE_ELEMENTS,
    PARAGRAPH_ELEMENTS,
    Attributes,
    TextLayout,
)

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


HIDDEN_ELEMENTS = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object"}
_HEAD_ELEMENTS = {"head", "title", "meta", "link", "base", "style", "script", "noscript", "template"}
_VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCK_CONTAINERS = PARAGRAPH_ELEMENTS | LINE_ELEMENTS | {"ul", "ol", "dl", "li", "dd", "dt", "select"}
# Start tags that end an open element whose end tag may be left out, and what stops them from reaching it.
_IMPLIED_END = {
    "p": PARAGRAPH_ELEMENTS | {"div", "ul", "ol", "dl", "li", "dd", "dt", "center", "summary", "figcaption"},
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


def hides(attrs: Attributes) -> bool:
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

    The events build no tree, so its end is found the way a browser would for tidy markup: its own end
    tag, the end tag of a block that contains it, or a start tag that implies its end (a new <p> or <li>).
    """

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self._inside: list[str] = []
        # How many of each tag are open inside: an end tag asks "is one open?" of a count, not of a scan of the
        # stack, which 300,000 unclosed tags make quadratic.
        self._open: Counter[str] = Counter()

    def ended_by_start(self, tag: str) -> bool:
        scope = _IMPLIED_END_SCOPE.get(self.tag, set())
        if tag in _IMPLIED_END.get(self.tag, ()) and not any(self._open[name] for name in scope):
            return True
        if tag not in _VOID_ELEMENTS:
            self._inside.append(tag)
            self._open[tag] += 1
        return False

    def ended_by_end(self, tag: str) -> tuple[bool, bool]:
        """(whether the element ended, whether the end tag is an enclosing block's, still to be handled)."""
        if self._open[tag]:
            while True:  # pops what it closes: each open tag is popped once, so the whole is linear
                closed = self._inside.pop()
                self._open[closed] -= 1
                if closed == tag:
                    return False, False
        if tag == self.tag:
            return True, False
        if tag in _BLOCK_CONTAINERS or tag in ("body", "html"):
            return True, True
        return False, False  # a stray end tag: ignored, as a browser does


class _VisibleTextExtractor:
    """Decides, tag by tag, what a reader sees (not the head, scripts, styles or hidden elements) and feeds it to a
    `TextLayout`; the title is kept apart."""

    def __init__(self) -> None:
        self.layout = TextLayout()
        self._title: list[str] = []
        self._hidden_depth = 0
        self._pre_just_opened = False
        self._in_head = False
        self._in_title = False
        self._title_done = False
        self._hidden_element: _HiddenElement | None = None

    def title(self) -> str:
        return " ".join("".join(self._title).split())

    # -- tags --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._in_head and tag not in _HEAD_ELEMENTS:
            self._in_head = False  # the body started without </head>
        if self._hidden_element is not None:
            if not self._hidden_element.ended_by_start(tag):
                return
            self._hidden_element = None
        if hides(attrs) and not self._hidden_depth and tag not in _HEAD_ELEMENTS:
            if tag not in _VOID_ELEMENTS:
                self._hidden_element = _HiddenElement(tag)
            return
        if tag == "head":
            self._in_head = True
        elif tag == "title" and not self._title_done and not self._hidden_depth:
            self._in_title = True
        elif tag in HIDDEN_ELEMENTS:
            if tag not in _VOID_ELEMENTS:
                self._hidden_depth += 1
        elif not (self._hidden_depth or self._in_head):
            if tag == "pre":
                self._pre_just_opened = True
            self.layout.start(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if self._hidden_element is not None:
            ended, enclosing = self._hidden_element.ended_by_end(tag)
            if ended:
                self._hidden_element = None
            if not enclosing:
                return
        if tag in HEADINGS:
            self.layout.end_heading()
        if tag == "head":
            self._in_head = False
        elif tag == "title" and self._in_title:
            self._in_title = False
            self._title_done = True
        elif tag in HIDDEN_ELEMENTS:
            self._hidden_depth = max(0, self._hidden_depth - 1)
        elif not (self._hidden_depth or self._in_head):
            self.layout.end(tag)

    # -- text --

    def handle_data(self, data: str) -> None:
        if self._in_head and not self._in_title and not self._hidden_depth and data.strip():
            self._in_head = False  # text cannot live in <head>: the body started
        if self._in_title:
            self._title.append(data)
        elif self._hidden_depth or self._in_head or self._hidden_element is not None:
            return
        else:
            if self._pre_just_opened and self.layout.in_pre and data.startswith("\n"):
                data = data[1:]  # HTML ignores a line break right after <pre>
            self._pre_just_opened = False
            self.layout.text(data)


class _Events:
    """libxml2's HTML tokenizer (lxml, as a parser target: no tree is built) feeding the extractor's handlers."""

    def __init__(self, extractor: _VisibleTextExtractor) -> None:
        self._extractor = extractor

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self._extractor.handle_starttag(tag.lower(), list(attrib.items()))

    def end(self, tag: str) -> None:
        tag = tag.lower()
        if tag not in _VOID_ELEMENTS:
            self._extractor.handle_endtag(tag)

    def data(self, data: str) -> None:
        self._extractor.handle_data(data)

    def comment(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def markup_text(markup: str, *, with_title: bool = True) -> ExtractedText:
    """The text a reader sees in `markup` (newlines already normalised) with its headings: the document's title
    (unless `with_title` is False), a blank line, then its body."""
    from lxml import etree

    extractor = _VisibleTextExtractor()
    parser = etree.HTMLParser(target=_Events(extractor), recover=True, huge_tree=True, no_network=True)
    parser.feed(markup)
    parser.close()
    return extractor.layout.result(extractor.title() if with_title else "")


def extract(path: Path, data: bytes) -> ExtractedText:
    markup, extracted = decode_text(path, data, html_encoding(data))
    try:
        found = markup_text(normalise_newlines(markup))
    except Exception as error:  # libxml2 recovers from almost anything; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return dataclasses.replace(extracted, text=found.text, sections=found.sections)
