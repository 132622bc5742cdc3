"""The HTML extractor built on selectolax (lexbor), kept as the candidate that bench_formats.py measures against
granrag_mcp/indexing/formats/html.py: the same visibility rules and the same `TextLayout`, fed by a walk of a
browser-built tree instead of a stream."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, decode_text, normalise_newlines
from granrag_mcp.indexing.formats.html import HIDDEN_ELEMENTS, hides, html_encoding
from granrag_mcp.indexing.formats.html_layout import TextLayout


def _walk(root: Any, layout: TextLayout) -> None:
    """Every visible node under `root` in document order, with an explicit stack: a tree of 300,000 unclosed tags
    is 300,000 levels deep, too deep to recurse."""
    node = root.first_child
    while node is not None:
        tag = node.tag
        descend = False
        if tag == "-text":
            layout.text(node.text_content or "")
        elif not tag.startswith(("-", "_", "!")) and tag not in HIDDEN_ELEMENTS and tag != "head":
            attributes = list(node.attributes.items())
            if not hides(attributes):
                layout.start(tag, attributes)
                descend = True
        child = node.first_child if descend else None
        if child is not None:
            node = child
            continue
        if descend:
            layout.end(tag)
        while node.next is None:
            node = node.parent
            if node is None or node.mem_id == root.mem_id:
                return
            layout.end(node.tag)
        node = node.next


def markup_text(markup: str, *, with_title: bool = True) -> ExtractedText:
    """The visible text of `markup` (newlines already normalised) with its headings: the document's title (unless
    `with_title` is False), a blank line, then its body."""
    from selectolax.lexbor import LexborHTMLParser  # only a run that reads HTML pays for importing it

    tree = LexborHTMLParser(markup)
    title_node = tree.head.css_first("title") if tree.head is not None else None
    title = " ".join((title_node.text() if title_node is not None and with_title else "").split())
    layout = TextLayout()
    if tree.body is not None:
        _walk(tree.body, layout)
    return layout.result(title)


def extract(path: Path, data: bytes) -> ExtractedText:
    markup, extracted = decode_text(path, data, html_encoding(data))
    try:
        found = markup_text(normalise_newlines(markup))
    except Exception as error:  # lexbor is lenient; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return dataclasses.replace(extracted, text=found.text, sections=found.sections)
