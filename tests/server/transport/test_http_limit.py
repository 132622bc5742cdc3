"""An HTTP server at its connection limit answers every request it received: a burst of connections past
GRANRAG_HTTP_MAX_CONNECTIONS, each sending a whole request, gets a response on every one (the request's own, or a
503 with Retry-After), never a connection closed unanswered."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.server.transport.test_http import start, stop
from tests.server.transport.test_stdio import build_real_store

LIMIT = 4
BURST = 16


def request(port: int) -> bytes:
    return f"GET /other HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode("ascii")


def answer(sock: socket.socket) -> bytes:
    """What the server sent before closing: empty when it closed without a word."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:  # a reset: whatever came before it is the answer
        pass
    return received


def test_every_request_of_a_burst_past_the_limit_is_answered(tmp_path: Path) -> None:
    settings, _ = build_real_store(tmp_path)
    server = start(settings, tmp_path / "server", GRANRAG_HTTP_MAX_CONNECTIONS=str(LIMIT))
    try:
        sockets: list[socket.socket] = []
        try:
            for _ in range(BURST):  # each client sends its request as soon as it is connected, as clients do
                sockets.append(socket.create_connection(("127.0.0.1", server.port), timeout=20))
                try:
                    sockets[-1].sendall(request(server.port))
                except OSError:  # refused and closed before the request went out: its 503 is still readable
                    pass
            answers = [answer(sock) for sock in sockets]
        finally:
            for sock in sockets:
                sock.close()
    finally:
        stop(server.process)
    statuses = [a.split(b"\r\n", 1)[0] for a in answers]
    unanswered = [n for n, status in enumerate(statuses) if not status.startswith(b"HTTP/1.1 ")]
    assert not unanswered, f"connections {unanswered} were closed without an answer: {statuses}"
    refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
    assert all(b"Retry-After:" in a for a in refused)
    assert sum(a.startswith(b"HTTP/1.1 404") for a in answers) >= LIMIT  # the requests themselves, where admitted
