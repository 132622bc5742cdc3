"""Streamable HTTP: `granrag-mcp serve --transport http --port 0` on loopback, the SDK's HTTP client, and raw requests
for the Host/Origin checks and the bearer token."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from granrag_mcp.server.transport.http import BearerTokenMiddleware, transport_security
from granrag_mcp.server.transport.http_guard import limit_repeated_lines
from granrag_mcp.settings import Settings
from tests.server.test_app import TOOLS
from tests.server.transport.test_stdio import build_real_store, granrag_command, server_env

TOKEN = "test-token-0123456789abcdef"
LISTENING = re.compile(r"granrag-mcp: listening on (http://127\.0\.0\.1:(\d+)/mcp)")
START_TIMEOUT = 120.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    url: str
    port: int
    stderr: Path

    def log(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")


def start(settings: Settings, folder: Path, popen: dict[str, Any] | None = None, **env: str) -> Running:
    folder.mkdir(parents=True, exist_ok=True)
    stderr = folder / "server.stderr"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            [granrag_command(), "serve", "--transport", "http", "--port", "0", "--store", str(settings.store)],
            env=os.environ | server_env(settings, **env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            **(popen or {}),
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        match = LISTENING.search(stderr.read_text(encoding="utf-8", errors="replace"))
        if match:
            return Running(process, match.group(1), int(match.group(2)), stderr)
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {stderr.read_text()}")
        time.sleep(0.1)
    stop(process)
    raise AssertionError(f"no 'listening on' line within {START_TIMEOUT}s: {stderr.read_text()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@contextmanager
def real_store_server(root: Path) -> Iterator[Running]:
    """An HTTP server over a store of the real corpus built under `root`, stopped on leaving."""
    settings, _ = build_real_store(root)
    running = start(settings, root / "server")
    try:
        yield running
    finally:
        stop(running.process)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Running]]:
    root = tmp_path_factory.mktemp("http")
    settings, _ = build_real_store(root)
    running: dict[str, Running] = {}
    try:
        running["open"] = start(settings, root / "open")
        running["token"] = start(settings, root / "token", GRANRAG_AUTH_TOKEN=TOKEN)
        yield running
    finally:
        for server in running.values():
            stop(server.process)


def run(coroutine_function: Any) -> Any:
    async def main() -> Any:
        with anyio.fail_after(180):
            return await coroutine_function()

    return anyio.run(main)


async def exercise(client: Client) -> dict[str, Any]:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    results = {}
    for name, arguments in [
        ("search_narrow", {"query": "Who built the Zephyr Bridge?", "k": 3}),
        ("list_documents", {}),
        ("search_fused", {"query": "Harrow Point lighthouse lens", "k": 3}),
    ]:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result.content
        jsonschema.validate(result.structured_content, tools[name].output_schema)
        results[name] = result.structured_content
    hit = results["search_narrow"]["hits"][0]
    window = await client.call_tool("expand_window", {"chunk_id": hit["chunk_id"]})
    assert not window.is_error and "Zephyr Bridge" in window.structured_content["text"]
    bad = await client.call_tool("get_chunks", {"chunk_ids": ["nonsense"]})
    assert bad.is_error and "malformed chunk id" in bad.content[0].text
    return results


def test_tools_over_streamable_http(servers: dict[str, Running]) -> None:
    server = servers["open"]

    async def scenario() -> dict[str, Any]:
        async with Client(server.url) as client:
            return await exercise(client)

    results = run(scenario)
    assert "Zephyr Bridge" in results["search_narrow"]["hits"][0]["text"]
    assert results["list_documents"]["total"] == 3
    log = server.log()
    assert "Traceback" not in log, log[-3000:]


def test_loopback_server_checks_host_and_origin(servers: dict[str, Running]) -> None:
    server = servers["open"]
    with httpx2.Client(timeout=30) as http:
        fine = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS)
        also_fine = http.post(
            server.url,
            json=INITIALIZE,
            headers=MCP_HEADERS | {"Host": f"localhost:{server.port}", "Origin": f"http://localhost:{server.port}"},
        )
        foreign_host = http.post(
            server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Host": f"evil.example:{server.port}"}
        )
        other_port = http.post(
            server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Host": f"127.0.0.1:{server.port + 1}"}
        )
        foreign_origin = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Origin": "http://evil.example"})
    assert fine.status_code == 200, fine.text
    assert also_fine.status_code == 200, also_fine.text
    assert foreign_host.status_code == 421
    assert other_port.status_code == 421
    assert foreign_origin.status_code == 403


def test_token_is_required_when_set(servers: dict[str, Running]) -> None:
    server = servers["token"]
    with httpx2.Client(timeout=30) as http:
        missing = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS)
        wrong = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": "Bearer nope"})
        basic = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": f"Basic {TOKEN}"})
        right = http.post(server.url, json=INITIALIZE, headers=MCP_HEADERS | {"Authorization": f"Bearer {TOKEN}"})
        right_foreign_host = http.post(
            server.url,
            json=INITIALIZE,
            headers=MCP_HEADERS | {"Authorization": f"Bearer {TOKEN}", "Host": f"evil.example:{server.port}"},
        )
    for refused in (missing, wrong, basic):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert TOKEN not in refused.text
    assert right.status_code == 200, right.text
    assert right_foreign_host.status_code == 421  # the token does not switch the Host check off on loopback

    async def scenario() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http:
            async with Client(streamable_http_client(server.url, http_client=http)) as client:
                return await exercise(client)

    results = run(scenario)
    assert results["list_documents"]["total"] == 3
    assert TOKEN not in server.log()


def test_a_public_bind_without_a_token_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRANRAG_AUTH_TOKEN"}
    completed = subprocess.run(
        [granrag_command(), "serve", "--transport", "http", "--host", "0.0.0.0", "--store", str(tmp_path)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert "GRANRAG_AUTH_TOKEN" in completed.stderr and completed.stdout == ""


# --- the guards in process -----------------------------------------------------------------------------------------


def test_bearer_comparison() -> None:
    middleware = BearerTokenMiddleware(app=None, token=TOKEN)  # type: ignore[arg-type]
    assert middleware.authorized(f"Bearer {TOKEN}")
    assert middleware.authorized(f"bearer   {TOKEN}  ")
    assert not middleware.authorized(None)
    assert not middleware.authorized("")
    assert not middleware.authorized(f"Bearer {TOKEN}x")
    assert not middleware.authorized(f"Token {TOKEN}")
    assert not middleware.authorized(TOKEN)
    with pytest.raises(ValueError):
        BearerTokenMiddleware(app=None, token="")  # type: ignore[arg-type]


def test_transport_security_per_bind() -> None:
    loopback = transport_security("127.0.0.1", 8765)
    assert loopback.enable_dns_rebinding_protection
    assert "127.0.0.1:8765" in loopback.allowed_hosts and "localhost:8765" in loopback.allowed_hosts
    assert "http://localhost:8765" in loopback.allowed_origins
    assert not any(h.endswith(":*") for h in loopback.allowed_hosts)
    assert "[::1]:9000" in transport_security("::1", 9000).allowed_hosts
    assert "127.0.0.2:80" in transport_security("127.0.0.2", 80).allowed_hosts
    assert not transport_security("0.0.0.0", 8765).enable_dns_rebinding_protection


@pytest.mark.parametrize(
    "token", [f"{TOKEN}\n", f" {TOKEN}", f"{TOKEN}\t", f"{TOKEN}\u00e9", f"{TOKEN[:4]}\x01{TOKEN[4:]}"]
)
def test_a_token_no_header_can_carry_is_refused_at_start(tmp_path: Path, token: str) -> None:
    """Such a token used to start a server that then answered 401 to every request, the right token included."""
    env = os.environ | {"GRANRAG_AUTH_TOKEN": token}
    completed = subprocess.run(
        [granrag_command(), "serve", "--transport", "http", "--port", "0", "--store", str(tmp_path)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2, completed.stderr
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "GRANRAG_AUTH_TOKEN" in lines[0], completed.stderr
    assert TOKEN[4:] not in completed.stderr


def test_repeated_log_lines_are_bounded() -> None:
    """Ten thousand records from one call site, each with its own text: a few lines, and a count of the dropped."""
    logger = logging.getLogger("granrag-test-flood")
    logger.propagate = False
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        repeat = limit_repeated_lines(logger)

        def flood(number: int) -> None:
            logger.error(f"flood line {number}")

        for number in range(10_000):
            flood(number)
        logger.error("another call site")
        assert stream.getvalue().count("flood line") == repeat.burst
        assert "another call site" in stream.getvalue()
        repeat.window = 0.0  # the next record opens a new window and reports what was dropped
        flood(10_000)
        assert f"[{10_000 - repeat.burst} similar lines dropped]" in stream.getvalue().splitlines()[-1]
    finally:
        logger.removeHandler(handler)
