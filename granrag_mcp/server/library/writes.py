"""The agent writing to the index: which paths it may read, and one run at a time in a worker thread that reports
MCP progress and stops when the call is cancelled.

A run is the same incremental commit as `granrag-mcp index` and holds the store's writer lock for its length, so
the CLI and the server exclude each other ("index busy"). Readers keep the generation they have until the new one
is committed; the engine's live store switches to it on the next call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context

from granrag_mcp.errors import GranragError, IndexBusyError, InvalidInputError
from granrag_mcp.indexing.discovery import SourceFile, discover, text_of
from granrag_mcp.indexing.pipeline import IndexSummary
from granrag_mcp.indexing.safe_read import inside
from granrag_mcp.levels import FINEST, LEVELS
from granrag_mcp.progress import EXTRACTING, Progress, embedding
from granrag_mcp.server.schemas.write import FailedFile, RunningJob, RunResult

log = logging.getLogger(__name__)

MAX_LISTED_DOC_IDS = 200
STOP_WAIT = 30.0  # seconds a new run waits for a cancelled one to stop before it answers "index busy"
REPORT_INTERVAL = 0.2  # seconds between progress notifications
# The share of a run each stage of the indexer covers, so that progress only grows: the model's work on the
# sentences dominates, the coarser levels (pooled from them) share what is left before writing.
_COARSER = [level for level in reversed(LEVELS) if level != FINEST]
STAGE_SHARES = {
    EXTRACTING: (0.0, 0.15),
    embedding(FINEST): (0.15, 0.75),
    **{
        embedding(level): (0.75 + 0.17 * i / len(_COARSER), 0.75 + 0.17 * (i + 1) / len(_COARSER))
        for i, level in enumerate(_COARSER)
    },
}
WRITE_SHARE = (0.92, 0.99)  # writing the generation: one step per level; the commit completes it


class OutsideRootsError(InvalidInputError):
    """A path, or a file a symbolic link leads to, lies outside the folders the agent may index."""


class RunCancelled(GranragError):
    """The call that started a run was cancelled; the run stopped before its commit."""


# --- roots -------------------------------------------------------------------------------------------------------


async def allowed_roots(ctx: Context[Any, Any], configured: Sequence[Path]) -> tuple[list[Path], str]:
    """The server's configured folders; the client's MCP roots only when none are configured, since roots are
    deprecated from protocol 2026-07-28 and serve clients that still send them (asked on every call, so a
    `roots/list_changed` is never missed)."""
    if configured:
        return list(configured), "GRANRAG_ALLOWED_ROOTS"
    session = ctx.session
    capabilities = session.client_capabilities
    if capabilities is not None and capabilities.roots is not None and session.can_send_request:
        try:
            result = await session.list_roots()
        except Exception as exc:  # a client that declared roots but cannot answer: no folder, and say so in the log
            log.warning("the client declared roots but roots/list failed (%s); set GRANRAG_ALLOWED_ROOTS", exc)
        else:
            roots = [root_path(str(root.uri)) for root in result.roots if str(root.uri).startswith("file:")]
            if roots:
                return roots, "the client's MCP roots (GRANRAG_ALLOWED_ROOTS is empty)"
    return [], "GRANRAG_ALLOWED_ROOTS"


def root_path(uri: str) -> Path:
    """The local folder a client's `file:` root names; an error for a root that names another host or hides a
    parent folder in escaped characters, which the client would not have meant."""
    parsed = urlparse(uri)
    if parsed.netloc not in ("", "localhost"):
        raise OutsideRootsError(
            f"the client's root {uri!r} names the host {parsed.netloc!r}: only local roots (file:///folder) can be "
            "indexed; fix the client's roots"
        )
    if "%2f" in parsed.path.lower() or "%5c" in parsed.path.lower():
        raise OutsideRootsError(
            f"the client's root {uri!r} holds an escaped slash (%2F or %5C): fix the client's roots"
        )
    path = unquote(parsed.path)
    if ".." in PurePosixPath(path).parts:
        raise OutsideRootsError(f"the client's root {uri!r} climbs to a parent folder (..): fix the client's roots")
    return Path(path)


def too_broad(root: Path) -> str | None:
    """Why a real root is too broad to hand to an agent: the whole disk or a home folder entire; else None."""
    if root == Path(root.anchor):
        return "the whole disk"
    homes = {Path.home().resolve(), Path("/root")}
    if root in homes or root.parent in (Path("/home"), Path("/Users")):
        return "a home folder entire"
    return None


@dataclass
class Checked:
    paths: list[Path]  # the real paths to index
    roots: list[Path]  # the real allowed roots, which every file must still lie in when it is read
    files: list[SourceFile]  # what discovery found under them now


def check_paths(paths: Sequence[str], roots: Sequence[Path], origin: str, allow_broad: bool = False) -> Checked:
    """The real paths to index and the files they hold; an error naming the roots for anything outside them,
    a symbolic link that leads outside included, and for a root that covers the whole disk or a home folder
    unless `allow_broad`."""
    real_roots = [root.resolve() for root in roots]
    shown = ", ".join(str(r) for r in real_roots)
    if not real_roots:
        raise OutsideRootsError(
            "no folder may be indexed: the client offers no MCP roots and GRANRAG_ALLOWED_ROOTS is empty; restart "
            "the server with --allowed-roots DIR (or GRANRAG_ALLOWED_ROOTS)"
        )
    for root in real_roots:
        if not allow_broad and (what := too_broad(root)):
            raise OutsideRootsError(
                f"the allowed root {root} ({origin}) is {what}, too broad to let an agent index: name a narrower "
                "folder, or set GRANRAG_ALLOW_BROAD_ROOTS=true to allow it"
            )
    real: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.is_absolute():
            raise InvalidInputError(f"{raw!r} is a relative path: pass an absolute path inside {shown}")
        try:
            exists = path.exists()
        except OSError as error:  # a component longer than the file system allows, for one
            raise InvalidInputError(f"{raw[:200]!r} cannot be a path here ({error.strerror}): check it") from None
        if not exists:
            raise InvalidInputError(f"no such file or folder: {raw}")
        resolved = path.resolve()
        if not inside(resolved, real_roots):
            leads = f" (it leads to {resolved})" if resolved != path.absolute() else ""
            raise OutsideRootsError(f"{raw} is outside the allowed roots{leads}: index only under {shown} ({origin})")
        real.append(resolved)
    found = discover(real, real_roots)
    for source in found.files:
        target = source.path.resolve()
        if not inside(target, real_roots):
            raise OutsideRootsError(
                f"{text_of(str(source.path))} is a symbolic link to {text_of(str(target))}, outside the allowed "
                f"roots: index only under {shown} ({origin}); remove the link or index the folders it lies in "
                "separately. Nothing was indexed"
            )
    return Checked(real, real_roots, found.files)


def indexed_doc_ids(files: Sequence[SourceFile], summary: IndexSummary) -> list[str]:
    """The doc ids of `files` that the run did not skip."""
    failed = {path for path, _ in summary.failed}
    return [source.doc_id for source in files if text_of(str(source.path)) not in failed]


# --- runs --------------------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Run:
    kind: str
    targets: list[str]
    started_at: str = field(default_factory=_now)
    started: float = field(default_factory=time.monotonic)
    stage: str = "starting"
    progress: float = 0.0
    stopping: bool = False  # its call was cancelled; it ends at its next step

    def info(self) -> RunningJob:
        return RunningJob(
            kind=self.kind,
            targets=self.targets[:50],
            stage=self.stage,
            progress=round(self.progress, 4),
            started_at=self.started_at,
        )


class RunProgress(Progress):
    """The indexer's progress as one growing share of the run; raises RunCancelled once the call is cancelled."""

    def __init__(self, run: Run, cancelled: threading.Event, report: Callable[[float, str], None]) -> None:
        super().__init__(enabled=False)
        self._run = run
        self._cancelled = cancelled
        self._report = report
        self._reported = 0.0
        self._write_steps = 0

    def check(self) -> None:
        if self._cancelled.is_set():
            raise RunCancelled("the run was cancelled")

    def _advance(self, share: float, stage: str, force: bool = False) -> None:
        self.check()
        self._run.progress = max(self._run.progress, min(share, 1.0))
        self._run.stage = stage
        now = time.monotonic()
        if force or now - self._reported >= REPORT_INTERVAL:
            self._reported = now
            self._report(self._run.progress, stage)

    def update(self, stage: str, done: int, total: int) -> None:
        low, high = STAGE_SHARES.get(stage, (self._run.progress, self._run.progress))
        unit = "files" if stage == EXTRACTING else "chunks"
        self._advance(
            low + (high - low) * (done / total if total else 1.0),
            f"{stage}: {done}/{total} {unit}",
            force=done >= total,
        )

    def level_written(self, level: str, vectors: int) -> None:
        self._write_steps += 1
        low, high = WRITE_SHARE
        self._advance(
            low + (high - low) * self._write_steps / len(LEVELS),
            f"writing the new generation ({level}: {vectors} vectors)",
            True,
        )

    def message(self, text: str) -> None:
        self._advance(self._run.progress, text, True)


class Runs:
    """One run at a time in this server (the store's lock keeps other processes out), and the last one's result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running: Run | None = None
        self.last: RunResult | None = None

    async def start(self, kind: str, targets: list[str]) -> Run:
        """`begin`, after waiting (a while) for a cancelled run that is still stopping, so that a caller who
        cancelled and asks again is not told the server is busy with the run it stopped."""
        deadline = time.monotonic() + STOP_WAIT
        while (running := self.running) is not None and running.stopping and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        return self.begin(kind, targets)

    def begin(self, kind: str, targets: list[str]) -> Run:
        with self._lock:
            if self.running is not None:
                raise IndexBusyError(
                    f"index busy: this server is already running {self.running.kind} since {self.running.started_at}"
                    f" ({self.running.stage}); call index_status to follow it, and try again when it is done"
                )
            self.running = Run(kind, targets)
            return self.running

    def finish(self, run: Run, result: RunResult) -> RunResult:
        with self._lock:
            if self.running is run:
                self.running = None
            self.last = result
        return result

    def abandon(self, run: Run) -> None:
        """Free the server for the next run when `run`'s call ended before its work could (a cancel while the
        engine was still loading, for one)."""
        if self.running is run:
            self.finish(run, result_of(run, None, "cancelled", "the run was cancelled before it started", None))

    async def execute(
        self, ctx: Context[Any, Any], run: Run, work: Callable[[RunProgress], IndexSummary]
    ) -> IndexSummary:
        """Run `work` in a worker thread; the event loop keeps serving other calls. Progress goes to the caller as
        MCP progress notifications. A cancelled call stops the work at its next progress step, waits until the
        writer lock is released and the half-built generation removed, and leaves the previous generation."""
        cancelled, finished = threading.Event(), threading.Event()

        def report(share: float, stage: str) -> None:
            try:
                anyio.from_thread.run(ctx.report_progress, share, 1.0, stage)
            except Exception as exc:  # the caller may be gone: the run goes on regardless
                log.debug("progress not delivered: %s", exc)

        def target() -> IndexSummary:
            try:
                return work(RunProgress(run, cancelled, report))
            finally:
                finished.set()

        try:
            summary = await anyio.to_thread.run_sync(target, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            run.stopping = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_WAIT):
                while not finished.is_set():
                    await anyio.sleep(0.05)
            message = "the run was cancelled; the previous generation is still current"
            if not finished.is_set():  # a step that does not look at the cancel: the server is not held for it
                message += " (its last step is still ending and holds the store's lock until it does)"
            self.finish(run, result_of(run, None, "cancelled", message, None))
            raise
        run.progress, run.stage = 1.0, "done"
        try:
            await ctx.report_progress(1.0, 1.0, f"done: generation {summary.generation} is current")
        except Exception as exc:
            log.debug("progress not delivered: %s", exc)
        return summary


def result_of(
    run: Run,
    summary: IndexSummary | None,
    outcome: str,
    message: str,
    generation: int | None,
    doc_ids: Sequence[str] = (),
) -> RunResult:
    fields: dict[str, Any] = {}
    if summary is not None:
        fields = dict(
            added=summary.added,
            updated=summary.updated,
            unchanged=summary.unchanged,
            removed=summary.removed,
            unsupported=summary.unsupported,
            failed=[FailedFile(path=p, reason=r) for p, r in summary.failed],
        )
    return RunResult(
        kind=run.kind,
        outcome=outcome,
        message=message,
        generation=generation,
        doc_ids=list(doc_ids[:MAX_LISTED_DOC_IDS]),
        more_doc_ids=max(len(doc_ids) - MAX_LISTED_DOC_IDS, 0),
        started_at=run.started_at,
        seconds=round(time.monotonic() - run.started, 3),
        **fields,
    )
