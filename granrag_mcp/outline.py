"""A document's structure: its headings (sections) and pages, and where a span of its text sits in them.

Extractors fill `Section`s and page starts (indexing/formats), the store keeps them per document, chunking cuts
at them, and every hit cites the pages and heading path of its span from them. Offsets are characters of the
document's stored text, as chunk offsets are.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """A heading in a document's text: where its section starts, how deep it sits (1 = top) and its title."""

    start: int  # character offset in ExtractedText.text where the heading's own text begins
    level: int  # 1 for a top-level heading (a chapter, a slide, a sheet), 2 beneath it, and so on
    title: str  # the heading as a reader sees it, on one line


@dataclass(frozen=True)
class Outline:
    """The sections of one document in text order, each one's size in tokens, and its page starts."""

    sections: tuple[Section, ...] = ()
    page_starts: tuple[int, ...] = ()  # offset of each page's first character, page 1 first; empty if unpaged
    tokens: tuple[int, ...] = ()  # tokens of each section's whole span (its subsections included)
    _paths: tuple[tuple[int, ...], ...] = field(default=(), init=False, repr=False, compare=False)
    _starts: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The heading path of every section, as indexes of its ancestors and itself, computed once.
        stack: list[int] = []
        paths = []
        for i, section in enumerate(self.sections):
            while stack and self.sections[stack[-1]].level >= section.level:
                stack.pop()
            stack.append(i)
            paths.append(tuple(stack))
        object.__setattr__(self, "_paths", tuple(paths))
        object.__setattr__(self, "_starts", tuple(s.start for s in self.sections))

    def __bool__(self) -> bool:
        return bool(self.sections or self.page_starts)

    def index_at(self, offset: int) -> int | None:
        """The innermost section whose start is at or before `offset` (its index), or None before the first."""
        index = bisect_right(self._starts, offset) - 1
        return index if index >= 0 else None

    def body_start(self, start: int, text: str) -> int:
        """Where the body of `text` (a span starting at `start`) begins: past the heading lines it opens with, so a
        chunk that starts with its section's heading, or a chain of them (a title, then a first part), is placed
        in the innermost of those sections rather than before them. A span of headings only: its last heading."""
        offset = start + len(text) - len(text.lstrip())
        end = start + len(text)
        while offset < end:
            line_end = text.find("\n", offset - start)
            line_end = end if line_end < 0 else start + line_end
            heading = bisect_left(self._starts, offset)
            if heading == len(self._starts) or self._starts[heading] >= line_end:
                return offset  # this line holds no heading: the body starts here
            rest = text[line_end - start :]
            following = line_end + len(rest) - len(rest.lstrip())
            if following >= end:
                return self._starts[heading]
            offset = following
        return offset

    def ancestors(self, index: int | None) -> tuple[int, ...]:
        """Section `index` and the sections above it, as indexes, outermost first; () for None."""
        return () if index is None else self._paths[index]

    def path(self, index: int | None) -> list[str]:
        """The heading path of section `index`: its ancestors' titles and its own, outermost first."""
        return [] if index is None else [self.sections[i].title for i in self._paths[index]]

    def enclosing(self, offset: int, depth: int | None = None) -> int | None:
        """The section holding `offset`: the innermost one, or with `depth` the innermost whose level is at most
        `depth` (a chapter for 1); None where no section holds it."""
        index = self.index_at(offset)
        if index is None or depth is None:
            return index
        found = [i for i in self._paths[index] if self.sections[i].level <= depth]
        return found[-1] if found else None

    def ends(self, length: int) -> list[int]:
        """Where each section ends: at the next heading of its level or above, else at `length` (the text's)."""
        ends = [length] * len(self.sections)
        open_: list[int] = []
        for i, section in enumerate(self.sections):
            while open_ and self.sections[open_[-1]].level >= section.level:
                ends[open_.pop()] = section.start
            open_.append(i)
        return ends

    def page_at(self, offset: int) -> int | None:
        """The 1-based page holding `offset`; None for an unpaged document."""
        if not self.page_starts:
            return None
        return max(bisect_right(self.page_starts, offset), 1)

    def pages(self, start: int, end: int) -> tuple[int, int] | None:
        """First and last page of the span [start, end); None for an unpaged document."""
        first = self.page_at(start)
        last = self.page_at(max(end - 1, start))
        return None if first is None or last is None else (first, last)


EMPTY = Outline()


def trimmed(start: int, text: str) -> tuple[int, int]:
    """The span of `text` (which starts at `start`) without the whitespace at its edges, so a chunk that begins
    with the line break before a heading, or ends with the one before a page, is cited by what it holds."""
    body = text.strip()
    if not body:
        return start, start + len(text)
    begin = start + len(text) - len(text.lstrip())
    return begin, begin + len(body)
