"""HTTP guards with real requests on an ephemeral loopback port: foreign Host 421, foreign Origin 403, a body over
the limit 413 (declared or streamed), a missing or wrong token 401, and malformed bodies answered, not crashed on.

tests/test_server_http.py covers the basic 421/403/401 cases; this adds the body limit, the order of the checks,
every route and method, and malformed JSON-RPC bodies.
"""

from __future__ import annotations

import select
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from granrag_mcp.server.transport.http import MAX_REQUEST_BYTES
from granrag_mcp.server.transport.http_guard import IDLE_BEFORE_EVICTION
from tests.reliability.conftest import RealStore
from tests.server.transport.test_http import INITIALIZE, MCP_HEADERS, TOKEN, Running, start, stop

TOOL_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "list_documents", "arguments": {"limit": 1}},
}


@pytest.fixture(scope="module")
def servers(real_store: RealStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Running]]:
    root = tmp_path_factory.mktemp("guards")
    running: dict[str, Running] = {}
    try:
        running["open"] = start(real_store.settings, root / "open")
        running["token"] = start(real_store.settings, root / "token", GRANRAG_AUTH_TOKEN=TOKEN)
        yield running
    finally:
        for server in running.values():
            stop(server.process)
    for name, server in running.items():
        assert "Traceback" not in server.log(), f"{name}: {server.log()[-3000:]}"
        assert TOKEN not in server.log()


def big_body(size: int) -> bytes:
    """A JSON-RPC tool call of about `size` bytes (a query far past its own limit, so it would fail anyway)."""
    head = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_narrow","arguments":{"query":"'
    tail = b'"}}}'
    return head + b"q" * max(0, size - len(head) - len(tail)) + tail


def streamed(body: bytes, piece: int = 64 * 1024) -> Iterator[bytes]:
    for begin in range(0, len(body), piece):
        yield body[begin : begin + piece]


def session_headers(http: httpx2.Client, server: Running, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Initialize a session; the headers to send on the requests of that session."""
    extra = extra or {}
    answer = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS | extra)
    assert answer.status_code == 200, answer.text
    headers = (
        MCP_HEADERS | extra | {"mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    )
    http.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def test_a_body_over_the_limit_gets_413(servers: dict[str, Running]) -> None:
    server = servers["open"]
    with httpx2.Client(timeout=60) as http:
        headers = session_headers(http, server)
        declared = http.post(server.url, content=big_body(MAX_REQUEST_BYTES + 1), headers=headers)
        chunked = http.post(server.url, content=streamed(big_body(MAX_REQUEST_BYTES + 4096)), headers=headers)
        huge = http.post(server.url, content=streamed(big_body(4 * MAX_REQUEST_BYTES)), headers=headers)
        on_initialize = http.post(server.url, content=big_body(2 * MAX_REQUEST_BYTES), headers=MCP_HEADERS)
        under = http.post(server.url, content=big_body(MAX_REQUEST_BYTES - 1024), headers=headers)
        after = http.post(server.url, json=TOOL_CALL, headers=headers)
    for refused in (declared, chunked, huge, on_initialize):
        assert refused.status_code == 413, (refused.status_code, refused.text[:200])
    # Under the limit the body is parsed and the call refused by the input schema, as a tool error.
    assert under.status_code == 200 and "validation error" in under.text and "query" in under.text
    assert after.status_code == 200 and '"total":' in after.text.replace(" ", "").replace('\\"', '"')


def test_checks_apply_to_every_method_and_in_order(servers: dict[str, Running]) -> None:
    """The token first (401, before anything else is looked at), then the body size (413, before the body is
    parsed or a session made), then Host (421) and Origin (403)."""
    open_server, token_server = servers["open"], servers["token"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    evil_host = {"Host": f"evil.example:{open_server.port}"}
    with httpx2.Client(timeout=60) as http:
        for method in ("GET", "POST", "DELETE", "PUT", "OPTIONS"):
            assert http.request(method, open_server.url, headers=MCP_HEADERS | evil_host).status_code == 421, method
            assert (
                http.request(
                    method, open_server.url, headers=MCP_HEADERS | {"Origin": "http://evil.example"}
                ).status_code
                == 403
            ), method
            assert http.request(method, token_server.url, headers=MCP_HEADERS).status_code == 401, method
            for path in ("/", "/mcp/", "/other", "/.well-known/oauth-protected-resource"):
                url = token_server.url.replace("/mcp", path)
                assert http.request(method, url, headers=MCP_HEADERS).status_code == 401, (method, path)
        big = big_body(2 * MAX_REQUEST_BYTES)
        token_port = token_server.port
        assert http.post(token_server.url, content=big, headers=MCP_HEADERS).status_code == 401
        assert http.post(token_server.url, content=big, headers=MCP_HEADERS | auth).status_code == 413
        assert (
            http.post(
                token_server.url, content=big, headers=MCP_HEADERS | auth | {"Host": f"evil.example:{token_port}"}
            ).status_code
            == 413
        )
        assert (
            http.post(
                token_server.url, json=INITIALIZE, headers=MCP_HEADERS | auth | {"Host": f"evil.example:{token_port}"}
            ).status_code
            == 421
        )
        assert (
            http.post(
                token_server.url, json=INITIALIZE, headers=MCP_HEADERS | auth | {"Origin": "http://evil.example"}
            ).status_code
            == 403
        )
        for bad in (
            "Bearer",
            f"Bearer {TOKEN[:-1]}",
            f"Bearer {TOKEN} extra",
            f"bearer{TOKEN}",
            "Bearer " + "x" * 8000,
            f"Bearer\t{TOKEN}x",
        ):
            assert (
                http.post(token_server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": bad}).status_code
                == 401
            ), bad
        assert http.post(token_server.url, json=INITIALIZE, headers=MCP_HEADERS | auth).status_code == 200


@pytest.mark.parametrize(
    "body, expected",
    [
        (b"not json", {400}),
        (b"", {400}),
        (b"[]", {400}),
        (b'{"jsonrpc":"2.0","id":5,"method":5}', {400}),
        (b"\xff\xfe\x00garbage", {400}),
        (
            b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_narrow",'
            b'"arguments":{"query":"bridge \\ud83d"}}}',
            {200, 400},
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_narrow",'
            b'"arguments":{"query":"x","k":1e400}}}',
            {200, 400},
        ),
        (b"{" * 100_000, {400}),
    ],
)
def test_malformed_bodies_are_answered(servers: dict[str, Running], body: bytes, expected: set[int]) -> None:
    server = servers["open"]
    with httpx2.Client(timeout=60) as http:
        headers = session_headers(http, server)
        answer = http.post(server.url, content=body, headers=headers)
        print(f"{body[:60]!r}: {answer.status_code} {answer.text[:160]!r}")
        assert answer.status_code in expected, (answer.status_code, answer.text[:300])
        if answer.status_code == 200:  # parsed after all: a tool result or a tool error, never the bare error
            assert "result" in answer.text and 'Error executing tool search_narrow"' not in answer.text
        again = http.post(server.url, json=TOOL_CALL, headers=headers)
        assert again.status_code == 200 and "total" in again.text


def test_wrong_content_type_and_accept(servers: dict[str, Running]) -> None:
    server = servers["open"]
    with httpx2.Client(timeout=60) as http:
        text_plain = http.post(
            server.url, content=b"{}", headers={"Accept": MCP_HEADERS["Accept"], "Content-Type": "text/plain"}
        )
        no_accept = http.post(
            server.url, json=INITIALIZE, headers={"Content-Type": "application/json", "Accept": "text/html"}
        )
    assert text_plain.status_code in (400, 415)
    assert no_accept.status_code in (400, 406)


def test_the_limit_fits_the_largest_valid_call() -> None:
    import json

    query = "\U0001f600" * 4000
    ids = ["narrow:" + "9" * 18] * 100
    largest = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2**53,
            "method": "tools/call",
            "params": {
                "name": "rerank",
                "arguments": {
                    "query": query,
                    "chunk_ids": [i.ljust(64, "\u00e9") for i in ids],
                    "top_n": 100,
                    "max_tokens": 100_000,
                },
            },
        }
    )
    assert len(largest.encode()) < 150_000 < MAX_REQUEST_BYTES


# --- connection and session limits ---------------------------------------------------------------------------------

STEP = 0.25  # seconds between the bytes of a slow client
LOG_BOUND = 25  # lines about running out of descriptors one episode may log


def tracebacks(log: str) -> int:
    """Tracebacks in a server log, less the SDK's own for a client that left in the middle of a request body (it
    logs those with a traceback; the guard cutting off a slow body is such a case)."""
    return log.count("Traceback") - log.count("starlette.requests.ClientDisconnect")


def raw_request(port: int, path: str = "/mcp") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode()


def drip(sock: socket.socket, data: bytes) -> int:
    """Send `data` a byte at a time; how many bytes went before the server closed the connection (all if never)."""
    sent = 0
    try:
        for byte in data:
            sock.sendall(bytes([byte]))
            sent += 1
            readable, _, _ = select.select([sock], [], [], STEP)
            if readable and not sock.recv(4096):
                return sent
    except OSError:  # reset by the server
        return sent
    return sent


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except (ConnectionError, OSError) as exc:
        return not isinstance(exc, TimeoutError)


def initialize(http: httpx2.Client, server: Running) -> httpx2.Response:
    return http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS)


@pytest.fixture(scope="module")
def quick(real_store: RealStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A server with short deadlines: 2 s for a request head, one session that expires after 2 idle seconds."""
    server = start(
        real_store.settings,
        tmp_path_factory.mktemp("quick"),
        GRANRAG_HTTP_HEADER_TIMEOUT="2",
        GRANRAG_HTTP_MAX_SESSIONS="1",
        GRANRAG_HTTP_SESSION_IDLE_TIMEOUT="2",
    )
    try:
        yield server
    finally:
        stop(server.process)
    assert not tracebacks(server.log()), server.log()[-3000:]


def test_a_slow_request_head_is_cut_off(quick: Running) -> None:
    """One byte every STEP seconds: the head would take 30 s, the deadline is 2 s; meanwhile others are served."""
    head = raw_request(quick.port)[:-2] + b"X-Slow: " + b"a" * int(30 / STEP) + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", quick.port), timeout=30) as slow:
        with httpx2.Client(timeout=30) as http:
            assert http.get(quick.url.replace("/mcp", "/other")).status_code == 404  # served while the other drips
        sent = drip(slow, head)
    assert sent < len(head) // 2, f"the server read {sent} of {len(head)} bytes of a dripping head"
    assert "sent no complete request within 2 s (GRANRAG_HTTP_HEADER_TIMEOUT)" in quick.log()


def test_a_silent_connection_is_closed(quick: Running) -> None:
    with socket.create_connection(("127.0.0.1", quick.port), timeout=30) as silent:
        assert closed_by_server(silent, within=30)


def test_a_slow_second_request_on_a_kept_alive_connection_is_cut_off(quick: Running) -> None:
    """Only the first head used to be at risk of nothing: after a response, any byte stopped uvicorn's keep-alive
    timer, so the next head could drip forever."""
    with socket.create_connection(("127.0.0.1", quick.port), timeout=30) as sock:
        sock.sendall(raw_request(quick.port, "/other"))
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 404")
        head = raw_request(quick.port)[:-2] + b"X-Slow: " + b"a" * int(30 / STEP) + b"\r\n\r\n"
        sent = drip(sock, head)
    assert sent < len(head) // 2, f"the server read {sent} of {len(head)} bytes of a dripping head"


def test_the_session_cap_and_idle_timeout_apply(quick: Running) -> None:
    """GRANRAG_HTTP_MAX_SESSIONS=1: a second session is refused with 503 while the first is open; the first
    expires after GRANRAG_HTTP_SESSION_IDLE_TIMEOUT seconds without requests, and a new one is then admitted."""
    with httpx2.Client(timeout=30) as http:
        first = initialize(http, quick)
        assert first.status_code == 200, first.text
        second = initialize(http, quick)
        assert second.status_code == 503 and "Too many open sessions" in second.text, second.text
        for _ in range(120):  # bounded: the first session ends 2 s after its last request
            time.sleep(0.5)
            later = initialize(http, quick)
            if later.status_code == 200:
                break
            assert later.status_code == 503, later.text
        assert later.status_code == 200, "the first session never expired"
        expired = http.post(
            quick.url,
            json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
            headers=MCP_HEADERS
            | {"mcp-session-id": first.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"},
        )
        assert expired.status_code == 404
        http.delete(
            quick.url, headers={"mcp-session-id": later.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        )


def lower_open_files(limit: int) -> Callable[[], None]:
    def lower() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return lower


def wait_until_ready(http: httpx2.Client, server: Running) -> None:
    """Until a tool call succeeds: the engine (model, index files) is loaded and its descriptors are open."""
    headers = session_headers(http, server)
    for _ in range(240):
        answer = http.post(server.url, json=TOOL_CALL, headers=headers)
        if '"total"' in answer.text.replace(" ", "").replace('\\"', '"'):
            return
        time.sleep(0.5)
    raise AssertionError(f"the index never loaded: {server.log()[-2000:]}")


def open_many(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=30))
    return sockets


def partial_post(port: int) -> bytes:
    """A tool call's head and the first bytes of its 1000-byte body: a request being served, waiting for the rest."""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    return head.encode() + b'{"jsonrpc":"2.0",'


def test_a_slow_request_body_is_cut_off(quick: Running) -> None:
    with socket.create_connection(("127.0.0.1", quick.port), timeout=30) as slow:
        start = partial_post(quick.port)
        slow.sendall(start)
        rest = b" " * (1000 - (len(start) - start.index(b"{")))
        sent = drip(slow, rest)
    assert sent < len(rest) // 2, f"the server read {sent} of {len(rest)} bytes of a dripping body"


def get_other(http: httpx2.Client, server: Running) -> httpx2.Response:
    return http.get(server.url.replace("/mcp", "/other"))


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_NOFILE")
def test_the_connection_limit_keeps_descriptors_for_legitimate_requests(real_store: RealStore, tmp_path: Path) -> None:
    """64 descriptors and GRANRAG_HTTP_MAX_CONNECTIONS=8. 150 idle connections: the server never runs out of
    descriptors and a new request is served, an idle connection closed to make room. 8 requests being served (their
    bodies half sent): one more connection is answered 503 at once, and served again once they are gone."""
    server = start(
        real_store.settings,
        tmp_path,
        popen={"preexec_fn": lower_open_files(64)},
        GRANRAG_HTTP_MAX_CONNECTIONS="8",
        GRANRAG_HTTP_HEADER_TIMEOUT="60",
    )
    try:
        with httpx2.Client(timeout=30) as http:
            wait_until_ready(http, server)
        idle = open_many(server.port, 150)
        time.sleep(IDLE_BEFORE_EVICTION + 0.5)  # idle for longer than a connection must be to make room
        try:
            with httpx2.Client(timeout=30) as http:
                assert get_other(http, server).status_code == 404
        finally:
            for sock in idle:
                sock.close()
        busy = open_many(server.port, 8)
        try:
            for sock in busy:
                sock.sendall(partial_post(server.port))
            time.sleep(1)  # let the server start serving them
            with httpx2.Client(timeout=30) as http:
                refused = get_other(http, server)
            assert refused.status_code == 503, refused.text
            assert "GRANRAG_HTTP_MAX_CONNECTIONS" in refused.json()["error_description"]
        finally:
            for sock in busy:
                sock.close()
        with httpx2.Client(timeout=30) as http:
            for _ in range(100):  # bounded: the server notices the closed connections within a loop turn or two
                answer = get_other(http, server)
                if answer.status_code == 404:
                    break
                time.sleep(0.1)
            assert answer.status_code == 404, answer.text
            wait_until_ready(http, server)
    finally:
        stop(server.process)
    log = server.log()
    assert "Too many open files" not in log and not tracebacks(log), log[-3000:]
    assert "to make room for a new one" in log
    assert 1 <= log.count("refused a connection") <= LOG_BOUND


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_NOFILE")
def test_running_out_of_descriptors_logs_a_few_lines_and_recovers(real_store: RealStore, tmp_path: Path) -> None:
    """64 descriptors with the default connection limit of 100: connections exhaust them. The log says so in a
    bounded number of lines (it used to print thousands of tracebacks a second) and, once the connections are
    gone, the server accepts and serves again."""
    server = start(
        real_store.settings, tmp_path, popen={"preexec_fn": lower_open_files(64)}, GRANRAG_HTTP_HEADER_TIMEOUT="60"
    )
    try:
        with httpx2.Client(timeout=30) as http:
            wait_until_ready(http, server)
        idle = open_many(server.port, 100)
        try:
            for _ in range(300):  # bounded wait for the first complaint
                if "Too many open files" in server.log():
                    break
                time.sleep(0.1)
            time.sleep(4)  # a few of asyncio's one-second retries while still out of descriptors
            during = server.log()
        finally:
            for sock in idle:
                sock.close()
        with httpx2.Client(timeout=30) as http:
            answer = None
            for _ in range(100):  # bounded: asyncio tries accepting again every second
                try:
                    answer = http.get(server.url.replace("/mcp", "/other"))
                    break
                except httpx2.TransportError:
                    time.sleep(0.2)
            assert answer is not None and answer.status_code == 404
            wait_until_ready(http, server)
    finally:
        stop(server.process)
    complaints = [line for line in during.splitlines() if "Too many open files" in line]
    assert complaints, during[-2000:]
    assert len(complaints) <= LOG_BOUND, f"{len(complaints)} lines about running out of descriptors"
    assert "Traceback" not in during, during[-3000:]
    assert "ulimit -n" in complaints[0]
