"""What an index run did, as its caller reports it: documents added, updated and skipped, and each stage's time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class IndexSummary:
    store: Path
    generation: int | None = None
    committed: bool = False
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    unsupported: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    replaced_bytes: list[str] = field(default_factory=list)
    guessed_encodings: list[tuple[str, str]] = field(default_factory=list)  # (path, codec) of undeclared non-UTF-8
    changed_while_read: list[str] = field(default_factory=list)  # indexed as last read; the hash is of that
    new_chunks: dict[str, int] = field(default_factory=dict)
    corpus_tokens: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


class Stopwatch:
    """Adds the wall time of each stage to the summary."""

    def __init__(self, summary: IndexSummary) -> None:
        self._summary = summary

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._summary.seconds[name] = self._summary.seconds.get(name, 0.0) + time.perf_counter() - start
