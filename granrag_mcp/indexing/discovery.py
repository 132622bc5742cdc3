"""Which files an index run reads: folders walked, links and non-regular files (FIFOs, sockets, devices) skipped
without being opened, and each file read once, safely."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import EXTRACTORS

log = logging.getLogger(__name__)

# Never blocks on a FIFO and never makes a terminal the controlling one; the file type is checked once it is open.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class SourceFile:
    path: Path
    doc_id: str  # POSIX path relative to the folder given on the command line
    suffix: str  # lowercased, with the dot


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    unsupported: list[Path] = field(default_factory=list)
    duplicates: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # (path, reason): not a regular file, broken link


def file_hash(path: Path) -> str:
    """SHA-256 hex digest of the file's raw bytes, read in chunks; ExtractionError if it cannot be read."""
    with _reading(path) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def read_file(path: Path) -> bytes:
    """The bytes of a regular file; ExtractionError for anything else or when it cannot be read."""
    with _reading(path) as stream:
        return stream.read()


@contextmanager
def _reading(path: Path) -> Iterator[io.BufferedReader]:
    """`path` open for reading, if it is a regular file.

    A FIFO would block the run (and its writer lock) until someone writes to it, and a device may never end, so
    the type is checked before opening and again on the open descriptor, in case the path was replaced between.
    """
    try:
        kind = _not_regular(os.stat(path).st_mode)
        if kind:
            raise ExtractionError(path, f"not a regular file ({kind})")
        descriptor = os.open(path, _OPEN_FLAGS)
        try:
            kind = _not_regular(os.fstat(descriptor).st_mode)
            if kind:
                raise ExtractionError(path, f"not a regular file ({kind})")
            stream = os.fdopen(descriptor, "rb")
        except BaseException:
            os.close(descriptor)
            raise
        with stream:
            yield stream
    except OSError as error:
        reason = "it disappeared" if isinstance(error, FileNotFoundError) else error.strerror or str(error)
        raise ExtractionError(path, f"cannot be read ({reason})") from error


def _not_regular(mode: int) -> str | None:
    """What kind of file `mode` describes when it is not a regular file, else None."""
    if stat.S_ISREG(mode):
        return None
    kinds = [
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISDIR, "folder"),
    ]
    return next((name for test, name in kinds if test(mode)), "special file")


def discover(paths: Sequence[Path]) -> Discovery:
    """The supported files under `paths` (folders walked recursively), sorted by doc id."""
    found = Discovery()
    taken: dict[str, Path] = {}
    for root in paths:
        if not root.exists():
            found.missing.append(root)
            continue
        for path, doc_id in _candidates(root, found.skipped):
            suffix = path.suffix.lower()
            if suffix not in EXTRACTORS:  # the formats' registry
                found.unsupported.append(path)
            elif doc_id in taken:
                log.warning("skipped %s: document id %r is already taken by %s", path, doc_id, taken[doc_id])
                found.duplicates.append(path)
            else:
                taken[doc_id] = path
                found.files.append(SourceFile(path=path, doc_id=doc_id, suffix=suffix))
    found.files.sort(key=lambda source: source.doc_id)
    return found


def _candidates(root: Path, skipped: list[tuple[Path, str]]) -> Iterator[tuple[Path, str]]:
    """(path, doc_id) of every visible regular file at or under `root`; the others are added to `skipped`."""
    if root.is_dir():
        paths = [(path, path.relative_to(root).as_posix()) for path in _walk(root)]
    else:
        paths = [(root, root.name)]
    for path, doc_id in paths:
        reason = _why_not_a_file(path)
        if reason is None:
            yield path, doc_id
        else:
            # Not reported as missing: the caller treats a missing path as a typo on the command line.
            log.warning("skipped %s: %s", path, reason)
            skipped.append((path, reason))


def _why_not_a_file(path: Path) -> str | None:
    """Why `path` cannot be indexed without opening it (FIFOs, sockets, devices, broken links), else None."""
    try:
        kind = _not_regular(path.stat().st_mode)
    except FileNotFoundError:
        return "broken symbolic link" if path.is_symlink() else "it disappeared"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return None if kind is None else f"not a regular file ({kind})"


def _walk(root: Path) -> Iterator[Path]:
    """Files under `root`, depth first in name order, skipping hidden names and symlinked folders."""
    for folder, subfolders, filenames in os.walk(root, onerror=_log_walk_error, followlinks=False):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(folder, name)


def _log_walk_error(error: OSError) -> None:
    log.warning("skipped %s: %s", error.filename, error.strerror or error)
