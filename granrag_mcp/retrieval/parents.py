"""Parents and auto-merging: the enclosing chunk one level up of each chunk, and, with a threshold, a parent
only where more than that share of its children was given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import LEVELS, TOP
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.view import View


@dataclass
class ParentMatch:
    parent: Chunk
    children_hit: list[str]
    children_total: int


@dataclass
class ParentResult:
    parents: list[ParentMatch]
    kept: list[Chunk]  # children left as they were (auto-merging below the threshold)


def find_parents(view: View, public_ids: Sequence[str], merge_threshold: float | None = None) -> ParentResult:
    chunks = view.resolve(public_ids)
    orphans = [c.public_id for c in chunks if c.parent_id is None]
    if orphans:
        raise InvalidInputError(
            f"{', '.join(orphans)} are {TOP} chunks, the top of the hierarchy, and have no parent; "
            f"pass {' or '.join(LEVELS[1:])} chunk ids"
        )
    by_parent: dict[int, list[Chunk]] = {}
    for chunk in chunks:
        by_parent.setdefault(chunk.parent_id, []).append(chunk)  # type: ignore[arg-type]
    parents = view.catalog.chunks(list(by_parent))
    totals = view.catalog.children(list(by_parent))
    groups, kept = [], []
    for parent_id, children in by_parent.items():
        total = len(totals[parent_id])
        if merge_threshold is not None and not len(children) / max(total, 1) > merge_threshold:
            kept.extend(children)
            continue
        groups.append(ParentMatch(parents[parent_id], [c.public_id for c in children], total))
    return ParentResult(groups, kept)
