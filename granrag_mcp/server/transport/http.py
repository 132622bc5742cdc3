"""The streamable HTTP transport: a static bearer token (ASGI middleware), the Host/Origin allow-lists, the
connection guards of http_guard, the session limits, and uvicorn on a socket bound before start-up, so port 0
works and the real port is known."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from granrag_mcp.errors import GranragError
from granrag_mcp.server.transport.http_guard import (
    ConnectionGuard,
    ensure_file_limit,
    limit_repeated_lines,
    quiet_resource_errors,
)
from granrag_mcp.settings import Settings, is_loopback

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 1 << 20
"""Largest HTTP request body accepted; a larger one gets 413 before it is parsed. The largest valid tool call, a
4000-character query with 100 chunk ids of 64 characters, every character sent as an escaped surrogate pair, is
under 150 KB."""


def _digest(value: str) -> bytes:
    # Comparing fixed-length digests keeps the comparison's time independent of the token's length too.
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).digest()


class BearerTokenMiddleware:
    """Refuse HTTP requests that lack ``Authorization: Bearer <token>`` with 401; lifespan events pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self.app = app
        self._expected = _digest(token)

    def authorized(self, header: str | None) -> bool:
        scheme, _, credentials = (header or "").strip().partition(" ")
        matches = hmac.compare_digest(_digest(credentials.strip()), self._expected)
        return scheme.lower() == "bearer" and matches

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Two Authorization headers are refused: proxies and servers disagree on which one counts.
        sent = Headers(scope=scope).getlist("authorization") if scope["type"] in ("http", "websocket") else []
        if scope["type"] in ("http", "websocket") and not (len(sent) == 1 and self.authorized(sent[0])):
            client = scope.get("client")
            log.warning("refused an HTTP request without a valid bearer token from %s", client[0] if client else "?")
            response = JSONResponse(
                {
                    "error": "unauthorized",
                    "error_description": "send the header 'Authorization: Bearer <GRANRAG_AUTH_TOKEN>'",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="granrag-mcp"'},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback bind: only this port on loopback names, from loopback origins.

    A non-loopback bind cannot know the names clients will use, so the Host/Origin check is off there;
    such a bind is only allowed with a bearer token (see Settings), which a rebinding page cannot send.
    """
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = ["127.0.0.1", "localhost", "[::1]"]
    if host not in ("127.0.0.1", "localhost", "::1"):
        names.append(f"[{host}]" if ":" in host else host)  # another loopback address, such as 127.0.0.2
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"http://{name}:{port}" for name in names],
    )


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise GranragError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    sock.listen(backlog)
    return sock


def run_http(server: MCPServer, settings: Settings) -> None:
    """Serve `server` on http://HOST:PORT/mcp until the process is stopped; the bound URL is logged on stderr."""
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    guard = ConnectionGuard(settings.http_max_connections, settings.http_header_timeout)
    sock = _bind(settings.host, settings.port, guard.backlog)
    port = sock.getsockname()[1]
    app: Any = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=transport_security(settings.host, port),
        host=settings.host,
        max_request_body_size=MAX_REQUEST_BYTES,
        max_sessions=settings.http_max_sessions,
        session_idle_timeout=settings.http_session_idle_timeout,
    )
    if settings.auth_token is not None:
        token = settings.auth_token.get_secret_value()
        if not token.strip():
            raise GranragError("GRANRAG_AUTH_TOKEN is set but empty: set it to a long random secret, or unset it")
        app = BearerTokenMiddleware(app, token)
    app = guard.track_requests(app)
    limit_repeated_lines()
    ensure_file_limit(guard)
    name = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{name}:{port}/mcp"

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            asyncio.get_running_loop().set_exception_handler(quiet_resource_errors)
            await super().startup(sockets)
            if not self.should_exit:  # tests read this line to learn the port
                sys.stderr.write(f"granrag-mcp: listening on {url}\n")
                sys.stderr.flush()

    # No WebSocket protocol: an upgrade would swap the connection's protocol and leave the guard.
    config = uvicorn.Config(
        app,
        http=guard.protocol(AutoHTTPProtocol),
        ws="none",
        backlog=guard.backlog,
        log_config=None,
        access_log=False,
        lifespan="on",
        log_level=settings.log_level.lower(),
    )
    Server(config).run(sockets=[sock])
