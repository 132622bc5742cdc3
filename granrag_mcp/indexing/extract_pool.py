"""Extraction in worker processes with their own memory and time limits, so that a parser that runs away on a
hostile file is killed and the file skipped, while the run, and the server it runs in, go on.

Every index run (the CLI, `index_paths`, the library sync) reads its documents through one `ExtractionPool`: the
serving process never parses a user's file itself. Workers are started on the first document and reused for the
next ones; each holds at most `GRANRAG_EXTRACT_MEMORY_BYTES` of address space (RLIMIT_AS, set in the worker before
it reads anything) and gets `GRANRAG_EXTRACT_TIMEOUT` seconds a document; a reader that tells its pages as it
reads them (a scanned PDF read by OCR, `formats.page_progress`) gets that long from its last page instead, so a
long scan is read while a page that hangs still stops it. Results come back in the order asked for, with up to
`GRANRAG_EXTRACT_WORKERS` documents read ahead.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType

from granrag_mcp.errors import ExtractionError, GranragError
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.formats.base import ExtractedText, Extractor
from granrag_mcp.settings import LimitSettings

log = logging.getLogger(__name__)

WAIT_STEP = 0.2
"""Seconds between looks at a worker still reading: each look lets a cancelled run stop (its progress raises)."""
START_TIMEOUT = 120.0
"""Seconds a new worker may take to import the readers before its first document: not a document's time."""
STOP_WAIT = 2.0
"""Seconds a worker asked to stop at the end of a run gets before it is killed."""
PAGE_REPORT_STEP = 0.5
"""Seconds at least between two reports of pages read that a worker sends: the run needs a sign of life, not every
page of a long document."""
_PR_SET_PDEATHSIG = 1  # prctl(2)
_CONTEXT = multiprocessing.get_context("spawn")  # a fork of a server with threads could inherit a held lock


def _limit_memory(memory_bytes: int) -> None:
    if not memory_bytes:
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _die_with(parent: int) -> None:
    """On Linux, have the kernel kill this worker when the run's process dies, even mid-document (a SIGKILLed run
    cannot end its workers itself)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl: the worker still ends when its pipe closes
        return
    if os.getppid() != parent:  # the run died before the request was made
        os._exit(0)


def registered(suffix: str) -> Extractor | None:
    """The reader this process registered for `suffix`, handed to the worker by reference (its module and name), so a
    format registered at run time is read in the workers too; None where it cannot be named (the worker then uses
    its own registry)."""
    from granrag_mcp.indexing.formats import EXTRACTORS

    extractor = EXTRACTORS.get(suffix)
    if extractor is None:
        return None
    try:
        pickle.dumps(extractor)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    return extractor


def _work(connection: Connection, memory_bytes: int, parent: int) -> None:
    """A worker's loop: (source, limits, extractor or None) in, ("ok", ExtractedText) or ("error", reason) out,
    until None."""
    _die_with(parent)
    os.dup2(2, 1)  # nothing a library prints may reach the stdout of a server that speaks MCP over stdio
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle: it ends its workers
    _limit_memory(memory_bytes)
    from granrag_mcp.indexing.extract import extract_text  # imported under the limit: the readers count too

    connection.send(("ready", None))
    _forward_warnings(connection)
    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):  # the run's process is gone (killed): so is the reason to read
            return
        if job is None:
            return
        source, limits, extractor = job
        try:
            connection.send(("ok", extract_text(source, limits, extractor, _PageReports(connection))))
        except ExtractionError as error:
            connection.send(("error", error.reason))
        except MemoryError:
            connection.send(("memory", None))
            return  # a worker that ran out may hold half-built state: the pool starts a fresh one


class _Forward(logging.Handler):
    """The warnings a reader logs in its worker (a page OCR skipped), sent to the run to be logged there, in its log
    and its format, beside the other warnings of the run."""

    def __init__(self, connection: Connection) -> None:
        super().__init__(logging.WARNING)
        self.connection = connection

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.connection.send(("log", (record.name, record.levelno, record.getMessage())))
        except (OSError, ValueError, pickle.PicklingError):  # the run is gone: nobody to tell
            pass


def _forward_warnings(connection: Connection) -> None:
    package = logging.getLogger("granrag_mcp")
    package.addHandler(_Forward(connection))
    package.setLevel(logging.WARNING)
    package.propagate = False  # the worker's own stderr would print it a second time


class _PageReports:
    """A worker's listener of pages read: ("page", (done, total)) to the run, at most every `PAGE_REPORT_STEP`
    seconds and always for the last page."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < PAGE_REPORT_STEP:
            return
        self.last = now
        self.connection.send(("page", (done, total)))


@dataclass
class _Worker:
    process: BaseProcess
    connection: Connection
    ready: bool = False

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


@dataclass
class _Waiting:
    """The caller's `waiting` and `pages`, bound to the document waited for."""

    waiting: Callable[[int], None] | None
    number: int
    pages: Callable[[int, int, int], None] | None = None

    def __call__(self) -> None:
        if self.waiting is not None:
            self.waiting(self.number)

    def page(self, done: int, total: int) -> None:
        if self.pages is not None:
            self.pages(self.number, done, total)


@dataclass
class _Job:
    source: SourceFile
    worker: _Worker
    sent: float


class ExtractionWorkerError(GranragError):
    """No worker could be started: a setting or the machine, not a document."""


class ExtractionPool:
    """Worker processes that extract documents under `limits`; a context manager that ends them on leaving (at
    once when the run stops on an error or a cancel)."""

    def __init__(self, limits: LimitSettings) -> None:
        self.limits = limits
        self._idle: list[_Worker] = []
        self._busy: list[_Worker] = []

    def __enter__(self) -> ExtractionPool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close(kill=kind is not None)

    def close(self, kill: bool = False) -> None:
        """End every worker: asked to stop, or killed when `kill` (a cancelled run kills what it started)."""
        workers, self._idle, self._busy = self._idle + self._busy, [], []
        for worker in workers:
            if not kill and worker.process.is_alive():
                try:
                    worker.connection.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + (0 if kill else STOP_WAIT)
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            worker.kill()

    def extract(
        self,
        sources: Sequence[SourceFile],
        waiting: Callable[[int], None] | None = None,
        pages: Callable[[int, int, int], None] | None = None,
    ) -> Iterator[ExtractedText | ExtractionError]:
        """Each source's text, or the ExtractionError that skips it, in order. `waiting(n)` is called about every
        `WAIT_STEP` seconds while the n-th (from 0) is still being read: a run's progress, which may raise to stop
        the run (the pool's context then kills its workers). `pages(n, done, total)`: the pages of the n-th read so
        far, where its reader tells them."""
        pending: deque[_Job] = deque()
        ahead = iter(enumerate(sources))
        for number in range(len(sources)):
            while len(pending) < self.limits.extract_workers:
                following = next(ahead, None)
                if following is None:
                    break
                pending.append(self._send(following[1], _Waiting(waiting, following[0], pages)))
            yield self._receive(pending.popleft(), _Waiting(waiting, number, pages))

    # -- one document --

    def _send(self, source: SourceFile, waiting: Callable[[], None]) -> _Job:
        worker = self._idle.pop() if self._idle else self._start()
        self._busy.append(worker)
        if not worker.ready:
            self._await_ready(worker, waiting)
        job = (source, self.limits, registered(source.suffix))
        try:
            worker.connection.send(job)
        except OSError:  # an idle worker that something else ended: one fresh start, then the error stands
            self._retire(worker)
            worker = self._start()
            self._busy.append(worker)
            self._await_ready(worker, waiting)
            worker.connection.send(job)
        return _Job(source, worker, time.monotonic())

    def _receive(self, job: _Job, waiting: _Waiting) -> ExtractedText | ExtractionError:
        worker, path = job.worker, job.source.path
        deadline, paged = job.sent + self.limits.extract_timeout, False
        while True:
            while not worker.connection.poll(WAIT_STEP):
                if not worker.process.is_alive() and not worker.connection.poll(0):
                    return self._lost(worker, job)
                if time.monotonic() > deadline:
                    self._retire(worker)
                    return ExtractionError(
                        path,
                        f"its extraction took over GRANRAG_EXTRACT_TIMEOUT ({self.limits.extract_timeout:g} s"
                        f"{' since its last page' if paged else ''}); "
                        "the reader was stopped; raise it to index this file",
                    )
                waiting()
            try:
                kind, value = worker.connection.recv()
            except (EOFError, OSError):
                return self._lost(worker, job)
            if kind == "log":
                name, level, message = value
                logging.getLogger(name).log(level, "%s", message)
            elif kind == "page":
                deadline, paged = time.monotonic() + self.limits.extract_timeout, True  # the reader is not stuck
                waiting.page(*value)
            else:
                break
        if kind == "memory":
            self._retire(worker)
            return self._over_memory(job)
        self._busy.remove(worker)
        self._idle.append(worker)
        return value if kind == "ok" else ExtractionError(path, value)

    def _lost(self, worker: _Worker, job: _Job) -> ExtractionError:
        """A worker that ended while reading: the kernel or the allocator stopped it for its memory."""
        self._retire(worker)
        return self._over_memory(job)

    def _over_memory(self, job: _Job) -> ExtractionError:
        return ExtractionError(
            job.source.path,
            f"its extraction needed more memory than GRANRAG_EXTRACT_MEMORY_BYTES "
            f"({self.limits.extract_memory_bytes:,}) allows; the reader was stopped; raise it to index this file",
        )

    def _retire(self, worker: _Worker) -> None:
        if worker in self._busy:
            self._busy.remove(worker)
        worker.kill()

    # -- workers --

    def _start(self) -> _Worker:
        ours, theirs = _CONTEXT.Pipe()
        process = _CONTEXT.Process(
            target=_work,
            args=(theirs, self.limits.extract_memory_bytes, os.getpid()),
            name="granrag-extract",
            daemon=True,
        )
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _await_ready(self, worker: _Worker, waiting: Callable[[], None]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not worker.connection.poll(WAIT_STEP):
            if not worker.process.is_alive() or time.monotonic() > deadline:
                break
            waiting()
        try:
            kind, _ = worker.connection.recv() if worker.connection.poll(0) else ("failed", None)
        except (EOFError, OSError):
            kind = "failed"
        if kind != "ready":
            self._retire(worker)
            raise ExtractionWorkerError(
                "the extraction worker process did not start (is GRANRAG_EXTRACT_MEMORY_BYTES too small for the "
                f"readers, {self.limits.extract_memory_bytes:,}?); raise it, or check the log above"
            )
        worker.ready = True
