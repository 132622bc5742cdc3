"""The single writer: the store's lock, leftovers of interrupted runs cleaned, new generations published
atomically, and the fall back to the previous generation (`recover`)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import filelock

from granrag_mcp.errors import (
    GranragError,
    IndexBusyError,
    StoreAccessError,
    StoreCorruptError,
    StoreMismatchError,
    StoreWriteError,
)
from granrag_mcp.store.durable import failure_cause, fsync_dir, fsync_tree, sha256_bytes, sha256_file, write_atomic
from granrag_mcp.store.manifest import FORMAT_VERSION, MANIFEST_FILE, FileEntry, Manifest
from granrag_mcp.store.store import (
    CURRENT_FILE,
    HOLDER_FILE,
    KEEP_GENERATIONS,
    LOCK_FILE,
    TMP_PREFIX,
    check_store_location,
    generation_name,
    readable_current_generation,
    verify_files,
)

log = logging.getLogger(__name__)


def acquire_writer_lock(root: Path) -> filelock.FileLock:
    """Take the store's writer lock without waiting; filelock.Timeout if another process holds it.

    Creating the lock file is the writer's first write to the store, so an OSError here means the folder
    cannot be written at all (a read-only file system, no permission).
    """
    lock = filelock.FileLock(str(root / LOCK_FILE), timeout=0)
    lock.acquire()
    return lock


class StoreWriter:
    """The single writer: holds the lock, cleans leftovers, and publishes new generations."""

    def __init__(self, root: Path, command: str = "index") -> None:
        self.root = Path(root)
        self.command = command
        self._lock: filelock.FileLock | None = None

    def __enter__(self) -> StoreWriter:
        check_store_location(self.root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreAccessError(
                f"cannot create the store folder {self.root}: {exc.strerror}; pass --store (or GRANRAG_STORE) "
                f"a folder on a writable file system"
            ) from exc
        try:
            self._lock = acquire_writer_lock(self.root)
        except filelock.Timeout:
            raise IndexBusyError(
                f"index busy: {self._holder()} is writing to {self.root}; wait for it to finish, or stop that process"
            ) from None
        except OSError as exc:
            raise StoreAccessError(
                f"cannot write to the store {self.root} ({exc.strerror} on {LOCK_FILE}): `{self.command}` needs "
                f"write access; make the folder writable, or copy the store to a writable folder and pass that "
                f"with --store (`serve`, `search` and `status` only read a store)"
            ) from exc
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": self.command,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        try:  # informational only: it lets a second writer name the holder (a full disk is reported by the commit)
            (self.root / HOLDER_FILE).write_text(json.dumps(holder))
        except OSError as exc:
            log.debug("cannot record the lock holder in %s: %s", self.root / HOLDER_FILE, exc)
        self.clean_leftovers()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._lock is not None:
            (self.root / HOLDER_FILE).unlink(missing_ok=True)  # before the release: no record outlives its holder
            self._lock.release()
            self._lock = None

    def _holder(self, attempts: int = 5) -> str:
        """Who holds the lock; the holder writes its record just after taking the lock, so wait a moment for it."""
        for attempt in range(attempts):
            try:
                holder = json.loads((self.root / HOLDER_FILE).read_text())
                return (
                    f"process {holder['pid']} on {holder['host']} (`granrag-mcp {holder['command']}` since "
                    f"{holder['since']})"
                )
            except (OSError, ValueError, KeyError):
                if attempt + 1 < attempts:
                    time.sleep(0.1)
        return "another process"

    def clean_leftovers(self) -> None:
        """Remove half-built generations and generations older than the fallback. Only the lock holder calls this."""
        for path in self.root.glob(f"{TMP_PREFIX}*"):
            log.info("removing %s left by an interrupted commit", path.name)
            shutil.rmtree(path, ignore_errors=True)
        for path in self.root.glob(".CURRENT.*.tmp"):
            path.unlink(missing_ok=True)
        current = readable_current_generation(self.root)
        generations = sorted(p.name for p in self.root.glob("gen-*") if p.is_dir())
        if current in generations:
            keep = set(generations[: generations.index(current) + 1][-KEEP_GENERATIONS:])
            for name in generations:
                if name not in keep:
                    shutil.rmtree(self.root / name, ignore_errors=True)

    def numbering(self) -> tuple[int, int]:
        """The highest generation number in the store and the first chunk id no readable manifest has used."""
        last, first_free = 0, 1
        for path in self.root.glob("gen-*"):
            try:
                last = max(last, int(path.name.removeprefix("gen-")))
                manifest = Manifest.model_validate_json((path / MANIFEST_FILE).read_bytes())
            except (ValueError, OSError):  # a foreign name, or a generation without a readable manifest
                continue
            first_free = max(first_free, manifest.next_chunk_id)
        return last, first_free

    def new_folder(self, generation: int) -> Path:
        folder = self.root / f"{TMP_PREFIX}{generation:06d}-{os.getpid()}"
        folder.mkdir()
        return folder

    @contextmanager
    def committing(self, generation: int) -> Iterator[None]:
        """Around the writing and publishing of `generation`: whatever stops it (a full disk shows up as OSError,
        sqlite3.OperationalError or a FAISS RuntimeError, or the run is cancelled), its half-built generation goes,
        since left behind it would keep the disk full, and a failure is one line naming its cause."""
        try:
            yield
        except BaseException as exc:
            self.abandon(generation)
            if isinstance(exc, GranragError) or not isinstance(exc, Exception):
                raise
            log.debug("commit of generation %d failed", generation, exc_info=True)
            now = readable_current_generation(self.root) or "none"
            raise StoreWriteError(
                f"could not commit generation {generation} to {self.root}: {failure_cause(exc)}; the current "
                f"generation is {now} and is intact. Free disk space or fix the file system, then run the command "
                "again"
            ) from exc

    def abandon(self, generation: int) -> None:
        """Best-effort removal of what a failed commit of `generation` left behind."""
        for path in self.root.glob(f"{TMP_PREFIX}{generation:06d}-{os.getpid()}"):
            shutil.rmtree(path, ignore_errors=True)
        final = self.root / generation_name(generation)
        if final.exists() and readable_current_generation(self.root) != final.name:
            shutil.rmtree(final, ignore_errors=True)

    def publish(self, folder: Path, manifest: Manifest) -> Path:
        """Checksum, flush and publish a fully written generation folder; return its final path."""
        files = {}
        for path in sorted(folder.iterdir()):
            files[path.name] = FileEntry(sha256=sha256_file(path), bytes=path.stat().st_size)
        manifest = manifest.model_copy(update={"files": files})
        data = manifest.model_dump_json(indent=2).encode()
        (folder / MANIFEST_FILE).write_bytes(data)
        fsync_tree(folder)
        final = self.root / generation_name(manifest.generation)
        if final.exists():  # a generation published but never made current (crash between renames)
            if readable_current_generation(self.root) == final.name:
                raise StoreCorruptError(
                    f"refusing to replace {final.name} in {self.root}: it is the current generation"
                )
            shutil.rmtree(final)
        os.rename(folder, final)
        fsync_dir(self.root)
        write_atomic(self.root / CURRENT_FILE, f"{final.name} {sha256_bytes(data)}\n".encode("ascii"), sync_dir=False)
        try:  # the new generation is current from here on; a crash before this flush may bring back the old one
            fsync_dir(self.root)
        except OSError as exc:
            log.warning("%s is current, but flushing %s failed (%s)", final.name, self.root, exc)
        try:  # also past the commit: leftovers are removed again by the next writer
            self.clean_leftovers()
        except OSError as exc:
            log.warning("%s is current, but removing older generations from %s failed (%s)", final.name, self.root, exc)
        return final

    def rollback(self) -> str:
        """Make the newest intact generation older than the current one current again."""
        current = readable_current_generation(self.root)
        candidates = sorted((p.name for p in self.root.glob("gen-*") if p.is_dir()), reverse=True)
        for name in candidates:
            if name == current:
                continue
            manifest_path = self.root / name / MANIFEST_FILE
            try:
                data = manifest_path.read_bytes()
                manifest = Manifest.model_validate_json(data)
                if manifest.format_version != FORMAT_VERSION:  # this code cannot read it
                    raise StoreMismatchError(f"format version {manifest.format_version}, not {FORMAT_VERSION}")
                verify_files(self.root, self.root / name, manifest)
            except Exception as exc:  # any damage disqualifies the candidate
                log.warning("generation %s is not usable: %s", name, exc)
                continue
            try:
                write_atomic(self.root / CURRENT_FILE, f"{name} {sha256_bytes(data)}\n".encode("ascii"))
            except OSError as exc:
                now = readable_current_generation(self.root) or "none"
                raise StoreWriteError(
                    f"could not make {name} current in {self.root}: {exc.strerror or exc}; the current generation is "
                    f"{now}. Free disk space or fix the file system, then run the command again"
                ) from exc
            return name
        raise StoreCorruptError(
            f"no intact generation to fall back to in {self.root}; rebuild with "
            f"`granrag-mcp index PATH... --rebuild --store {self.root}`"
        )
