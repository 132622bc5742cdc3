"""HTTP guards with real requests on an ephemeral loopback port: foreign Host 421, foreign Origin 403, a body over
the limit 413 (declared or streamed), a missing or wrong token 401, and malformed bodies answered, not crashed on.

tests/test_server_http.py covers the basic 421/403/401 cases; this adds the body limit, the order of the checks,
every route and method, and malformed JSON-RPC bodies.
"""

from __future__ import annotations

from collections.abc import Iterator
import httpx2
import pytest

from granrag_mcp.http_auth import MAX_REQUEST_BYTES
from tests.reliability.conftest import RealStore
from tests.test_server_http import INITIALIZE, MCP_HEADERS, TOKEN, Running, start, stop

TOOL_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "list_documents", "arguments": {"limit": 1}}}


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
    for start in range(0, len(body), piece):
        yield body[start : start + piece]


def session_headers(http: httpx2.Client, server: Running, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Initialize a session; the headers to send on the requests of that session."""
    extra = extra or {}
    answer = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS | extra)
    assert answer.status_code == 200, answer.text
    headers = MCP_HEADERS | extra | {"mcp-session-id": answer.headers["mcp-session-id"],
                                     "mcp-protocol-version": "2025-06-18"}
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
            assert http.request(method, open_server.url, headers=MCP_HEADERS | {"Origin": "http://evil.example"}
                                ).status_code == 403, method
            assert http.request(method, token_server.url, headers=MCP_HEADERS).status_code == 401, method
            for path in ("/", "/mcp/", "/other", "/.well-known/oauth-protected-resource"):
                url = token_server.url.replace("/mcp", path)
                assert http.request(method, url, headers=MCP_HEADERS).status_code == 401, (method, path)
        big = big_body(2 * MAX_REQUEST_BYTES)
        token_port = token_server.port
        assert http.post(token_server.url, content=big, headers=MCP_HEADERS).status_code == 401
        assert http.post(token_server.url, content=big, headers=MCP_HEADERS | auth).status_code == 413
        assert http.post(token_server.url, content=big, headers=MCP_HEADERS | auth | {
            "Host": f"evil.example:{token_port}"}).status_code == 413
        assert http.post(token_server.url, json=INITIALIZE, headers=MCP_HEADERS | auth | {
            "Host": f"evil.example:{token_port}"}).status_code == 421
        assert http.post(token_server.url, json=INITIALIZE, headers=MCP_HEADERS | auth | {
            "Origin": "http://evil.example"}).status_code == 403
        for bad in ("Bearer", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN} extra", f"bearer{TOKEN}",
                    "Bearer " + "x" * 8000, f"Bearer\t{TOKEN}x"):
            assert http.post(token_server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": bad}
                             ).status_code == 401, bad
        assert http.post(token_server.url, json=INITIALIZE, headers=MCP_HEADERS | auth).status_code == 200


@pytest.mark.parametrize("body, expected", [
    (b"not json", {400}),
    (b"", {400}),
    (b"[]", {400}),
    (b'{"jsonrpc":"2.0","id":5,"method":5}', {400}),
    (b"\xff\xfe\x00garbage", {400}),
    (b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_narrow",'
     b'"arguments":{"query":"bridge \\ud83d"}}}', {200, 400}),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_narrow",'
     b'"arguments":{"query":"x","k":1e400}}}', {200, 400}),
    (b"{" * 100_000, {400}),
])
def test_malformed_bodies_are_answered(servers: dict[str, Running], body: bytes, expected: set[int]) -> None:
    server = servers["open"]
    with httpx2.Client(timeout=60) as http:
        headers = session_headers(http, server)
        answer = http.post(server.url, content=body, headers=headers)
        print(f"{body[:60]!r}: {answer.status_code} {answer.text[:160]!r}")
        assert answer.status_code in expected, (answer.status_code, answer.text[:300])
        if answer.status_code == 200:  # parsed after all: a tool result or a tool error, never the bare error
            assert "result" in answer.text and "Error executing tool search_narrow\"" not in answer.text
        again = http.post(server.url, json=TOOL_CALL, headers=headers)
        assert again.status_code == 200 and "total" in again.text


def test_wrong_content_type_and_accept(servers: dict[str, Running]) -> None:
    server = servers["open"]
    with httpx2.Client(timeout=60) as http:
        text_plain = http.post(server.url, content=b"{}", headers={"Accept": MCP_HEADERS["Accept"],
                                                                   "Content-Type": "text/plain"})
        no_accept = http.post(server.url, json=INITIALIZE, headers={"Content-Type": "application/json",
                                                                    "Accept": "text/html"})
    assert text_plain.status_code in (400, 415)
    assert no_accept.status_code in (400, 406)


def test_the_limit_fits_the_largest_valid_call() -> None:
    import json

    query = "\U0001F600" * 4000
    ids = ["narrow:" + "9" * 18] * 100
    largest = json.dumps({"jsonrpc": "2.0", "id": 2**53, "method": "tools/call", "params": {
        "name": "rerank", "arguments": {"query": query, "chunk_ids": [i.ljust(64, "\u00e9") for i in ids],
                                        "top_n": 100, "max_tokens": 100_000}}})
    assert len(largest.encode()) < 150_000 < MAX_REQUEST_BYTES
