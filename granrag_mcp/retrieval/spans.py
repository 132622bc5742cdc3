"""Where chunks lie in their document: containment, overlap, reading order, and copies of one span removed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from granrag_mcp.records import Chunk

HEAVY_OVERLAP = 0.5  # in a window, a neighbour sharing this share of the centre's span is a copy of it


class HasChunk(Protocol):
    @property
    def chunk(self) -> Chunk: ...


H = TypeVar("H", bound=HasChunk)


def inside(inner: Chunk, outer: Chunk) -> bool:
    return inner.doc_id == outer.doc_id and inner.start >= outer.start and inner.end <= outer.end


def overlap_share(a: Chunk, b: Chunk) -> float:
    if a.doc_id != b.doc_id:
        return 0.0
    shared = min(a.end, b.end) - max(a.start, b.start)
    return max(shared, 0) / max(min(a.end - a.start, b.end - b.start), 1)


def dedupe_by_span(hits: Sequence[H], limit: int | None = None) -> list[H]:
    """Drop a hit whose span contains, or lies inside, the span of a better-ranked hit; with `limit`, the first
    `limit` hits kept (the same as cutting the whole result, without comparing the hits after them).

    The broad overlap indexes the text of each overlap region twice, so the same sentence (or a piece of it)
    can come back from two broad chunks. Chunks that merely overlap, such as a short last broad chunk, stay.
    """
    kept: list[H] = []
    kept_in_doc: dict[str, list[Chunk]] = {}
    for hit in hits:
        if limit is not None and len(kept) >= limit:
            break
        chunk = hit.chunk
        others = kept_in_doc.setdefault(chunk.doc_id, [])
        if not any(_nested(chunk, other) for other in others):
            kept.append(hit)
            others.append(chunk)
    return kept


def _nested(a: Chunk, b: Chunk) -> bool:
    """Whether one of two chunks of the same document lies inside the other."""
    return (a.start >= b.start and a.end <= b.end) or (b.start >= a.start and b.end <= a.end)


def document_order(chunks: Sequence[Chunk], pinned: Chunk) -> list[Chunk]:
    """Chunks of one level in reading order, without the copies the broad overlap made; `pinned` always stays."""
    out: list[Chunk] = []
    reach = -1
    for chunk in sorted(chunks, key=lambda c: (c.start, -c.end, c.seq)):
        if chunk.id == pinned.id:
            out.append(chunk)
        elif overlap_share(chunk, pinned) >= HEAVY_OVERLAP or chunk.end <= reach:
            continue
        else:
            out.append(chunk)
        reach = max(reach, chunk.end)
    return out
