"""The stdio wire served on the event loop itself: no thread hop per message.

The SDK's stdio transport reads each line and writes each answer in a worker thread (`anyio.wrap_file`): three
thread hand-offs per tool call, about 0.4 ms on an idle machine and more when the cores are busy. When stdin and
stdout are pipes or sockets, asyncio can watch them directly, which is what `wire_pipes` sets up. Anything else (a
regular file, a terminal, another event loop than asyncio, Windows) gets ``(None, None)`` and the SDK's own
transport, which handles every case.

Like the SDK, it keeps the wire to itself while serving: fd 0 reads the null device and fd 1 goes to stderr, so a
stray ``print`` or a child process cannot corrupt the protocol; both are put back on exit.
"""

import asyncio
import logging
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager, suppress

log = logging.getLogger(__name__)

STDIN_FD = 0
STDOUT_FD = 1
READ_SIZE = 1 << 16
# A JSON-RPC line longer than this is dropped (and logged) rather than buffered without end.
MAX_LINE_BYTES = 64 << 20
FINAL_FLUSH_SECONDS = 5.0


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _backed_by(stream: object, fd: int) -> bool:
    try:
        return stream.buffer.fileno() == fd  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def wire_is_pipes() -> bool:
    """Whether this process's stdin and stdout are two distinct pipes or sockets that asyncio can watch."""
    if sys.platform == "win32" or not (_backed_by(sys.stdin, STDIN_FD) and _backed_by(sys.stdout, STDOUT_FD)):
        return False
    if not (_is_pipe_or_socket(STDIN_FD) and _is_pipe_or_socket(STDOUT_FD)):
        return False
    # One socket on both descriptors would make the writer take every incoming byte for the peer hanging up.
    return not os.path.sameopenfile(STDIN_FD, STDOUT_FD)


def _running_on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class LineReader:
    """The lines of a byte stream as text (UTF-8, undecodable bytes replaced), for ``async for``."""

    def __init__(self, reader: asyncio.StreamReader, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._reader = reader
        self._max = max_line_bytes
        self._partial = bytearray()
        self._lines: deque[bytes] = deque()
        self._skipping = False

    def __aiter__(self) -> "LineReader":
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            chunk = await self._reader.read(READ_SIZE)
            if not chunk:
                if self._partial and not self._skipping:
                    self._lines.append(bytes(self._partial))
                self._partial.clear()
                if not self._lines:
                    raise StopAsyncIteration
                break
            self._take(chunk)
        return self._lines.popleft().decode("utf-8", errors="replace")

    def _take(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            if not self._skipping and not self._too_long(len(self._partial) + len(piece)):
                self._partial += piece
                self._lines.append(bytes(self._partial) + b"\n")
            self._partial.clear()
            self._skipping = False
        if not self._skipping:
            self._partial += rest
            if self._too_long(len(self._partial)):
                self._partial.clear()
                self._skipping = True

    def _too_long(self, size: int) -> bool:
        if size <= self._max:
            return False
        log.warning("dropped an incoming line longer than %d bytes", self._max)
        return True


class _WriteFlow(asyncio.Protocol):
    """Back-pressure for a write pipe: `drain` waits while the pipe is full and fails once the peer is gone."""

    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost: BaseException | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or BrokenPipeError("the client closed its end of stdout")
        self._wake(self._lost)

    def _wake(self, error: BaseException | None) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)

    async def drain(self) -> None:
        if self._lost is not None:
            raise self._lost
        if self._paused:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


class LineWriter:
    """Text written to a pipe transport; `flush` returns once the pipe has taken it (or raises if it is gone)."""

    def __init__(self, transport: asyncio.WriteTransport, flow: _WriteFlow) -> None:
        self._transport = transport
        self._flow = flow

    async def write(self, text: str) -> None:
        if self._transport.is_closing():
            await self._flow.drain()
            raise BrokenPipeError("stdout is closed")
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._flow.drain()


def _claim(fd: int, divert_to: int) -> int:
    """A private duplicate of `fd` (close-on-exec, above 2), with `fd` itself pointed at `divert_to`."""
    import fcntl

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(divert_to, fd)
    except OSError:
        os.close(private)
        raise
    return private


def _release(fd: int, private: int) -> None:
    with suppress(OSError):
        os.set_blocking(private, True)  # the pipe is shared with the client and whoever inherits it next
    with suppress(OSError):
        os.dup2(private, fd)
    with suppress(OSError):
        os.close(private)


@asynccontextmanager
async def wire_pipes() -> AsyncIterator[tuple[LineReader, LineWriter] | tuple[None, None]]:
    """Line reader and writer for the stdio wire, or ``(None, None)`` when the SDK's transport should serve it."""
    if not (_running_on_asyncio() and wire_is_pipes()):
        yield None, None
        return
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    with ExitStack() as cleanup:
        try:
            null_fd = os.open(os.devnull, os.O_RDONLY)
            cleanup.callback(os.close, null_fd)
            stderr_copy = os.dup(2)
            cleanup.callback(os.close, stderr_copy)
            wire_in = _claim(STDIN_FD, null_fd)
            cleanup.callback(_release, STDIN_FD, wire_in)
            wire_out = _claim(STDOUT_FD, stderr_copy)
            cleanup.callback(_release, STDOUT_FD, wire_out)
        except OSError as exc:
            log.debug("serving stdio through the SDK's threads: %s", exc)
            cleanup.close()
            yield None, None
            return
        reader = asyncio.StreamReader(limit=READ_SIZE, loop=loop)
        # closefd=False: the descriptors are put back on fd 0 and 1 on exit, then closed by `_release`.
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(wire_in, "rb", closefd=False))
        cleanup.callback(read_transport.close)
        write_transport, flow = await loop.connect_write_pipe(_WriteFlow, os.fdopen(wire_out, "wb", closefd=False))
        cleanup.callback(write_transport.close)
        yield LineReader(reader), LineWriter(write_transport, flow)
        # Answers the pipe has not taken yet still belong to the client, if it reads them soon.
        deadline = loop.time() + FINAL_FLUSH_SECONDS
        while write_transport.get_write_buffer_size() and not write_transport.is_closing() and loop.time() < deadline:
            await asyncio.sleep(0.005)
