"""The newest committed generation, for a long-running reader such as the server.

Each call to `snapshot()` looks at CURRENT (a tiny file); when a writer has published a new generation the
reader opens and verifies it, then swaps it in. A caller keeps the snapshot it got for the whole of one
request, so a request never mixes two generations.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from granrag_mcp.errors import GranragError
from granrag_mcp.store.manifest import StoreIdentity
from granrag_mcp.store.store import CurrentPointer, Snapshot, read_current

log = logging.getLogger(__name__)


class LiveStore:
    def __init__(self, root: Path, expected: StoreIdentity | None = None) -> None:
        self.root = Path(root)
        self._expected = expected
        self._lock = threading.Lock()
        self._pointer: CurrentPointer | None = read_current(self.root)
        self._snapshot = Snapshot.open(self.root, expected)
        self._pointer = (
            CurrentPointer(self._snapshot.folder.name, self._pointer.manifest_sha256) if self._pointer else None
        )

    def snapshot(self) -> Snapshot:
        try:
            pointer = read_current(self.root)
        except GranragError as exc:
            log.error(
                "cannot read the store's CURRENT pointer, serving generation %s: %s", self._snapshot.generation, exc
            )
            return self._snapshot
        if pointer is None or pointer == self._pointer:
            return self._snapshot
        with self._lock:
            if pointer != self._pointer:
                try:
                    fresh = Snapshot.open(self.root, self._expected)
                except GranragError as exc:
                    log.error(
                        "new generation %s not loaded, still serving %s: %s",
                        pointer.generation,
                        self._snapshot.generation,
                        exc,
                    )
                    self._pointer = pointer  # do not retry on every call; a later commit changes the pointer
                    return self._snapshot
                log.info("now serving generation %s", fresh.generation)
                self._snapshot = fresh
                self._pointer = pointer
        return self._snapshot
