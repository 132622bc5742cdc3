"""Opening a file to read it, checked where it is read: a regular file, under a size cap, and (when the run has
allowed roots) really inside them, whatever was swapped in since the path was named.

Checking a path and then opening it leaves a gap in which another process can replace the file or a folder
above it with a symbolic link. So the path is resolved, its last component opened without following a link, and
the real path of the open descriptor, which no later swap can change, checked against the roots.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from granrag_mcp.errors import ExtractionError

# Never blocks on a FIFO and never makes a terminal the controlling one; the file type is checked once it is open.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FD_LINKS = Path("/proc/self/fd")


def inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


@contextmanager
def reading(path: Path, roots: Sequence[Path] | None = None, max_bytes: int = 0) -> Iterator[io.BufferedReader]:
    """`path` open for reading if it is a regular file of at most `max_bytes` (0: any size) that lies inside
    `roots` (real paths; None: anywhere, as on the command line); else ExtractionError saying why.

    A FIFO would block the run (and its writer lock) until someone writes to it, and a device may never end, so
    the type is checked before opening and again on the open descriptor, in case the path was replaced between.
    """
    try:
        target = Path(os.path.realpath(path)) if roots is not None else path
        if roots is not None and not inside(target, roots):
            raise ExtractionError(path, f"leads to {target}, outside the allowed roots")
        kind = not_regular(os.stat(target).st_mode)
        if kind:
            raise ExtractionError(path, f"not a regular file ({kind})")
        # A link swapped in after the resolve above fails here (ELOOP) instead of being followed.
        descriptor = os.open(target, _OPEN_FLAGS | (_NO_FOLLOW if roots is not None else 0))
        try:
            _check_open(path, descriptor, roots, max_bytes)
            stream = os.fdopen(descriptor, "rb")
        except BaseException:
            os.close(descriptor)
            raise
        with stream:
            yield stream
    except OSError as error:
        reason = "it disappeared" if isinstance(error, FileNotFoundError) else error.strerror or str(error)
        raise ExtractionError(path, f"cannot be read ({reason})") from error


def _check_open(path: Path, descriptor: int, roots: Sequence[Path] | None, max_bytes: int) -> None:
    """What was actually opened: its type, its size, and where it really lies."""
    status = os.fstat(descriptor)
    kind = not_regular(status.st_mode)
    if kind:
        raise ExtractionError(path, f"not a regular file ({kind})")
    if max_bytes and status.st_size > max_bytes:
        raise ExtractionError(
            path,
            f"{status.st_size:,} bytes, over GRANRAG_MAX_FILE_BYTES ({max_bytes:,}); raise it to index this file",
        )
    if roots is None:
        return
    opened = opened_path(descriptor, path)
    if not inside(opened, roots):
        raise ExtractionError(path, f"was swapped for a link to {opened}, outside the allowed roots; not read")


def opened_path(descriptor: int, path: Path) -> Path:
    """The real path of an open descriptor: from /proc where there is one, else the resolved path, accepted only
    if it is the very file that was opened."""
    link = _FD_LINKS / str(descriptor)
    if _FD_LINKS.is_dir():
        return Path(os.readlink(link))
    real = Path(os.path.realpath(path))
    opened, named = os.fstat(descriptor), os.stat(real)
    if (opened.st_dev, opened.st_ino) != (named.st_dev, named.st_ino):
        raise ExtractionError(path, "changed while it was opened; not read")
    return real


def not_regular(mode: int) -> str | None:
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
