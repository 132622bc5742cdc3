"""Durable file operations: fsync, atomic replace, checksums. Every commit goes through these."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

_HASH_BLOCK = 1 << 20
_FAISS_SOURCE = re.compile(r"^Error in .*? at \S+:\d+: (?:Error: (?:'.*?' failed: )?)?")
"""FAISS prefixes its messages with the C++ function, source line and assertion that raised them: no help to a user."""


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Flush every file, then every folder (deepest first), so a rename of `root` publishes complete data."""
    folders: list[Path] = []
    for folder, _, files in os.walk(root):
        folders.append(Path(folder))
        for name in files:
            fsync_file(Path(folder) / name)
    for walked in reversed(folders):
        fsync_dir(walked)


def write_atomic(path: Path, data: bytes, sync_dir: bool = True) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new content, never a mix.

    With `sync_dir` False the caller flushes the folder itself (and decides what a failure there means).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a half-written copy on a full disk only keeps it full
            tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def failure_cause(exc: BaseException) -> str:
    """Why a write failed, on one line: the OS's reason and the file's name, or the library's own first line."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({Path(exc.filename).name})" if exc.filename else exc.strerror
    lines = str(exc).strip().splitlines()
    return _FAISS_SOURCE.sub("", lines[0]) if lines else type(exc).__name__
