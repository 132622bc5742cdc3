"""Generations on disk, the CURRENT pointer and opening a verified snapshot. The single writer is in `writer`.

Layout of a store folder::

    CURRENT                 "gen-000007 <sha256 of its manifest.json>"
    gen-000007/             the current generation (never modified once published)
        manifest.json       identity, counts and a checksum for every file below
        catalog.sqlite      documents and chunk metadata
        broad.faiss mid.faiss narrow.faiss
        broad.bm25.*.npy mid.bm25.*.npy narrow.bm25.*.npy    one plain .npy file per BM25 array
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
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from granrag_mcp.errors import (
    StoreAccessError,
    StoreCorruptError,
    StoreMismatchError,
    StoreNotFoundError,
)
from granrag_mcp.levels import LEVELS, Level
from granrag_mcp.store.catalog import Catalog
from granrag_mcp.store.durable import sha256_bytes, sha256_file
from granrag_mcp.store.manifest import FORMAT_NAME, FORMAT_VERSION, MANIFEST_FILE, Manifest, StoreIdentity

if TYPE_CHECKING:
    from granrag_mcp.store.graph import ConceptGraph
    from granrag_mcp.store.token_vectors import TokenVectors

log = logging.getLogger(__name__)

CURRENT_FILE = "CURRENT"
LOCK_FILE = "writer.lock"
HOLDER_FILE = "writer.holder.json"
CATALOG_FILE = "catalog.sqlite"
TMP_PREFIX = ".tmp-gen-"
RANKER_FILE = "candidate_ranker.json"
"""A candidate ranker fitted on the user's questions (`eval --fit-ranker`), carried from generation to generation."""
KEEP_GENERATIONS = 2


def vector_file(level: Level) -> str:
    return f"{level}.faiss"


def lexical_file(level: Level) -> str:
    """The name a level's BM25 index is written under: its arrays are the files `<name>.<array>.npy`."""
    return f"{level}.bm25"


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
            f"{FORMAT_NAME!r} version {FORMAT_VERSION}: rebuild with "
            f"`granrag-mcp index PATH... --rebuild --store {root}`"
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
        from granrag_mcp.store.vector_index import VectorIndex  # the server answers `initialize` before it needs them

        self.vectors = {level: VectorIndex.read(folder / vector_file(level)) for level in LEVELS}
        self.lexical = {level: LexicalIndex.read(folder / lexical_file(level)) for level in LEVELS}

    @property
    def generation(self) -> int:
        return self.manifest.generation

    @functools.cached_property
    def token_vectors(self) -> TokenVectors | None:
        """The sentences' token vectors, memory-mapped on first use (None in a store built without them)."""
        from granrag_mcp.store.token_vectors import TokenVectors

        return TokenVectors.read(self.folder) if self.manifest.identity.token_vector_dims else None

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


def carry_ranker(base_folder: Path | None, folder: Path) -> None:
    """Copy the base generation's fitted ranker into a new generation folder being written, if it has one."""
    if base_folder is not None and (base_folder / RANKER_FILE).is_file():
        shutil.copyfile(base_folder / RANKER_FILE, folder / RANKER_FILE)
