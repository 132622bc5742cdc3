"""Removing documents by id: one new generation without them, committed like an index run."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from granrag_mcp.errors import InvalidInputError, StoreNotFoundError
from granrag_mcp.indexing.pipeline import IndexSummary, write_graph
from granrag_mcp.levels import LEVELS, Level
from granrag_mcp.progress import Progress
from granrag_mcp.records import Chunk
from granrag_mcp.store.generation import new_generation, write_indexes
from granrag_mcp.store.graph import has_graph
from granrag_mcp.store.store import Snapshot, current_generation
from granrag_mcp.store.writer import StoreWriter

log = logging.getLogger(__name__)


def remove_documents(
    doc_ids: Sequence[str], store_root: Path, *, command: str = "remove", progress: Progress | None = None
) -> IndexSummary:
    """Commit a generation without `doc_ids`; unknown ids are an error and nothing changes."""
    progress = progress or Progress(enabled=False)
    wanted = list(dict.fromkeys(doc_ids))
    summary = IndexSummary(store=Path(store_root))
    with StoreWriter(store_root, command=command) as writer:
        if current_generation(writer.root) is None:
            raise StoreNotFoundError(f"no index at {writer.root}: there is nothing to remove")
        base = Snapshot.open(writer.root)
        try:
            known = base.catalog.known_documents(wanted)
            unknown = [doc_id for doc_id in wanted if doc_id not in known]
            if unknown:
                raise InvalidInputError(
                    f"unknown doc_id(s) {', '.join(repr(d) for d in unknown[:5])}: not in the index (generation "
                    f"{base.generation}); list_documents shows the doc_ids it holds. Nothing was removed"
                )
            dimension = base.manifest.identity.dimension
            with new_generation(writer, base) as draft:  # a cancelled or failed removal leaves the previous one
                empty: dict[Level, list[Chunk]] = {level: [] for level in LEVELS}
                counts = write_indexes(draft.folder, base, [], wanted, empty, {}, dimension, progress)
                if has_graph(base.folder):  # the graph without their concepts; none where indexing built none
                    write_graph(draft, base, [], None, dimension, progress)
                draft.publish(base.manifest.identity, counts, base.manifest.next_chunk_id)
        finally:
            base.close()
    summary.generation = draft.number
    summary.committed = True
    summary.removed = len(wanted)
    return summary
