"""Which files an index run reads: folders walked, links and non-regular files (FIFOs, sockets, devices) skipped
without being opened, and each file read once, safely."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.safe_read import not_regular, reading
from granrag_mcp.settings import LimitSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceFile:
    path: Path
    doc_id: str  # POSIX path relative to the folder given on the command line, always valid UTF-8
    suffix: str  # lowercased, with the dot
    roots: tuple[Path, ...] | None = field(default=None, compare=False)  # real folders it must lie in when read
    max_bytes: int = field(default=0, compare=False)  # larger is skipped unread (0: any size)


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    unsupported: list[Path] = field(default_factory=list)
    duplicates: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # (path, reason): not a regular file, broken link


def file_hash(path: Path, roots: Sequence[Path] | None = None, max_bytes: int = 0) -> str:
    """SHA-256 hex digest of the file's raw bytes, read in chunks; ExtractionError if it cannot be read."""
    with reading(path, roots, max_bytes) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def read_file(path: Path, roots: Sequence[Path] | None = None, max_bytes: int = 0) -> bytes:
    """The bytes of a regular file; ExtractionError for anything else or when it cannot be read."""
    with reading(path, roots, max_bytes) as stream:
        return stream.read()


def text_of(name: str) -> str:
    """A name as valid text: bytes the file system gave that are not UTF-8 (held as surrogates) written as
    `\\xff` escapes, so doc ids, the catalog and JSON can carry every name, and the same name always maps alike."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def discover(
    paths: Sequence[Path],
    roots: Sequence[Path] | None = None,
    limits: LimitSettings | None = None,
    warned: set[tuple[Path, str]] | None = None,
) -> Discovery:
    """The supported files under `paths` (folders walked to `limits.max_depth`, at most `limits.max_files`),
    sorted by doc id; each to be read only inside `roots` (real paths) when given. `warned`: the files skipped
    (special files, broken links) a caller that walks again and again has already been warned of, and adds to."""
    limits = limits or LimitSettings()
    found = Discovery()
    taken: dict[str, Path] = {}
    budget = [limits.max_files]
    kept_roots = tuple(roots) if roots is not None else None
    for root in paths:
        if not root.exists():
            found.missing.append(root)
            continue
        for path, doc_id in _candidates(root, found.skipped, limits.max_depth, budget, warned):
            suffix = path.suffix.lower()
            if suffix not in EXTRACTORS:  # the formats' registry
                found.unsupported.append(path)
            elif doc_id in taken:
                log.warning("skipped %s: document id %r is already taken by %s", path, doc_id, taken[doc_id])
                found.duplicates.append(path)
            else:
                taken[doc_id] = path
                found.files.append(SourceFile(path, doc_id, suffix, kept_roots, limits.max_file_bytes))
    found.files.sort(key=lambda source: source.doc_id)
    return found


def _candidates(
    root: Path,
    skipped: list[tuple[Path, str]],
    max_depth: int,
    budget: list[int],
    warned: set[tuple[Path, str]] | None = None,
) -> Iterator[tuple[Path, str]]:
    """(path, doc_id) of every visible regular file at or under `root`; the others are added to `skipped`.
    `budget` holds how many more files the run may take, shared by all its paths."""
    if root.is_dir():
        paths = [(path, text_of(path.relative_to(root).as_posix())) for path in _walk(root, max_depth, budget)]
    else:
        paths = [(root, text_of(root.name))]
    for path, doc_id in paths:
        reason = _why_not_a_file(path)
        if reason is None:
            yield path, doc_id
        else:
            # Not reported as missing: the caller treats a missing path as a typo on the command line.
            if warned is None or (path, reason) not in warned:
                log.warning("skipped %s: %s", path, reason)
                if warned is not None:
                    warned.add((path, reason))
            skipped.append((path, reason))


def _why_not_a_file(path: Path) -> str | None:
    """Why `path` cannot be indexed without opening it (FIFOs, sockets, devices, broken links), else None."""
    try:
        kind = not_regular(path.stat().st_mode)
    except FileNotFoundError:
        return "broken symbolic link" if path.is_symlink() else "it disappeared"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return None if kind is None else f"not a regular file ({kind})"


def _walk(root: Path, max_depth: int, budget: list[int]) -> Iterator[Path]:
    """Files under `root`, depth first in name order, skipping hidden names and symlinked folders. A stack, not
    recursion, so any depth the file system allows is walked or skipped with a warning, never a RecursionError."""
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted((entry for entry in scan if not entry.name.startswith(".")), key=lambda e: e.name)
        except OSError as error:
            _log_walk_error(error)
            continue
        subfolders = []
        for entry in entries:
            folder_kind = _folder_kind(entry)
            if folder_kind == "folder":
                subfolders.append(entry)
            if folder_kind is not None:  # a link to a folder is not followed, as before
                continue
            if budget[0] <= 0:
                log.warning("skipped %s and the files after it: over GRANRAG_MAX_FILES (run limit reached)", entry.path)
                stack.clear()
                return
            budget[0] -= 1
            yield Path(entry.path)
        if subfolders and depth + 1 > max_depth:
            log.warning("skipped the folders in %s: deeper than GRANRAG_MAX_DEPTH (%d)", folder, max_depth)
            continue
        stack.extend((Path(entry.path), depth + 1) for entry in reversed(subfolders))


def walked_folders(root: Path, max_depth: int) -> list[Path]:
    """The folders a walk of `root` enters, `root` first: not hidden, not reached through a link, at most
    `max_depth` below it. What a watch of `root` must cover, and no more."""
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        found.append(folder)
        if depth + 1 > max_depth:
            continue
        try:
            with os.scandir(folder) as scan:
                subfolders = [
                    Path(entry.path)
                    for entry in scan
                    if not entry.name.startswith(".") and _folder_kind(entry) == "folder"
                ]
        except OSError:  # unreadable or gone: the index walk warns of it
            continue
        stack.extend((sub, depth + 1) for sub in sorted(subfolders, reverse=True))
    return found


def _folder_kind(entry: os.DirEntry[str]) -> str | None:
    """ "folder", "link" for a symbolic link to a folder, or None for anything else."""
    try:
        if entry.is_dir(follow_symlinks=False):
            return "folder"
        return "link" if entry.is_symlink() and entry.is_dir() else None
    except OSError:
        return None


def _log_walk_error(error: OSError) -> None:
    log.warning("skipped %s: %s", error.filename, error.strerror or error)
