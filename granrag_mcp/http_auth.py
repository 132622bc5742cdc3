"""HTTP transport guards: a static bearer token (ASGI middleware) and the Host/Origin allow-lists."""

from __future__ import annotations

import hashlib
import hmac
import logging

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from granrag_mcp.settings import is_loopback

log = logging.getLogger(__name__)


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
        if scope["type"] in ("http", "websocket") and not self.authorized(Headers(scope=scope).get("authorization")):
            client = scope.get("client")
            log.warning("refused an HTTP request without a valid bearer token from %s", client[0] if client else "?")
            response = JSONResponse(
                {"error": "unauthorized", "error_description": "send the header 'Authorization: Bearer <GRANRAG_AUTH_TOKEN>'"},
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
