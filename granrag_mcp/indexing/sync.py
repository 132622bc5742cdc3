"""Keeping the store in step with library folders: one catch-up run at start, then a run each time the folders
have been quiet for a moment after a change.

Each run is the ordinary incremental index run (`pipeline.index_paths` over the folders with `prune`): files whose
bytes are unchanged keep their chunks, new and changed ones are indexed, documents no longer under the folders are
removed, and the result is one generation committed by the store's single writer, or none when nothing changed.
A run killed at any moment leaves the last committed generation current (the writer removes the half-built one).

The folders the index walks are watched with watchfiles (inotify, FSEvents or ReadDirectoryChangesW), each on its
own: an idle watch only checks, twice a second, that its folders are still there.
A batch of changes is taken once no file has been written for `library_settle` seconds, so a file still being
written, or an editor's save in several steps (a temporary file renamed over the original), is read once, whole;
hidden names and editors' temporary files (swap, backup, lock and partial-download names) start no run. Before a
run, a walk compares every file's size and times with those at the last run: a batch that changed no document
file (an unsupported file, a temporary one) ends there, without hashing or opening the store.

A first run into an empty store commits in steps (see indexing/pipeline.py): each step is passed on as it is
committed, and `running.searchable` says how much of the run is already searchable.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.errors import GranragError, IndexBusyError, InvalidInputError, NoDocumentsError
from granrag_mcp.indexing.discovery import discover, text_of, walked_folders
from granrag_mcp.indexing.pipeline import IndexSummary, index_paths
from granrag_mcp.indexing.removal import remove_documents
from granrag_mcp.progress import Progress
from granrag_mcp.settings import Settings
from granrag_mcp.store.store import Snapshot, read_current

log = logging.getLogger(__name__)

TEMPORARY_NAME = re.compile(
    r"^~\$"  # office lock files
    r"|^#.*#$"  # emacs auto-saves
    r"|~$"  # backups (vim, emacs, gedit)
    r"|^4913$"  # vim's probe that the folder is writable
    r"|\.(?:sw[a-p]|swx|tmp|temp|part|partial|crdownload|download|bak|orig)$",  # swap files, partial downloads
    re.IGNORECASE,
)
"""Names editors and downloaders write while they work: a change to one of them starts no run."""
RETRY_SECONDS = 5.0
"""How soon a run that found the store busy (another writer) is tried again, with or without a new change."""
LOOK_SECONDS = 0.5
"""How often a quiet watch looks whether its folders are still there and whether a look is due: a walk just after
the watch is set up again (changes made while it was not there) or a retry of a busy run."""
BATCH_SECONDS = 60.0
"""A folder written without pause for this long is indexed as it stands; the next quiet moment indexes the rest."""

Outcome = Literal["committed", "unchanged", "busy", "failed", "skipped"]
FileState = dict[str, tuple[str, int, int, int]]  # doc_id -> (path, size, mtime_ns, ctime_ns)


class SyncStopped(GranragError):
    """The sync was asked to stop during a run; the run stopped before its commit."""


@dataclass(frozen=True)
class SyncPass:
    """What one run did: its outcome, the index run's summary where one ran, and a line for the log."""

    outcome: Outcome
    message: str
    summary: IndexSummary | None = None

    @property
    def committed(self) -> bool:
        return self.outcome == "committed"


class LibraryFilter:
    """The watchfiles filter: changes inside a library folder, not under a hidden name, not an editor's temporary
    file, and not inside the store."""

    def __init__(self, folders: Sequence[Path], ignored: Sequence[Path] = ()) -> None:
        self.folders = [Path(f) for f in folders]
        self.ignored = [Path(p) for p in ignored]

    def __call__(self, change: object, path: str) -> bool:
        changed = Path(path)
        if any(changed.is_relative_to(p) for p in self.ignored):
            return False
        for folder in self.folders:
            if changed.is_relative_to(folder):
                parts = changed.relative_to(folder).parts
                break
        else:
            return False
        if any(part.startswith(".") for part in parts):  # discovery skips hidden names too
            return False
        return not parts or not TEMPORARY_NAME.search(parts[-1])


class _StoppableProgress(Progress):
    """The run's progress (on stderr where enabled), and the stop request checked at each step; `stage` is the
    latest step and `searchable` the documents committed of the run's total once a first run has committed a step,
    for whoever reports how far the run is; `on_step` is told each step's generation."""

    def __init__(self, stop: threading.Event, enabled: bool, on_step: Callable[[int], None] | None = None) -> None:
        super().__init__(enabled=enabled)
        self._stop = stop
        self._on_step = on_step
        self.stage = "starting"
        self.searchable: tuple[int, int] | None = None

    def _check(self, stage: str) -> None:
        self.check()
        self.stage = stage

    def check(self) -> None:
        if self._stop.is_set():
            raise SyncStopped("the library sync was stopped")

    def update(self, stage: str, done: int, total: int) -> None:
        self._check(f"{stage}: {done}/{total}")
        super().update(stage, done, total)

    def level_written(self, level: str, vectors: int) -> None:
        self._check(f"writing {level}")
        super().level_written(level, vectors)

    def message(self, text: str) -> None:
        self._check(text)
        super().message(text)

    def step_committed(self, generation: int, documents: int, total: int) -> None:
        super().step_committed(generation, documents, total)
        self.searchable = (documents, total)
        if self._on_step is not None:
            self._on_step(generation)
        self._check(f"generation {generation} committed, indexing the rest")


class LibrarySync:
    """Keeps `settings.store` in step with `settings.library`. `embedder_factory` gives the model (called only
    when there is something to embed); `stop` ends `run` and any run in progress at its next step."""

    def __init__(
        self,
        settings: Settings,
        embedder_factory: Callable[[], Embedder],
        stop: threading.Event | None = None,
        show_progress: bool = False,
    ) -> None:
        if not settings.library:
            raise InvalidInputError("no library folder: pass --library DIR (or set GRANRAG_LIBRARY)")
        for folder in settings.library:
            if not folder.is_dir():
                raise InvalidInputError(
                    f"the library folder {folder} is {'not a folder' if folder.exists() else 'missing'}: name an "
                    "existing folder (a single file cannot be watched through an editor's save)"
                )
        self.settings = settings
        self.folders = list(settings.library)
        self.stop = stop or threading.Event()
        self._factory = embedder_factory
        self._embedder: Embedder | None = None
        self._show_progress = show_progress
        self._synced: FileState | None = None  # the files as the last completed run saw them
        # Where files are read: the folders' real paths as the sync started, so a link (or a folder swapped for
        # one) never leads a run outside them, as `index_paths` refuses it.
        self.roots = [Path(os.path.realpath(folder)) for folder in self.folders]
        self._failing: FileState = {}  # files that could not be read, as they stood then: not read again unchanged
        self._warned: set[tuple[Path, str]] = set()  # special files and broken links warned of once
        self.running: _StoppableProgress | None = None
        self.last: SyncPass | None = None
        self.on_step: Callable[[SyncPass], None] | None = None
        """Told of each step a first run commits (`run`'s `on_pass`), so that it is served before the run ends."""

    def _embedder_once(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._factory()
        return self._embedder

    def state(self) -> FileState:
        """Every document file under the folders with its size and times (a walk; nothing is read)."""
        found = discover(self.folders, self.roots, self.settings.limits, self._warned)
        state: FileState = {}
        for source in found.files:
            try:
                st = os.stat(source.path)
            except OSError:  # gone since the walk: the run sees it gone too
                continue
            state[source.doc_id] = (str(source.path), st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        return state

    def sync(self, strict: bool = False) -> SyncPass:
        """One run if a document file changed since the last one. A busy store, unreadable files or a failed run
        are an outcome, not an error; with `strict` any other failure is raised (a store that does not fit the
        settings, for one). SyncStopped is raised."""
        missing = [str(folder) for folder in self.folders if not folder.is_dir()]
        if missing:  # an unmounted disk must not empty the library: wait for the folder to come back
            return self._record(SyncPass("skipped", f"library folder missing, nothing removed: {', '.join(missing)}"))
        state = self.state()
        if state == self._synced:
            return self._record(SyncPass("unchanged", "no document file changed"))
        progress = self.running = _StoppableProgress(self.stop, self._show_progress, self._stepped)
        started = time.monotonic()
        exclude = {doc_id for doc_id, seen in self._failing.items() if state.get(doc_id) == seen}
        try:
            summary = self._index(state, progress, exclude)
        except IndexBusyError as exc:
            return self._record(SyncPass("busy", f"{exc}; trying again in {RETRY_SECONDS:.0f} s"))
        except SyncStopped:
            raise
        except GranragError as exc:
            if strict and not isinstance(exc, NoDocumentsError):
                raise
            self._synced = state  # the same files fail the same way: wait for the next change
            if isinstance(exc, NoDocumentsError):  # none could be read: none is read again until it changes
                self._failing = dict(state)
            return self._record(SyncPass("failed", str(exc)))
        finally:
            self.running = None
        self._note_failures(state, exclude, summary)
        # A file written while it was read is indexed as read; its next quiet moment runs again.
        self._synced = None if summary.changed_while_read else state
        seconds = time.monotonic() - started
        for line in summary.stage_lines():
            log.info(line)
        counts = (
            f"{summary.added} added, {summary.updated} updated, {summary.removed} removed, {summary.unchanged} "
            f"unchanged, {len(summary.failed)} failed in {seconds:.2f} s"
        )
        if summary.committed:
            return self._record(SyncPass("committed", f"generation {summary.generation} committed: {counts}", summary))
        return self._record(SyncPass("unchanged", f"generation {summary.generation} stays current: {counts}", summary))

    def _stepped(self, generation: int) -> None:
        if self.on_step is not None:
            self.on_step(SyncPass("committed", f"generation {generation} committed: a step of the first run"))

    def _note_failures(self, state: FileState, exclude: set[str], summary: IndexSummary) -> None:
        """Remember the files this run could not read (a slow or hostile file included), as they stand, so that
        the next runs, started by other files' changes, leave them out until they change."""
        by_path = {text_of(path): doc_id for doc_id, (path, *_) in state.items()}
        failed = {by_path[path] for path, _ in summary.failed if path in by_path}
        self._failing = {doc_id: state[doc_id] for doc_id in failed | exclude if doc_id in state}

    def _index(self, state: FileState, progress: Progress, exclude: set[str]) -> IndexSummary:
        try:
            return index_paths(
                self.folders,
                self.settings,
                embedder_factory=self._embedder_once,
                prune=True,
                progress=progress,
                roots=self.roots,
                exclude=exclude,
                warned=self._warned,
            )
        except NoDocumentsError:
            if state:  # files there, none readable: the error says which
                raise
        # The folders hold no document any more: the store follows them, empty.
        known = _stored_doc_ids(self.settings.store)
        if not known:
            return IndexSummary(store=Path(self.settings.store))
        return remove_documents(known, self.settings.store, command="library sync", progress=progress)

    def watched_folders(self) -> list[Path]:
        """Each folder the index walks, and no other: hidden folders, links to folders, folders past
        GRANRAG_MAX_DEPTH and the store are not watched."""
        store = Path(self.settings.store).absolute()
        found: list[Path] = []
        for folder in self.folders:
            found += [
                f for f in walked_folders(folder, self.settings.max_depth) if not f.absolute().is_relative_to(store)
            ]
        return found

    def _folder_identities(self) -> list[tuple[int, int] | None]:
        identities: list[tuple[int, int] | None] = []
        for folder in self.folders:
            try:
                st = os.stat(folder)
                identities.append((st.st_dev, st.st_ino))
            except OSError:
                identities.append(None)
        return identities

    def _record(self, result: SyncPass) -> SyncPass:
        level = logging.WARNING if result.outcome in ("busy", "failed", "skipped") else logging.INFO
        if result.outcome != "unchanged" or result.summary is not None:
            log.log(level, "library sync: %s", result.message)
        self.last = result
        return result

    def run(self, on_pass: Callable[[SyncPass], None] | None = None) -> None:
        """Sync now, then after every quiet moment following a change, until `stop` is set. The first run's
        errors other than a busy store are raised (the store does not fit the settings, for one)."""
        import watchfiles  # the watcher only where a library is watched

        self.on_step = on_pass
        try:
            first = self.sync(strict=True)
        except SyncStopped:
            return
        if on_pass is not None:
            on_pass(first)
        watch_filter = LibraryFilter(self.folders, [Path(self.settings.store).absolute()])
        force_polling: bool | None = None
        while not self.stop.is_set():
            if not all(folder.is_dir() for folder in self.folders):  # a watch on a vanished folder sees nothing
                self.stop.wait(RETRY_SECONDS)
                continue
            log.info("library sync: watching %s", ", ".join(str(f) for f in self.folders))
            try:
                self._follow(watchfiles, watch_filter, on_pass, force_polling)
            except (OSError, RuntimeError) as exc:  # no file notifications here (an inotify limit, a network share)
                if force_polling:
                    raise
                log.warning("library sync: file notifications unavailable (%s); polling the folders instead", exc)
                force_polling = True

    def _follow(
        self,
        watchfiles: Any,
        watch_filter: LibraryFilter,
        on_pass: Callable[[SyncPass], None] | None,
        force_polling: bool | None,
    ) -> None:
        """Sync after each quiet moment until `stop` is set, or until a library folder vanishes (its watch is then
        set up again once it is back)."""
        pending = True  # the first quiet moment looks again (a walk) for what changed before the watch began
        due = 0.0  # when a pending look may run: at once, or after RETRY_SECONDS for a busy store
        watched = self._folder_identities()
        folders = self.watched_folders()
        for changes in watchfiles.watch(
            *folders,
            watch_filter=watch_filter,
            step=round(self.settings.library_settle * 1000),
            debounce=round(BATCH_SECONDS * 1000),
            stop_event=self.stop,
            rust_timeout=round(LOOK_SECONDS * 1000),
            yield_on_timeout=True,
            raise_interrupt=False,
            force_polling=force_polling,
            recursive=False,  # a recursive watch would follow folder links the index never enters
        ):
            if self.stop.is_set():
                return
            if not changes and self._folder_identities() != watched:  # unmounted or replaced without a word
                pending = True
            if not changes and (not pending or time.monotonic() < due):
                continue
            try:
                result = self.sync()
            except SyncStopped:
                return
            except Exception:  # a fault of one run must not end the watch: the next change tries again
                log.exception("library sync: the run failed; the store keeps its last generation")
                continue
            if on_pass is not None:
                on_pass(result)
            if result.outcome == "skipped" or self._folder_identities() != watched:
                return  # watched again once the folders are back
            if changes and self.watched_folders() != folders:
                return  # a folder made, removed or renamed: watched again as it now stands (the walk catches up)
            pending = result.outcome == "busy"
            due = time.monotonic() + RETRY_SECONDS if pending else 0.0


def _stored_doc_ids(store: Path) -> list[str]:
    if read_current(store) is None:
        return []
    snapshot = Snapshot.open(store)
    try:
        return sorted(snapshot.catalog.content_hashes())
    finally:
        snapshot.close()
