"""Generations on disk, the CURRENT pointer, opening a verified snapshot, and the single writer.

Layout of a store folder::

    CURRENT                 "gen-000007 <sha256 of its manifest.json>"
    gen-000007/             the current generation (never modified once published)
        manifest.json       identity, counts and a checksum for every file below
        catalog.sqlite      documents and chunk metadata
        broad.faiss mid.faiss narrow.faiss
        broad.bm25.npz mid.bm25.npz narrow.bm25.npz
    gen-000006/             the previous generation, kept as a fallback
    writer.lock             held by the one process that may commit
    .tmp-gen-000008-<pid>/  a generation being built (a leftover if its writer died)

A commit writes the new generation aside, flushes it, renames it into place, then atomically replaces CURRENT.
A process killed at any instant leaves CURRENT naming a complete, flushed generation.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import filelock

from granrag_mcp.chunk import LEVELS, Level
from granrag_mcp.errors import (
    IndexBusyError,
    StoreAccessError,
    StoreCorruptError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreWriteError,
)
from granrag_mcp.store.catalog import Catalog
from granrag_mcp.store.durable import fsync_dir, fsync_tree, sha256_bytes, sha256_file, write_atomic
from granrag_mcp.store.manifest import FORMAT_NAME, FORMAT_VERSION, MANIFEST_FILE, FileEntry, Manifest, StoreIdentity

if TYPE_CHECKING:
    from granrag_mcp.store.graph import ConceptGraph

log = logging.getLogger(__name__)

CURRENT_FILE = "CURRENT"
LOCK_FILE = "writer.lock"
HOLDER_FILE = "writer.holder.json"
CATALOG_FILE = "catalog.sqlite"
TMP_PREFIX = ".tmp-gen-"
KEEP_GENERATIONS = 2


def vector_file(level: Level) -> str:
    return f"{level}.faiss"


def lexical_file(level: Level) -> str:
    return f"{level}.bm25.npz"


def generation_name(number: int) -> str:
    return f"gen-{number:06d}"


@dataclass(frozen=True)
class CurrentPointer:
    generation: str
    manifest_sha256: str


def check_store_location(root: Path) -> None:
    """Refuse a store path that is, or lies under, something other than a folder.

    Without this check the user would see whatever fails first inside it (a file that exists, a CURRENT
    that is not a directory entry), which reads like a damaged store and points at the wrong remedy.
    """
    for path in (root, *root.parents):
        try:
            is_folder = path.is_dir()
            exists = is_folder or path.exists()
        except OSError:  # an ancestor we may not look into: let the operation itself report it
            return
        if is_folder:
            return
        if exists:
            problem = "is a file" if path == root else f"cannot be a folder: {path} is a file"
            raise StoreAccessError(
                f"the store {root} {problem}; pass --store (or GRANRAG_STORE) a folder (a missing one is created)"
            )


def read_current(root: Path) -> CurrentPointer | None:
    try:
        raw = (root / CURRENT_FILE).read_text(encoding="ascii").split()
    except (FileNotFoundError, NotADirectoryError):
        check_store_location(root)
        return None
    except PermissionError as exc:
        raise StoreAccessError(
            f"cannot read {root / CURRENT_FILE}: {exc.strerror}; run as a user who may read the store {root}, "
            f"or give that user read access to it"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreCorruptError(f"cannot read {root / CURRENT_FILE}: {exc}; {_recovery_hint(root)}") from exc
    if len(raw) != 2 or not raw[0].startswith("gen-"):
        raise StoreCorruptError(f"{root / CURRENT_FILE} is malformed; {_recovery_hint(root)}")
    return CurrentPointer(raw[0], raw[1])


def _recovery_hint(root: Path) -> str:
    return (
        f"run `granrag-mcp recover --store {root}` to fall back to the previous generation, "
        f"or rebuild with `granrag-mcp index PATH... --rebuild --store {root}`"
    )


def load_manifest(root: Path, pointer: CurrentPointer) -> Manifest:
    path = root / pointer.generation / MANIFEST_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StoreCorruptError(f"{path} is missing; {_recovery_hint(root)}") from None
    if sha256_bytes(data) != pointer.manifest_sha256:
        raise StoreCorruptError(f"{path} fails its checksum (it is damaged); {_recovery_hint(root)}")
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise StoreCorruptError(f"{path} is not valid JSON; {_recovery_hint(root)}") from exc
    if raw.get("format") != FORMAT_NAME or raw.get("format_version") != FORMAT_VERSION:
        raise StoreMismatchError(
            f"{path} has format {raw.get('format')!r} version {raw.get('format_version')!r}; this granrag-mcp reads "
            f"{FORMAT_NAME!r} version {FORMAT_VERSION}: rebuild with `granrag-mcp index PATH... --rebuild --store {root}`"
        )
    return Manifest.model_validate(raw)


def verify_files(root: Path, folder: Path, manifest: Manifest) -> None:
    """Check every file against the manifest before anything parses it."""
    for name, entry in manifest.files.items():
        path = folder / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise StoreCorruptError(f"{path} is missing; {_recovery_hint(root)}") from None
        if size != entry.bytes or sha256_file(path) != entry.sha256:
            raise StoreCorruptError(f"{path} fails its checksum (it is damaged); {_recovery_hint(root)}")


def check_identity(root: Path, manifest: Manifest, expected: StoreIdentity) -> None:
    differences = manifest.identity.differences(expected)
    if differences:
        raise StoreMismatchError(
            f"the store at {root} was built with other settings ({'; '.join(differences)}); "
            f"either use the store's settings, or rebuild it with `granrag-mcp index PATH... --rebuild --store {root}`"
        )


class Snapshot:
    """A read-only view of one committed generation. Later commits never change it."""

    def __init__(self, root: Path, folder: Path, manifest: Manifest) -> None:
        self.root = root
        self.folder = folder
        self.manifest = manifest
        self.catalog = Catalog.open_readonly(folder / CATALOG_FILE)
        from granrag_mcp.store.lexical import LexicalIndex  # FAISS loads here, not at import:
        from granrag_mcp.store.vectors import VectorIndex  # the server answers `initialize` before it needs them

        self.vectors = {level: VectorIndex.read(folder / vector_file(level)) for level in LEVELS}
        self.lexical = {level: LexicalIndex.read(folder / lexical_file(level)) for level in LEVELS}

    @property
    def generation(self) -> int:
        return self.manifest.generation

    @functools.cached_property
    def graph(self) -> ConceptGraph | None:
        """The concept graph, read on first use (None in a generation built without one)."""
        from granrag_mcp.store.graph import ConceptGraph

        return ConceptGraph.read(self.folder)

    @classmethod
    def open(cls, root: Path, expected: StoreIdentity | None = None, verify: bool = True) -> Snapshot:
        root = Path(root)
        for attempt in range(5):
            pointer = read_current(root)
            if pointer is None:
                raise StoreNotFoundError(
                    f"no index at {root}: build one with `granrag-mcp index PATH... --store {root}`"
                )
            try:
                manifest = load_manifest(root, pointer)
                if expected is not None:
                    check_identity(root, manifest, expected)
                folder = root / pointer.generation
                if verify:
                    verify_files(root, folder, manifest)
                return cls(root, folder, manifest)
            except (FileNotFoundError, StoreCorruptError):
                # A writer may have retired this generation between our reads: look again, then give up.
                if read_current(root) != pointer or attempt < 1:
                    time.sleep(0.05)
                    continue
                raise
        raise StoreCorruptError(f"the store at {root} kept changing while it was opened; try again")

    def close(self) -> None:
        self.catalog.close()


def current_generation(root: Path) -> str | None:
    pointer = read_current(root)
    return pointer.generation if pointer else None


def readable_current_generation(root: Path) -> str | None:
    """The current generation's name, or None when CURRENT is absent or damaged (the writer must still work)."""
    try:
        return current_generation(root)
    except StoreCorruptError:
        return None


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
                return (f"process {holder['pid']} on {holder['host']} (`granrag-mcp {holder['command']}` since "
                        f"{holder['since']})")
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
                raise StoreCorruptError(f"refusing to replace {final.name} in {self.root}: it is the current generation")
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
