"""Durable file operations: fsync, atomic replace, checksums. Every commit goes through these."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_HASH_BLOCK = 1 << 20


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
    folders = []
    for folder, _, files in os.walk(root):
        folders.append(Path(folder))
        for name in files:
            fsync_file(Path(folder) / name)
    for folder in reversed(folders):
        fsync_dir(folder)


def write_atomic(path: Path, data: bytes, sync_dir: bool = True) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new content, never a mix.

    With `sync_dir` False the caller flushes the folder itself (and decides what a failure there means).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
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
