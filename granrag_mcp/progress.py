"""Progress lines on stderr for long runs. Never stdout: over stdio that belongs to the protocol."""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

from granrag_mcp.levels import FINEST

log = logging.getLogger(__name__)

EXTRACTING = "extracting documents"
"""The stage of reading and chunking the changed documents, counted in files."""


def reading_pages(name: str) -> str:
    """The stage of reading one long document page by page (a scan read by OCR), counted in its pages."""
    return f"reading the pages of {name}"


def embedding(level: str) -> str:
    """The stage of embedding one level's chunks, counted in chunks (the finest level's are its sentences)."""
    return "embedding sentences" if level == FINEST else f"embedding {level} chunks"


class Progress:
    """Throttled 'stage: done/total' lines; silent when disabled."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None, interval: float = 1.0) -> None:
        self.enabled = enabled
        self._stream = stream or sys.stderr
        self._interval = interval
        self._last = 0.0

    def check(self) -> None:
        """Raise the run's stop request, if any, between steps too long to wait for (a file being read); a plain
        progress is never stopped."""

    def message(self, text: str) -> None:
        if self.enabled:
            print(f"[granrag] {text}", file=self._stream, flush=True)

    def update(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (done < total and now - self._last < self._interval):
            return
        self._last = now
        percent = 100 * done // total if total else 100
        self.message(f"{stage}: {done}/{total} ({percent}%)")

    def level_written(self, level: str, vectors: int) -> None:
        """One level's indices of the new generation are written (the indexer writes one level after another)."""
        self.message(f"{level}: {vectors} vectors")

    def step_committed(self, generation: int, documents: int, total: int) -> None:
        """A run that commits in steps made generation `generation` current: `documents` of its `total` changed
        documents are searchable (the log says so whether or not progress lines are shown)."""
        log.info(
            "generation %d committed: %d of %d documents searchable, the rest being indexed",
            generation,
            documents,
            total,
        )
        self.message(f"generation {generation} committed: {documents}/{total} documents searchable")

    def callback(self, stage: str):
        return lambda done, total: self.update(stage, done, total)
