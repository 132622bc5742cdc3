"""Bad input over the real stdio server (`granrag-mcp serve`, the bundled model): a smaller property-based run
through the SDK's stdio client, and raw protocol lines the SDK client cannot produce (unpaired surrogates, invalid
requests, invalid UTF-8, a huge line), written straight to the server's stdin.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from mcp.client.stdio import StdioServerParameters, stdio_client

from granrag_mcp.server.transport.stdio_relay import MAX_LINE_BYTES
from tests.reliability.conftest import RealStore
from tests.reliability.strategies import Context, invalid_arguments, valid_arguments
from tests.reliability.support import (
    Session,
    all_chunk_ids,
    check_outcome,
    current_manifest,
    record,
    session,
    text_of,
)
from tests.reliability.test_bad_input import VALIDATION, expected_error
from tests.server.test_app import TOOLS
from tests.server.transport.test_stdio import granrag_command, server_env

SCALE = float(os.environ.get("GRANRAG_FUZZ_EXAMPLES", "1"))
EXAMPLES = int(8 * SCALE)  # per tool, inside and beyond the schema each
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def stdio(real_store: RealStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Session, Context]]:
    settings_ = real_store.settings
    live = all_chunk_ids(settings_.store)
    next_id = current_manifest(settings_.store)["next_chunk_id"]
    stale = [f"{level}:{next_id + i}" for i, level in enumerate(["broad", "mid", "narrow"] * 3)]
    context = Context(list(live), stale, sorted(set(live.values())), surrogates=False)
    params = StdioServerParameters(
        command=granrag_command(), args=["serve", "--store", str(settings_.store)], env=server_env(settings_)
    )
    errlog_path = tmp_path_factory.mktemp("stdio-fuzz") / "server.stderr"
    with errlog_path.open("w") as errlog:
        with session(stdio_client(params, errlog=errlog)) as s:
            yield s, context
    log = errlog_path.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log[-4000:]
    record("bad-input-stdio", dict(TALLY))


def inside_and_beyond(s: Session, context: Context, name: str, examples: int) -> None:
    schema = s.tools[name].input_schema
    health = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=health)
    @given(arguments=valid_arguments(schema, context))
    def inside(arguments: dict[str, Any]) -> None:
        outcome = check_outcome(s.tools, name, s.call(name, arguments, timeout=60))
        TALLY["valid calls"] += 1
        assert outcome == "ok" or expected_error(outcome), f"{name}({arguments!r}): {outcome}"

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=health)
    @given(case=invalid_arguments(schema, context))
    def beyond(case: tuple[str, dict[str, Any]]) -> None:
        move, arguments = case
        outcome = check_outcome(s.tools, name, s.call(name, arguments, timeout=60))
        TALLY["invalid calls"] += 1
        assert outcome == "ok" or VALIDATION.search(outcome) or expected_error(outcome), f"{name} {move}: {outcome}"

    inside()
    beyond()
    good = s.call("search_narrow", {"query": "Zephyr Bridge engineer", "k": 1}, timeout=60)
    assert not good.is_error and "Zephyr" in text_of(good)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_stdio_arguments_inside_and_beyond_the_schema(stdio: tuple[Session, Context], name: str) -> None:
    inside_and_beyond(*stdio, name, EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TOOLS))
def test_stdio_many_arguments(stdio: tuple[Session, Context], name: str) -> None:
    inside_and_beyond(*stdio, name, 10 * EXAMPLES)


# --- raw lines --------------------------------------------------------------------------------------------------------


class RawServer:
    """`granrag-mcp serve` on pipes; lines in, lines out, each read with a deadline."""

    def __init__(self, store: RealStore, stderr: Path) -> None:
        self._stderr = stderr.open("wb")
        self.process = subprocess.Popen(
            [granrag_command(), "serve", "--store", str(store.settings.store)],
            env=os.environ | server_env(store.settings),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._buffer = b""

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.process.stdout], [], [], remaining)[0]:
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)  # every line on stdout is one JSON-RPC message

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        self._stderr.close()


def call_line(request_id: int, arguments_json: str, tool: str = "search_narrow") -> bytes:
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"{tool}","arguments":{arguments_json}}}}}'
    ).encode()


def initialize(server: RawServer) -> None:
    server.send(
        server.request(
            1,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
    )
    assert server.receive()["id"] == 1
    server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')


def server_log(tmp_path: Path) -> str:
    return (tmp_path / "server.stderr").read_text(encoding="utf-8", errors="replace")


def test_raw_lines_always_get_an_answer(real_store: RealStore, tmp_path: Path) -> None:
    server = RawServer(real_store, tmp_path / "server.stderr")
    try:
        initialize(server)
        cases = {
            # valid JSON, but an unpaired surrogate: the SDK's parser refuses it; the server repairs it
            2: (call_line(2, r'{"query":"bridge \ud83d"}'), "result"),
            3: (call_line(3, r'{"prefix":"\udc00"}', "list_documents"), "result"),
            4: (call_line(4, r'{"chunk_ids":["mid:1\ud800"]}', "get_chunks"), "tool-error"),
            5: (call_line(5, r'{"query":"\ud800\ud800\udc00 \u0000 nul"}'), "result"),
            # invalid UTF-8 bytes (decoded with replacement characters)
            6: (call_line(6, '{"query":"bad XX bytes"}').replace(b"XX", b"\xff\xfe"), "result"),
            # requests the SDK cannot parse at all: answered with an error for their id, not dropped
            7: (b'{"jsonrpc":"2.0","id":7,"method":5}', "invalid-request"),
            8: (b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"\\ud800"}', "invalid-request"),
            # a 5 MB query: refused by the input schema
            9: (call_line(9, json.dumps({"query": "z" * 5_000_000})), "tool-error"),
            10: (call_line(10, '{"query":"x","k":1e400}'), "tool-error"),
            # a line cut short (the client died mid-write, or a buffer split it): a parse error with its id
            12: (call_line(12, '{"query":"bridge"}')[:60], "parse-error"),
            13: (b'{"jsonrpc":"2.0","id":"thirteen","method":"tools/list","params":{"cursor":', "parse-error"),
            14: (call_line(14, '{"query":"x","k":NaN}'), "parse-error"),
        }
        for request_id, (line, expected) in cases.items():
            server.send(line)
            answer = server.receive()
            assert answer is not None, f"no answer to request {request_id}: the client would hang"
            wanted_id = "thirteen" if request_id == 13 else request_id
            assert answer["id"] == wanted_id, answer
            if expected in ("invalid-request", "parse-error"):
                assert answer["error"]["code"] == (-32600 if expected == "invalid-request" else -32700), answer
                assert answer["error"]["message"].strip()
            else:
                result = answer["result"]
                assert result["isError"] is (expected == "tool-error"), (request_id, result)
                assert result["content"][0]["text"].strip() and not result["content"][0]["text"].strip().endswith(
                    "Error executing tool search_narrow"
                )
        # what has no id that can be read is answered with id null, as JSON-RPC asks
        for line, code in [
            (b"not json at all", -32700),
            (b"[1, 2]", -32600),
            (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600),
            (b'{"jsonrpc":"2.0","id":[3],"method":"ping"}', -32600),
            (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
        ]:
            server.send(line)
            answer = server.receive()
            assert answer is not None and answer["id"] is None and answer["error"]["code"] == code, (line, answer)
        for line in [
            b'{"jsonrpc":"2.0","method":"notifications/unknown"}',
            b"",
            b"   ",
            b'{"jsonrpc":"2.0","id":99,"result":{}}',
        ]:
            server.send(line)  # valid notifications, responses and blank lines need no answer
        server.send(call_line(11, '{"query":"Zephyr Bridge engineer","k":1}'))
        answer = server.receive()
        assert answer["id"] == 11 and "Zephyr" in answer["result"]["structuredContent"]["hits"][0]["text"]
    finally:
        server.close()
    log = server_log(tmp_path)
    assert "Traceback" not in log, log[-3000:]
    assert "answered a line that is not JSON (id 12)" in log and "answered an invalid JSON-RPC message (id 7)" in log
    assert server.process.returncode == 0


def test_a_request_before_initialize_is_told_to_initialize(real_store: RealStore, tmp_path: Path) -> None:
    server = RawServer(real_store, tmp_path / "server.stderr")
    try:
        server.send(call_line(1, '{"query":"bridge"}'))
        answer = server.receive()
        assert answer is not None and answer["id"] == 1, answer
        assert answer["error"]["code"] == -32602 and "initialize" in answer["error"]["message"], answer
        assert answer["error"]["data"] == {"method": "tools/call"}
        initialize(server)
        server.send(call_line(2, '{"query":"Zephyr Bridge engineer","k":1}'))
        assert server.receive()["result"]["isError"] is False
    finally:
        server.close()
    assert server.process.returncode == 0 and "Traceback" not in server_log(tmp_path)


def test_a_line_over_the_limit_is_answered_not_dropped(real_store: RealStore, tmp_path: Path) -> None:
    server = RawServer(real_store, tmp_path / "server.stderr")
    try:
        initialize(server)
        head = b'{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"search_narrow","arguments":'
        server.send(head + b'{"query":"' + b"y" * (MAX_LINE_BYTES + 10) + b'"}}}')
        answer = server.receive(timeout=120)
        assert answer is not None and answer["id"] == 21, answer
        assert answer["error"]["code"] == -32600 and "MiB" in answer["error"]["message"]
        server.send(call_line(22, '{"query":"Zephyr Bridge engineer","k":1}'))  # the stream is still in step
        assert server.receive()["id"] == 22
    finally:
        server.close()
    assert server.process.returncode == 0 and "Traceback" not in server_log(tmp_path)


def test_a_client_that_closes_stdout_ends_the_server_cleanly(real_store: RealStore, tmp_path: Path) -> None:
    server = RawServer(real_store, tmp_path / "server.stderr")
    try:
        initialize(server)
        server.process.stdout.close()  # the client stops reading, then asks for a large answer
        server.send(call_line(2, '{"query":"bridge","k":50,"max_tokens":100000}'))
        server.send(call_line(3, '{"query":"engineer","k":50,"max_tokens":100000}'))
        assert server.process.wait(timeout=120) == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
        server._stderr.close()
    log = server_log(tmp_path)
    assert "Traceback" not in log and "closed the server's stdout" in log, log[-3000:]
