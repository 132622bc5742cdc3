"""What an index run did, as its caller reports it: documents added, updated and skipped, and each stage's time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Stage:
    """One stage of an index run, as its report names it; `beside`: what else runs during it, where its wall time
    overlaps another stage's (the report says so, and the walls need not add up)."""

    name: str
    does: str
    beside: str = ""


STAGES = (
    Stage("hash", "the files' bytes hashed against the store's"),
    Stage("model", "the embedding model loaded"),
    Stage(
        "extract", "documents read in worker processes", "workers read ahead beside the stages below; CPU incl. theirs"
    ),
    Stage("sentences", "the semantic chunker's sentences split and counted in tokens"),
    Stage("embed", "the sentences (and, by vector mode, the coarser chunks) embedded"),
    Stage("chunk", "headings found, tokens counted, and the levels' chunks cut"),
    Stage("parallel", "extract, chunk and embed on the parallel engine's workers (their CPU is not counted)"),
    Stage("index", "chunk records and vectors written into the generation"),
    Stage("graph", "the concept graph built", "the adaptation's child process runs beside it on a large store"),
    Stage(
        "adapt",
        "ranking settings fitted by pseudo-queries",
        "in a child beside graph: wall is the wait, CPU the child's",
    ),
    Stage("commit", "the generation published"),
)
"""The stages in run order; a run reports those it went through."""


def _cpu() -> float:
    """CPU seconds of this process (all its threads) and of its children that have ended and been waited for: the
    extraction workers when their pool closes, the adaptation's child when it is awaited."""
    try:
        import resource
    except ImportError:  # not on Windows: this process's own time only
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


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
    seconds: dict[str, float] = field(default_factory=dict)  # wall seconds by stage
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # CPU seconds by stage, children's included
    total: dict[str, float] = field(default_factory=dict)  # the whole run's "wall" and "cpu" seconds

    def stage_table(self) -> list[dict[str, object]]:
        """The stages this run went through, in run order: name, wall and CPU seconds, and what ran beside it."""
        return [
            {
                "stage": stage.name,
                "wall_s": round(self.seconds[stage.name], 3),
                "cpu_s": round(self.cpu_seconds.get(stage.name, 0.0), 3),
                "beside": stage.beside,
            }
            for stage in STAGES
            if stage.name in self.seconds
        ]

    def stage_lines(self) -> list[str]:
        """One line per stage, then the run's total: what an index run ends with on stderr or in the log."""
        lines = [
            f"stage {row['stage']:<9} wall {row['wall_s']:8.2f} s  cpu {row['cpu_s']:8.2f} s"
            + (f"  ({row['beside']})" if row["beside"] else "")
            for row in self.stage_table()
        ]
        if self.total:
            lines.append(
                f"run   {'total':<9} wall {self.total['wall']:8.2f} s  cpu {self.total['cpu']:8.2f} s"
                "  (stages that run beside others overlap: their walls need not add up to the total)"
            )
        return lines


class Stopwatch:
    """Adds the wall and CPU time of each stage to the summary, and the whole run's from its making to `done`."""

    def __init__(self, summary: IndexSummary) -> None:
        self._summary = summary
        self._started = (time.perf_counter(), _cpu())

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), _cpu()
        try:
            yield
        finally:
            summary = self._summary
            summary.seconds[name] = summary.seconds.get(name, 0.0) + time.perf_counter() - wall
            summary.cpu_seconds[name] = summary.cpu_seconds.get(name, 0.0) + _cpu() - cpu

    def done(self) -> None:
        wall, cpu = self._started
        self._summary.total = {"wall": time.perf_counter() - wall, "cpu": _cpu() - cpu}
