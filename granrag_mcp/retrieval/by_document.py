"""What one generation says of its documents (their outlines, their languages), remembered for the documents asked
about most recently: every search cites the documents of its hits, and the same documents come back call after
call, so each is read from the catalog once a generation rather than once a call. A generation never changes, so
nothing remembered goes stale; the view keeps one of these per generation (`PerGeneration`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")

DOCUMENTS_KEPT = 4096
"""Documents remembered: far more than the hits of a session's searches spread over, and a few MB at most."""


class ByDocument(Generic[T]):
    """Document id -> one fact of it, the most recently asked kept; read from the catalog in one batch for the
    documents not remembered. The reader is given at each call, so nothing here holds the generation's files."""

    def __init__(self, size: int = DOCUMENTS_KEPT) -> None:
        self.size = size
        self._lock = threading.Lock()  # tool calls run in parallel worker threads
        self._items: OrderedDict[str, T] = OrderedDict()

    def of(self, doc_ids: Iterable[str], read: Callable[[list[str]], Mapping[str, T]]) -> dict[str, T]:
        """The fact of each document `read` knows (the others left out, as `read` leaves them out)."""
        found: dict[str, T] = {}
        missing: list[str] = []
        with self._lock:
            for doc_id in dict.fromkeys(doc_ids):
                if doc_id in self._items:
                    self._items.move_to_end(doc_id)
                    found[doc_id] = self._items[doc_id]
                else:
                    missing.append(doc_id)
        if missing:
            fresh = read(missing)
            found.update(fresh)
            with self._lock:
                self._items.update(fresh)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return found
