"""Markdown (.md, markdown-it-py): the source as it is (its markup reads well, and code blocks stay whole), its
ATX and setext headings as sections, found by the CommonMark parser so that a `#` in a code block is no heading."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from granrag_mcp.indexing.formats.base import ExtractedText, Section
from granrag_mcp.indexing.formats.plain import extract as extract_plain


def headings(text: str) -> tuple[Section, ...]:
    """The headings of a Markdown text, each at the offset of its own text within its line."""
    from markdown_it import MarkdownIt  # only a run that reads Markdown pays for importing it

    line_starts = [0]
    for line in text.split("\n")[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    tokens = MarkdownIt("commonmark").parse(text)
    found: list[Section] = []
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type != "heading_open" or opening.map is None or opening.level != 0:
            continue  # a heading inside a list or quote is part of that block, not a section of the document
        title = inline.content.split("\n")[0].strip()
        line_start = line_starts[opening.map[0]]
        line_end = text.find("\n", line_start)
        line = text[line_start : line_end if line_end >= 0 else len(text)]
        column = line.find(title)
        if title and column >= 0:
            found.append(Section(line_start + column, int(opening.tag[1]), title))
    return tuple(found)


def extract(path: Path, data: bytes) -> ExtractedText:
    extracted = extract_plain(path, data)
    return dataclasses.replace(extracted, sections=headings(extracted.text))
