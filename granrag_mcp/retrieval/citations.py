"""Where a span of a document sits in its structure: the pages it covers and the heading path above it.

A span's text lies in the section its body starts in (its first character past the whitespace and heading lines it
opens with) and in each section whose heading starts inside it with text of its own before the span ends. It cites
the innermost section holding all of them (the path they share: its ancestors' titles and its own) and, where there
are several, lists each one's path in reading order, so a passage that runs on into the next section is never cited
by the one it starts in alone. Its pages are those its text spans. A document without headings cites no section,
an unpaged one no pages.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from granrag_mcp.outline import Outline, trimmed
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.view import View


@dataclass(frozen=True)
class Citation:
    pages: tuple[int, int] | None = None  # first and last page, 1-based; None where the format has no pages
    section: tuple[str, ...] = ()  # heading path, outermost first; empty where there is no heading above
    sections: tuple[tuple[str, ...], ...] = ()  # each section's path where the span covers several, else empty


UNCITED = Citation()


def pages_label(pages: Sequence[int] | None) -> str:
    """Pages as a reader writes them: 'p. 12' or 'p. 12-13'; empty without pages."""
    if not pages:
        return ""
    return f"p. {pages[0]}" if pages[0] == pages[-1] else f"p. {pages[0]}-{pages[-1]}"


def citation_line(doc_id: str, citation: Citation) -> str:
    """One line a person can check: 'report.pdf · p. 12-13 · Methods > Statistical analysis'."""
    parts = [doc_id, pages_label(citation.pages), " > ".join(citation.section)]
    return " · ".join(part for part in parts if part)


def covered(outline: Outline, start: int, text: str) -> list[int | None]:
    """The sections `text` (a span starting at `start`) has text in, in reading order, as indexes; None for text
    before the first heading."""
    begin, end = trimmed(start, text)
    body = outline.body_start(start, text)
    found: list[int | None] = [outline.index_at(body)]
    starts = [section.start for section in outline.sections]
    headings = set(starts)
    for i in range(bisect_right(starts, body), bisect_left(starts, end)):
        inside = outline.body_start(starts[i], text[starts[i] - start :])
        # a heading counts for the body after it; headings with no text of their own before the span ends do not
        if inside < end and inside not in headings:
            index = outline.index_at(inside)
            if index not in found:
                found.append(index)
    return found


def shared(outline: Outline, indexes: Sequence[int | None]) -> int | None:
    """The innermost section that holds all of `indexes` (None where none does)."""
    chains = [outline.ancestors(i) for i in indexes]
    common: int | None = None
    for level in zip(*chains):
        if any(i != level[0] for i in level):
            break
        common = level[0]
    return common


def cite(outline: Outline, start: int, text: str) -> Citation:
    """The citation of `text`, a span of the document that starts at character `start`."""
    if not outline:
        return UNCITED
    begin, end = trimmed(start, text)
    indexes = covered(outline, start, text) if outline.sections else [None]
    listed = tuple(tuple(outline.path(i)) for i in indexes) if len(indexes) > 1 else ()
    return Citation(outline.pages(begin, end), tuple(outline.path(shared(outline, indexes))), listed)


def cite_chunks(view: View, chunks: Sequence[Chunk]) -> dict[int, Citation]:
    """Chunk id -> its citation, from the outlines of their documents (read once a generation, `Remembered`)."""
    outlines = view.document_outlines(c.doc_id for c in chunks)
    return {c.id: cite(outlines[c.doc_id], c.start, c.text) for c in chunks}


def cite_window(
    view: View, doc_id: str, start: int, text: str, members: Sequence[Chunk]
) -> tuple[Citation, dict[int, Citation]]:
    """The citation of a window (a span of one document: its text and where it starts) and of each of its member
    chunks, from one read of the document's outline."""
    outline = view.catalog.outlines([doc_id])[doc_id]
    return cite(outline, start, text), {c.id: cite(outline, c.start, c.text) for c in members}
