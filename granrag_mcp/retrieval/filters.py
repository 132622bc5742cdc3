"""Restricting a search to some documents: by doc id, by doc id prefix (a folder), or both.

The restriction is applied inside each single-level search (a FAISS id selector, BM25 scores of the allowed
chunks only), so every technique built on a `View` returns k hits from the chosen documents whenever they hold
k, instead of a full list cut down afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import Level
from granrag_mcp.store.catalog import Catalog


@dataclass(frozen=True)
class DocFilter:
    """Documents a search may return: those in `doc_ids` (any when None) whose doc_id starts with `doc_prefix`
    (any when None)."""

    doc_ids: tuple[str, ...] | None = None
    doc_prefix: str | None = None

    @classmethod
    def of(cls, doc_ids: Sequence[str] | None = None, doc_prefix: str | None = None) -> DocFilter | None:
        """The filter the arguments ask for; None when they ask for none."""
        if doc_ids is not None and not doc_ids:
            raise InvalidInputError("doc_ids is empty: leave it out to search every document, or name some")
        if doc_ids is None and not doc_prefix:
            return None
        return cls(tuple(dict.fromkeys(doc_ids)) if doc_ids is not None else None, doc_prefix or None)

    def check(self, catalog: Catalog) -> None:
        """Unknown doc ids are a mistake the caller should hear about, not an empty result."""
        if self.doc_ids is None:
            return
        known = catalog.known_documents(self.doc_ids)
        unknown = [doc_id for doc_id in self.doc_ids if doc_id not in known]
        if unknown:
            shown = ", ".join(repr(d) for d in unknown[:5]) + (
                f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            )
            raise InvalidInputError(
                f"unknown doc_id(s) {shown}: not in the index; list_documents shows the doc_ids it holds"
            )

    def chunk_ids(self, catalog: Catalog, level: Level) -> np.ndarray:
        """The ids of the `level` chunks a filtered search may return."""
        ids = catalog.chunk_ids_in_documents(level, self.doc_ids, self.doc_prefix)
        return np.asarray(ids, dtype=np.int64)
