"""A made-up format with headings and pages, registered in the formats' registry by tests of the structure
(so that they need no real format module): a line `#`, `##`... followed by a title is a heading of that depth,
a line holding only a form feed starts a new page. The extracted text is the lines without the heading marks and
page-break lines."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.formats.base import ExtractedText, Section

SUFFIX = ".outl"
_HEADING = re.compile(r"(#+) (.+)")


def extract(path: Path, data: bytes) -> ExtractedText:
    lines, sections, page_starts = [], [], [0]
    offset = 0
    for line in data.decode("utf-8").split("\n"):
        if line == "\f":
            page_starts.append(offset)
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            line = heading.group(2)
            sections.append(Section(offset, len(heading.group(1)), line))
        lines.append(line)
        offset += len(line) + 1
    return ExtractedText("\n".join(lines), False, sections=tuple(sections), page_starts=tuple(page_starts))


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXTRACTORS, SUFFIX, extract)


def code(topic: str, n: int) -> str:
    """A word only sentence `n` of a topic holds, to find it by."""
    return f"{topic[:3]}{n:02d}x"


def sentences(topic: str, first: int, count: int) -> list[str]:
    """Distinct sentences about one topic word, numbered from `first`, each with its own code word."""
    return [
        f"The {topic} record {code(topic, n)} notes that {code(topic, n)} was checked by the {topic} team."
        for n in range(first, first + count)
    ]


LAYOUT: tuple[tuple, ...] = (
    ("heading", 1, "Introduction"),
    ("text", "glacier", 0, 6),
    ("page",),
    ("heading", 1, "Methods"),
    ("heading", 2, "Sampling"),
    ("text", "lantern", 0, 7),
    ("page",),
    ("text", "lantern", 7, 4),
    ("heading", 2, "Statistical analysis"),
    ("text", "regression", 0, 8),
    ("page",),
    ("heading", 1, "Results"),
    ("text", "harvest", 0, 8),
)
"""A four-page report: Introduction (p. 1), Methods with Sampling (p. 2-3) and Statistical analysis (p. 3), Results
(p. 4)."""


@dataclass
class Report:
    source: str  # the file's contents
    units: dict[str, tuple[int, tuple[str, ...]]]  # each sentence and heading -> its page and heading path

    def expected(self, text: str) -> tuple[list[int], list[str]]:
        """The pages and heading path a span of the report should cite, from the units it is made of (it must be
        whole units and whitespace)."""
        found = sorted((text.index(unit), unit) for unit in self.units if unit in text)
        rest = text
        for _, unit in found:
            rest = rest.replace(unit, "", 1)
        assert found and not rest.strip(), f"not whole sentences and headings: {text!r}"
        pages = [self.units[unit][0] for _, unit in found]
        return [min(pages), max(pages)], self.body_path([unit for _, unit in found])

    def expected_at(self, document: str, start: int, end: int) -> tuple[list[int], list[str]]:
        """The pages and heading path of the span [start, end) of the extracted `document`, whitespace at its edges
        aside, from the units holding its first and last characters (a span may cut a sentence)."""
        piece = document[start:end]
        begin, stop = start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())
        placed = [(document.index(unit), unit) for unit in self.units]
        first = next(u for at, u in placed if at <= begin < at + len(u))
        last = next(u for at, u in placed if at < stop <= at + len(u))
        return [self.units[first][0], self.units[last][0]], self.body_path(self.inside(document, start, end))

    def inside(self, document: str, start: int, end: int) -> list[str]:
        """The units the span [start, end) of `document` has characters of, in text order."""
        piece = document[start:end]
        begin, stop = start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())
        placed = [(document.index(unit), unit) for unit in self.units]
        first = next(u for at, u in placed if at <= begin < at + len(u))
        return [u for at, u in sorted(placed) if begin <= at < stop or u == first]

    def body_path(self, units: list[str]) -> list[str]:
        """The heading path a span of these units (in text order) cites: the path shared by the sections of its
        units that are not headings (a span that runs on into the next section cites what both share); a span of
        headings only cites its last heading."""
        paths = self.body_paths(units)
        shared = paths[0]
        for path in paths[1:]:
            n = 0
            while n < min(len(shared), len(path)) and shared[n] == path[n]:
                n += 1
            shared = shared[:n]
        return shared

    def body_paths(self, units: list[str]) -> list[list[str]]:
        """The heading path of each section these units have text in, once each, in text order (the last heading's
        for a span of headings only)."""
        paths: list[list[str]] = []
        for unit in [u for u in units if not self.is_heading(u)] or units[-1:]:
            if list(self.units[unit][1]) not in paths:
                paths.append(list(self.units[unit][1]))
        return paths

    def is_heading(self, unit: str) -> bool:
        path = self.units[unit][1]
        return bool(path) and path[-1] == unit


def build_report(layout: tuple[tuple, ...] = LAYOUT) -> Report:
    lines: list[str] = []
    units: dict[str, tuple[int, tuple[str, ...]]] = {}
    page, path = 1, []
    for item in layout:
        if item[0] == "page":
            lines.append("\f")
            page += 1
        elif item[0] == "heading":
            _, level, title = item
            path = [*path[: level - 1], title]
            lines.append(f"{'#' * level} {title}")
            units[title] = (page, tuple(path))
        else:
            _, topic, first, count = item
            said = sentences(topic, first, count)
            lines.append(" ".join(said))
            units.update({s: (page, tuple(path)) for s in said})
    return Report("\n".join(lines) + "\n", units)
