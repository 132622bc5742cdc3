"""Real file systems for write-failure tests: a small tmpfs (a disk that fills up) and a read-only view of a folder.

Mounting needs privileges that a container or a user may lack; a test that needs a mount is then skipped with the
reason, and its twin that injects the same failure still runs. Running as root does not stand in for these: root
ignores file modes, but not a read-only or a full file system.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    if shutil.which("mount") is None:
        pytest.skip("needs a real mount, and this system has no `mount` command")
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    if result.returncode != 0:
        reason = " ".join(result.stderr.split()) or f"exit status {result.returncode}"
        pytest.skip(f"needs a real mount, which is not permitted here: {reason}")


def _unmount(target: Path) -> None:
    # A test may still map a file of the mount (FAISS maps index files); a lazy unmount detaches it anyway.
    if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=True)


@contextmanager
def small_disk(target: Path, kib: int) -> Iterator[Path]:
    """A tmpfs of `kib` KiB at `target`: writes beyond it fail with ENOSPC, as on a full disk."""
    target.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(target))
    try:
        yield target
    finally:
        _unmount(target)


def resize(disk: Path, kib: int) -> None:
    """Give a small disk more (or less) room, as a user does by freeing space."""
    subprocess.run(["mount", "-o", f"remount,size={kib}k", str(disk)], capture_output=True, check=True)


@contextmanager
def read_only_view(source: Path, target: Path) -> Iterator[Path]:
    """`source` seen through a read-only bind mount at `target`: every write there fails with EROFS."""
    target.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(source), str(target))
    try:
        _mount("-o", "remount,ro,bind", str(target))
        yield target
    finally:
        _unmount(target)


def fill(disk: Path) -> Path:
    """Write a file that takes every free byte of `disk`; delete it to free the space again."""
    filler = disk / "filler"
    block = b"\0" * 4096
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(block)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler
