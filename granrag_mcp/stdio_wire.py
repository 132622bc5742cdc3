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
import socket
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager, suppress

import anyio

log = logging.getLogger(__name__)

STDIN_FD = 0
STDOUT_FD = 1
STDERR_FD = 2
READ_SIZE = 1 << 16
# A JSON-RPC line longer than this is dropped (and logged) rather than buffered without end.
MAX_LINE_BYTES = 64 << 20
FINAL_FLUSH_SECONDS = 5.0


def _is_socket(fd: int) -> bool:
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _is_pipe_or_stream_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISFIFO(mode):
        return True
    if not stat.S_ISSOCK(mode):
        return False
    with socket.socket(fileno=os.dup(fd)) as probe:
        return probe.type == socket.SOCK_STREAM


def _same_file(fd: int, other: int) -> bool:
    try:
        return os.path.sameopenfile(fd, other)
    except OSError:
        return False


def _backed_by(stream: object, fd: int) -> bool:
    try:
        return stream.buffer.fileno() == fd  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def wire_is_pipes() -> bool:
    """Whether this process's stdin and stdout are two distinct pipes or stream sockets that asyncio can watch."""
    if sys.platform == "win32" or not (_backed_by(sys.stdin, STDIN_FD) and _backed_by(sys.stdout, STDOUT_FD)):
        return False
    if not (_is_pipe_or_stream_socket(STDIN_FD) and _is_pipe_or_stream_socket(STDOUT_FD)):
        return False
    # Not one socket on both (the reader and the writer would share its input), and not stderr on the wire's
    # pipe (`2>&1`): the writer makes the pipe non-blocking, and a log line could then fail halfway.
    return not (_same_file(STDIN_FD, STDOUT_FD) or _same_file(STDOUT_FD, STDERR_FD))


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
    """Back-pressure for the wire: `drain` waits until the transport has handed everything to the kernel (its
    high-water mark is 0) and fails once the peer is gone."""

    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost = False
        self._cause: Exception | None = None  # what the transport reported, if anything

    def eof_received(self) -> bool:
        return True  # a socket peer that shuts down its sending side still reads our answers

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost, self._cause = True, exc
        self._wake(self._broken())

    def _broken(self) -> BrokenPipeError:
        error = BrokenPipeError("the client closed its end of stdout")  # a new one each time: tracebacks pile up
        error.__cause__ = self._cause
        return error

    def _wake(self, error: BaseException | None) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)

    async def drain(self) -> None:
        if self._lost:
            raise self._broken()
        if self._paused:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


class LineWriter:
    """Text written to the wire; `flush` returns once the kernel has taken all of it (or raises if it is gone)."""

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
        # Run in reverse on the way out: transports first, then stray output, then fd 1 and fd 0 put back.
        cleanup.callback(_flush_stray_output)
        reader = asyncio.StreamReader(limit=READ_SIZE, loop=loop)
        # closefd=False: the descriptors are put back on fd 0 and 1 on exit, then closed by `_release`.
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(wire_in, "rb", closefd=False))
        cleanup.callback(read_transport.close)
        write_transport, flow = await _connect_writer(loop, wire_out)
        # abort, not close: close keeps the descriptor registered with the loop while bytes are pending, and the
        # descriptor is closed right after; `_deliver` has already sent whatever the client would still take.
        cleanup.callback(write_transport.abort)
        try:
            yield LineReader(reader), LineWriter(write_transport, flow)
        finally:
            await _deliver(flow)


async def _connect_writer(loop: asyncio.AbstractEventLoop, fd: int) -> tuple[asyncio.WriteTransport, _WriteFlow]:
    if _is_socket(fd):
        # A pipe transport on a socket takes any readable event for the peer hanging up; a socket transport with
        # reading paused does not (its own duplicate of the descriptor, closed with the transport).
        transport, flow = await loop.connect_accepted_socket(_WriteFlow, socket.socket(fileno=os.dup(fd)))
        transport.pause_reading()
    else:
        transport, flow = await loop.connect_write_pipe(_WriteFlow, os.fdopen(fd, "wb", closefd=False))
    transport.set_write_buffer_limits(high=0)
    return transport, flow  # type: ignore[return-value]


async def _deliver(flow: _WriteFlow) -> None:
    """Wait (a bounded time, even when cancelled) for answers the kernel has not taken yet."""
    with anyio.move_on_after(FINAL_FLUSH_SECONDS, shield=True), suppress(OSError):
        await flow.drain()


def _flush_stray_output() -> None:
    with suppress(OSError, ValueError):
        sys.stdout.flush()  # while fd 1 still points at stderr, not at the wire
