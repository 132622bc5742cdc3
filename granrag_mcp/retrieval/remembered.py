"""What one generation says of its documents and chunks (a document's outline and language, a chunk's level,
parent and children), remembered for those asked about most recently: every search cites the documents of its hits
and walks the hierarchy of the same few chunks call after call, so each is read from the catalog once a generation
rather than once a call. A generation never changes, so nothing remembered goes stale; the view keeps one of these
per fact and generation (`PerGeneration`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

KEPT = 4096
"""Documents or chunks remembered per fact: far more than a session's searches spread over, a few MB at most."""


class Remembered(Generic[K, T]):
    """Document or chunk id -> one fact of it, the most recently asked kept; read from the catalog in one batch for
    the ids not remembered. The reader is given at each call, so nothing here holds the generation's files. A fact
    is shared by every caller that asks for it, so callers never change what they get."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._lock = threading.Lock()  # tool calls run in parallel worker threads
        self._items: OrderedDict[K, T] = OrderedDict()

    def of(self, keys: Iterable[K], read: Callable[[list[K]], Mapping[K, T]]) -> dict[K, T]:
        """The fact of each key `read` knows (the others left out, as `read` leaves them out)."""
        found: dict[K, T] = {}
        missing: list[K] = []
        with self._lock:
            for key in dict.fromkeys(keys):
                if key in self._items:
                    self._items.move_to_end(key)
                    found[key] = self._items[key]
                else:
                    missing.append(key)
        if missing:
            fresh = read(missing)
            found.update(fresh)
            with self._lock:
                self._items.update(fresh)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return found
