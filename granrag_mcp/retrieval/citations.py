"""Where a span of a document sits in its structure: the pages it covers and the heading path above it.

A chunk's section is the innermost one whose heading starts at or before the chunk's body (its first character
past the whitespace and heading lines it opens with), its path the titles of that section's ancestors and its
own; its pages are those its text spans. A document without headings cites no section, an unpaged one no pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from granrag_mcp.outline import Outline, trimmed
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.view import View


@dataclass(frozen=True)
class Citation:
    pages: tuple[int, int] | None = None  # first and last page, 1-based; None where the format has no pages
    section: tuple[str, ...] = ()  # heading path, outermost first; empty where there is no heading above


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


def cite(outline: Outline, start: int, text: str) -> Citation:
    """The citation of `text`, a span of the document that starts at character `start`."""
    if not outline:
        return UNCITED
    begin, end = trimmed(start, text)
    return Citation(outline.pages(begin, end), tuple(outline.path(outline.index_at(outline.body_start(start, text)))))


def cite_chunks(view: View, chunks: Sequence[Chunk]) -> dict[int, Citation]:
    """Chunk id -> its citation; one catalog read for the outlines of all their documents."""
    outlines = view.catalog.outlines([c.doc_id for c in chunks])
    return {c.id: cite(outlines[c.doc_id], c.start, c.text) for c in chunks}


def cite_window(
    view: View, doc_id: str, start: int, text: str, members: Sequence[Chunk]
) -> tuple[Citation, dict[int, Citation]]:
    """The citation of a window (a span of one document: its text and where it starts) and of each of its member
    chunks, from one read of the document's outline."""
    outline = view.catalog.outlines([doc_id])[doc_id]
    return cite(outline, start, text), {c.id: cite(outline, c.start, c.text) for c in members}
