"""Guards of the HTTP transport below ASGI: a connection limit, a deadline for each request head, and a bound on
repeated log lines.

uvicorn has no timeout for reading a request head: its keep-alive timer is cancelled by any byte, so a client that
sends one byte a second holds its connection (and a file descriptor) forever. Its ``limit_concurrency`` answers 503
only once a request head has been parsed, so it does not bound connections either. The guard is an asyncio protocol
that wraps uvicorn's own HTTP protocol (passed as ``uvicorn.Config(http=...)``). At the limit it closes, to make room,
the oldest connection that is truly idle (no request being served, no byte of one received, quiet for
IDLE_BEFORE_EVICTION); else it answers the new connection 503 with Retry-After at once, so that a client that has
sent its request, or has just connected to send it, always gets an answer. It closes a connection that has not
delivered a complete request (head and body) within the deadline, counted from connecting or from the end of its
previous request. An ASGI middleware of the same guard tells it when a request of a connection reaches the
application and when the application is done with it; the two meet on the peer address, which is unique among the
open connections of one listening socket.

Longer than most modules because the protocol wrapper and the ASGI middleware are two halves of one guard
that meet on the peer address.
"""

from __future__ import annotations

import array
import asyncio
import errno
import json
import logging
import time
from collections.abc import MutableMapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

Peer = tuple[str, int]

REFUSAL_LINGER = 1.0
"""Seconds a refused connection stays open after its 503 is written, reading and dropping what the client sends:
closing a socket with unread input makes the kernel reset the connection, and the client could see the reset
instead of the 503. At most max_connections refused connections linger at a time, so a flood of connections
needs at most twice the limit in descriptors; past that they are closed at once."""

MAX_BACKLOG = 128
"""Most pending connections the kernel queues. asyncio accepts up to this many in a row on each wake-up before any of
them reaches a protocol (and the limit), so the backlog is also capped at the connection limit: the descriptors of
one such batch count against the open-file limit too."""

FILES_BESIDES_CONNECTIONS = 64
"""Descriptors the server needs besides its connections: the index files, the model, the event loop, pipes."""

IDLE_BEFORE_EVICTION = 1.0
"""Seconds a connection must have been quiet (nothing received, nothing served) before it may be closed to make room:
a client that has just connected is about to send its request, and closing it then would leave that request
unanswered."""

RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def peer_of(transport: asyncio.BaseTransport) -> Peer | None:
    """The peer address as uvicorn puts it in the ASGI scope's ``client``."""
    info = transport.get_extra_info("peername")
    if isinstance(info, (list, tuple)) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return None


def unread(transport: asyncio.BaseTransport | None) -> bool:
    """Whether the connection's socket holds bytes the event loop has not read yet (a request already sent by a
    client the loop has not got to); False where that cannot be asked."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return False
    try:
        import fcntl
        import termios

        waiting = array.array("i", [0])
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, waiting)
    except (ImportError, OSError, ValueError):  # no such call here (Windows), or the socket is gone
        return False
    return waiting[0] > 0


def has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


def refusal(open_connections: int) -> bytes:
    body = json.dumps(
        {
            "error": "too_many_connections",
            "error_description": f"the server already has {open_connections} connections open "
            "(GRANRAG_HTTP_MAX_CONNECTIONS): retry shortly, or close idle connections",
        }
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    return head + body


class ConnectionGuard:
    """Shared state of one listening socket: the admitted connections by peer address."""

    def __init__(self, max_connections: int, header_timeout: float) -> None:
        if max_connections < 1 or not header_timeout > 0:
            raise ValueError("max_connections must be at least 1 and header_timeout positive")
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.connections: dict[Peer, GuardedConnection] = {}
        self.admitted = 0
        self.lingering = 0

    @property
    def backlog(self) -> int:
        return min(MAX_BACKLOG, self.max_connections)

    @property
    def descriptors_needed(self) -> int:
        """Admitted connections, as many lingering refusals, one batch of accepts, and the rest of the server."""
        return 2 * self.max_connections + self.backlog + FILES_BESIDES_CONNECTIONS

    def protocol(self, inner: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
        """A protocol class for ``uvicorn.Config(http=...)`` that guards each connection of `inner`."""
        guard = self

        class Guarded(GuardedConnection):
            def __init__(self, **options: Any) -> None:
                super().__init__(guard, inner, options)

        return Guarded

    def track_requests(self, app: ASGIApp) -> ASGIApp:
        """Wrap the outermost ASGI app so the guard knows while a connection has a request being served."""

        async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
            client = scope.get("client") if scope["type"] == "http" else None
            connection = self.connections.get(tuple(client)) if client else None
            if connection is None:
                await app(scope, receive, send)
                return
            connection.request_started()
            if not has_body(scope):
                connection.body_received()

            async def body(receive: Receive = receive) -> MutableMapping[str, Any]:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body"):
                    connection.body_received()
                return message

            try:
                await app(scope, body, send)
            finally:
                connection.request_finished()

        return tracked

    def admit(self, connection: GuardedConnection) -> bool:
        """Admit `connection`, closing the oldest one with no request being served if the limit is reached: a
        client that is slow to send its request then loses its place to one that is not, instead of the reverse."""
        if self.admitted >= self.max_connections:
            now = time.monotonic()
            idle = next((c for c in self.connections.values() if c.idle(now)), None)
            if idle is None:
                return False
            idle.evict()
        self.admitted += 1
        if connection.peer is not None:
            self.connections[connection.peer] = connection
        return True

    def release(self, connection: GuardedConnection) -> None:
        self.admitted -= 1
        if connection.peer is not None and self.connections.get(connection.peer) is connection:
            del self.connections[connection.peer]


class GuardedConnection(asyncio.Protocol):
    """One connection: refused past the limit, else handed to the inner protocol under a request-head deadline."""

    def __init__(self, guard: ConnectionGuard, inner: type[asyncio.Protocol], options: dict[str, Any]) -> None:
        self.guard = guard
        self.inner_class = inner
        self.options = options
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.peer: Peer | None = None
        self.in_flight = 0
        self.timer: asyncio.TimerHandle | None = None
        self.lingers = False  # a refused connection waiting for REFUSAL_LINGER
        self.closing = False
        self.unserved = False  # bytes received that are not yet a request the application has taken whole
        self.active = time.monotonic()  # when it last received a byte or finished a request

    # asyncio.Protocol ------------------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.peer = peer_of(transport)
        if not self.guard.admit(self):
            self.refuse()
            return
        self.inner = self.inner_class(**self.options)
        self.inner.connection_made(transport)
        self.arm()

    def data_received(self, data: bytes) -> None:
        self.unserved = True
        self.active = time.monotonic()
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self.inner is None:
            return None  # a refused connection: the transport closes itself
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.lingers:
            self.guard.lingering -= 1
        self.disarm()
        if self.inner is not None:
            self.guard.release(self)
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    # the guard -------------------------------------------------------------------------------------------------------

    def refuse(self) -> None:
        assert self.transport is not None
        open_connections = self.guard.admitted
        log.warning(
            "refused a connection from %s: %d connections are open (GRANRAG_HTTP_MAX_CONNECTIONS)",
            self.peer[0] if self.peer else "?",
            open_connections,
        )
        self.transport.write(refusal(open_connections))
        if self.guard.lingering >= self.guard.max_connections or not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self.guard.lingering += 1
        self.lingers = True
        self.timer = asyncio.get_running_loop().call_later(REFUSAL_LINGER, self.transport.abort)

    def request_started(self) -> None:
        """The deadline goes on until the request's body is in: a body sent a byte at a time pins a connection
        as surely as a head sent so, and a request being served is never closed to make room."""
        self.in_flight += 1

    def body_received(self) -> None:
        self.unserved = False  # what was received is the request being served; a later byte starts the next
        self.disarm()

    def request_finished(self) -> None:
        self.in_flight -= 1
        self.active = time.monotonic()
        if self.in_flight == 0 and self.transport is not None and not self.transport.is_closing():
            self.arm()

    def idle(self, now: float) -> bool:
        """Whether closing it answers nobody: nothing being served, nothing received toward a request, and quiet."""
        if self.in_flight or self.closing or self.unserved or now - self.active < IDLE_BEFORE_EVICTION:
            return False
        return not unread(self.transport)

    def evict(self) -> None:
        log.info(
            "closed an idle connection from %s to make room for a new one (GRANRAG_HTTP_MAX_CONNECTIONS)",
            self.peer[0] if self.peer else "?",
        )
        self.close()

    def close(self) -> None:
        self.closing = True
        self.disarm()
        assert self.transport is not None
        if self.transport.get_write_buffer_size():
            self.transport.abort()  # a peer that does not read would keep a graceful close waiting forever
        else:
            self.transport.close()

    def arm(self) -> None:
        self.disarm()
        self.timer = asyncio.get_running_loop().call_later(self.guard.header_timeout, self.expire)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def expire(self) -> None:
        self.timer = None
        if self.transport is None or self.transport.is_closing():
            return
        log.info(
            "closed a connection from %s that sent no complete request within %g s (GRANRAG_HTTP_HEADER_TIMEOUT)",
            self.peer[0] if self.peer else "?",
            self.guard.header_timeout,
        )
        self.close()


# --- log floods ----------------------------------------------------------------------------------------------------


class RepeatFilter(logging.Filter):
    """Let at most `burst` records from one logging call site through per `window` seconds; the first one through
    after a quiet spell says how many were dropped, so a flood costs a few lines and stays visible. Keyed on the call
    site, not the message, because many messages are formatted before logging (a session id in each)."""

    def __init__(self, burst: int = 10, window: float = 10.0, sites: int = 1000) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.sites = sites
        self.seen: dict[tuple[str, int], tuple[float, int, int]] = {}  # site -> (window start, passed, dropped)

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.pathname, record.lineno)
        now = time.monotonic()
        start, passed, dropped = self.seen.get(key, (now, 0, 0))
        if now - start >= self.window:
            start, passed = now, 0
        if passed >= self.burst:
            self.seen[key] = (start, passed, dropped + 1)
            return False
        if dropped:
            record.msg = f"{record.msg} [{dropped} similar lines dropped]"
        if key not in self.seen and len(self.seen) >= self.sites:
            self.forget(now)
        self.seen[key] = (start, passed + 1, 0)
        return True

    def forget(self, now: float) -> None:
        """Drop the sites whose window is over, so the table stays small whatever logs through it."""
        self.seen = {k: v for k, v in self.seen.items() if now - v[0] < self.window or v[2]}


def limit_repeated_lines(logger: logging.Logger | None = None) -> RepeatFilter:
    """Put one RepeatFilter on every handler of `logger` (the root logger by default), where all records meet."""
    repeat = RepeatFilter()
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(repeat)
    return repeat


def quiet_resource_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Event-loop exception handler: running out of descriptors or memory while accepting gets one line without a
    traceback (asyncio logs it once per pending connection on every try, with a traceback each); anything else goes
    to the default handler."""
    exc = context.get("exception")
    if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS and context.get("socket") is not None:
        log.error(
            "cannot accept a connection: %s; lower GRANRAG_HTTP_MAX_CONNECTIONS or raise the open-file "
            "limit (ulimit -n)",
            exc.strerror or exc,
        )
        return
    loop.default_exception_handler(context)


def ensure_file_limit(guard: ConnectionGuard) -> None:
    """Raise the soft open-file limit toward the hard one when the connection limit needs it, else warn once."""
    try:
        import resource
    except ImportError:  # Windows has no such limit to raise
        return
    needed = guard.descriptors_needed
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft < needed:
        log.warning(
            "the open-file limit (%d) is below the %d descriptors that GRANRAG_HTTP_MAX_CONNECTIONS=%d may "
            "need: lower the setting or raise the limit (ulimit -n)",
            soft,
            needed,
            guard.max_connections,
        )
