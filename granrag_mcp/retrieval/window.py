"""Sentence window: a chunk with its neighbours of the same level, in reading order, as one text."""

from __future__ import annotations

from dataclasses import dataclass

from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.spans import document_order
from granrag_mcp.retrieval.view import View

NEIGHBOUR_MARGIN = 64  # the broad overlap repeats a few chunks per boundary; look far enough to skip them


@dataclass
class Window:
    center: Chunk
    members: list[Chunk]
    doc_id: str
    start: int
    end: int
    text: str


def expand_window(view: View, public_id: str, before: int = 2, after: int = 2) -> Window:
    center = view.resolve([public_id])[0]
    nearby = view.catalog.chunks_by_seq(
        center.doc_id, center.level, center.seq - before - NEIGHBOUR_MARGIN, center.seq + after + NEIGHBOUR_MARGIN
    )
    ordered = document_order(nearby, center)
    position = next(i for i, c in enumerate(ordered) if c.id == center.id)
    members = ordered[max(position - before, 0) : position + after + 1]
    start, end = min(c.start for c in members), max(c.end for c in members)
    text = view.catalog.document_slice(center.doc_id, start, end) or ""
    return Window(center, members, center.doc_id, start, end, text)
