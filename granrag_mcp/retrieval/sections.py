"""Navigating a document by its headings: its outline, and the section that encloses any chunk.

A section spans its heading to the next heading of its level or above, so it holds its subsections. Its chunks
are the paragraph-level ones (the level above sentences) that start inside it, in reading order; where broad
chunks overlap, a chunk lying wholly inside one already listed is left out, so no text is listed twice.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST, Level, parent_of
from granrag_mcp.outline import Outline
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.citations import covered, shared
from granrag_mcp.retrieval.view import View

SECTION_CHUNKS: Level = parent_of(FINEST) or FINEST
"""The level whose chunks a section lists: paragraphs, which the chunkers never run across a heading."""


@dataclass
class SectionSpan:
    """One section of a document, where it is and what it holds."""

    doc_id: str
    number: int  # position in the document's outline, 0 first
    level: int
    title: str
    path: list[str]
    start: int
    end: int
    pages: tuple[int, int] | None
    tokens: int
    chunk_ids: list[int] = field(default_factory=list)


@dataclass
class DocumentOutline:
    doc_id: str
    n_chars: int
    pages: int | None  # page count; None for an unpaged document
    sections: list[SectionSpan]
    total: int  # sections in the whole outline, before a depth limit


def _outline(view: View, doc_id: str) -> tuple[Outline, int]:
    info = next((d for d in view.catalog.documents(doc_id, 1, 0) if d.doc_id == doc_id), None)
    if info is None:
        raise InvalidInputError(
            f"unknown doc_id {doc_id!r}: not in the index; list_documents shows the doc_ids it holds"
        )
    return view.catalog.outlines([doc_id])[doc_id], info.n_chars


def _spans(view: View, doc_id: str, outline: Outline, n_chars: int, wanted: list[int]) -> list[SectionSpan]:
    ends = outline.ends(n_chars)
    # By start, to find a section's chunks by bisection; each keeps its place in reading order (n).
    positions = view.catalog.positions(doc_id, SECTION_CHUNKS)
    by_start = sorted((start, n, chunk_id, end) for n, (chunk_id, start, end) in enumerate(positions))
    starts = [start for start, _, _, _ in by_start]
    out = []
    for i in wanted:
        section, end = outline.sections[i], ends[i]
        inside = sorted(by_start[bisect_left(starts, section.start) : bisect_left(starts, end)], key=lambda p: p[1])
        chunk_ids, covered = [], -1
        for _, _, chunk_id, chunk_end in inside:
            if chunk_end > covered:
                chunk_ids.append(chunk_id)
                covered = chunk_end
        tokens = outline.tokens[i] if i < len(outline.tokens) else 0
        pages = outline.pages(section.start, end)
        path = outline.path(i)
        out.append(
            SectionSpan(doc_id, i, section.level, section.title, path, section.start, end, pages, tokens, chunk_ids)
        )
    return out


def document_outline(view: View, doc_id: str, max_depth: int | None = None) -> DocumentOutline:
    """The sections of a document in reading order (those at most `max_depth` deep, when given)."""
    outline, n_chars = _outline(view, doc_id)
    wanted = [i for i, s in enumerate(outline.sections) if max_depth is None or s.level <= max_depth]
    pages = len(outline.page_starts) or None
    sections = _spans(view, doc_id, outline, n_chars, wanted)
    return DocumentOutline(doc_id, n_chars, pages, sections, len(outline.sections))


def _at_depth(outline: Outline, index: int, depth: int | None) -> int | None:
    """Section `index`, or with `depth` its innermost enclosing section at most that deep."""
    found = [i for i in outline.ancestors(index) if depth is None or outline.sections[i].level <= depth]
    return found[-1] if found else None


def enclosing_section(view: View, public_id: str, depth: int | None = None) -> tuple[Chunk, SectionSpan]:
    """The chunk, and the section that holds it: the innermost, or with `depth` the innermost at most that deep
    (1: the chapter)."""
    chunk = view.resolve([public_id])[0]
    outline, n_chars = _outline(view, chunk.doc_id)
    if not outline.sections:
        raise InvalidInputError(
            f"{chunk.doc_id!r} has no headings (its format keeps none, or it was indexed before headings were "
            "kept: index it again to get them); use get_parent or expand_window for the text around the chunk"
        )
    begin = chunk.start + len(chunk.text) - len(chunk.text.lstrip())
    # A chunk that runs across sections is held by the innermost section they share, not the one it starts in.
    common = shared(outline, covered(outline, chunk.start, chunk.text))
    index = outline.enclosing(begin, depth) if common is None else _at_depth(outline, common, depth)
    if index is None:
        where = "before the first heading" if depth is None else f"under no heading of depth {depth} or less"
        raise InvalidInputError(
            f"{public_id} lies {where} of {chunk.doc_id!r}; use document_outline to see its sections, or "
            "expand_window for the text around the chunk"
        )
    return chunk, _spans(view, chunk.doc_id, outline, n_chars, [index])[0]
