"""A line nested millions of levels deep on stdio is told it is too deeply nested (not that it is incomplete JSON),
and the server answers the next line (`granrag-mcp serve` on raw pipes: no MCP client can write such a line)."""

from __future__ import annotations

from pathlib import Path

from tests.reliability.conftest import RealStore
from tests.reliability.test_bad_input_stdio import RawServer, call_line, initialize
from tests.server.transport.test_stdio import build_real_store

DEPTH = 5_000_000


def test_a_deeply_nested_line_is_called_too_deeply_nested(tmp_path: Path) -> None:
    settings, corpus = build_real_store(tmp_path / "real")
    server = RawServer(RealStore(settings, corpus), tmp_path / "server.stderr")
    try:
        initialize(server)
        nested = b"[" * DEPTH + b"]" * DEPTH
        head = b'{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"search_narrow","arguments":'
        server.send(head + b'{"query":' + nested + b"}}}")
        answer = server.receive(timeout=120)
        assert answer is not None and answer["id"] == 31, answer
        assert answer["error"]["code"] == -32700 and "too deeply nested" in answer["error"]["message"]
        server.send(call_line(32, '{"query":"Zephyr Bridge engineer","k":1}'))  # the stream is still in step
        answer = server.receive()
        assert answer is not None and answer["id"] == 32
    finally:
        server.close()
    log = (tmp_path / "server.stderr").read_text(encoding="utf-8", errors="replace")
    assert server.process.returncode == 0 and "Traceback" not in log
