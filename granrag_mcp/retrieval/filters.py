"""Restricting a search to some documents: by doc id, by doc id prefix (a folder), by language, or together.

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
    (any when None) and that are written in `language` (an ISO 639-1 code; any when None)."""

    doc_ids: tuple[str, ...] | None = None
    doc_prefix: str | None = None
    language: str | None = None

    @classmethod
    def of(
        cls, doc_ids: Sequence[str] | None = None, doc_prefix: str | None = None, language: str | None = None
    ) -> DocFilter | None:
        """The filter the arguments ask for; None when they ask for none."""
        if doc_ids is not None and not doc_ids:
            raise InvalidInputError("doc_ids is empty: leave it out to search every document, or name some")
        if doc_ids is None and not doc_prefix and not language:
            return None
        ids = tuple(dict.fromkeys(doc_ids)) if doc_ids is not None else None
        return cls(ids, doc_prefix or None, language.strip().lower() if language else None)

    def check(self, catalog: Catalog) -> None:
        """Unknown doc ids, or a language no document is written in, are mistakes the caller should hear about,
        not an empty result."""
        if self.language is not None:
            held = catalog.language_counts()
            if self.language not in held:
                shown = ", ".join(sorted(held)) or "none"
                raise InvalidInputError(
                    f"no document in language {self.language!r}: the index holds {shown}; pass one of them "
                    "(ISO 639-1 codes, as in list_documents) or leave language out"
                )
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
        ids = catalog.chunk_ids_in_documents(level, self.doc_ids, self.doc_prefix, self.language)
        return np.asarray(ids, dtype=np.int64)
