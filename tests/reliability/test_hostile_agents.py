"""What a careless or malicious client can ask: roots that cover the disk or hide a parent folder, relative roots,
names that forge log lines, a cancel and an immediate retry, all-zero weights, odd resource ids, two tokens.

Each is a clear refusal or warning in one line, and nothing in the store or the log that the client did not mean.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ListRootsResult, Root
from pydantic import ValidationError

from granrag_mcp.log_format import OneLineFormatter
from granrag_mcp.retrieval.rrf import RRF_LISTS
from granrag_mcp.server.library.writes import OutsideRootsError, Runs, root_path
from granrag_mcp.server.transport.http import BearerTokenMiddleware
from granrag_mcp.settings import Settings
from tests.server.test_app import call, fail, run
from tests.server.tools.test_write import server_for


def with_roots(*uris: str):
    async def roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=uri, name="client") for uri in uris])

    return roots


def index_with_roots(library: dict[str, Any], uri: str, **changes: Any) -> str | dict[str, Any]:
    notes = library["root"] / "notes"

    async def scenario(client: Client) -> str | dict[str, Any]:
        result = await client.call_tool("index_paths", {"paths": [str(notes)]})
        return result.content[0].text if result.is_error else result.structured_content  # type: ignore[union-attr]

    # The client's roots are asked only when the server has no folders of its own: the deprecated fallback.
    with pytest.warns(MCPDeprecationWarning, match="roots capability is deprecated"):
        return run(
            server_for(library, allowed_roots="", **changes),
            scenario,
            list_roots_callback=with_roots(uri),
            mode="legacy",
        )


def test_a_client_root_of_the_whole_disk_is_refused_unless_allowed(library) -> None:
    refused = index_with_roots(library, "file:///")
    assert isinstance(refused, str) and "the whole disk" in refused and "GRANRAG_ALLOW_BROAD_ROOTS" in refused
    allowed = index_with_roots(library, "file:///", allow_broad_roots=True)
    assert isinstance(allowed, dict) and allowed["outcome"] == "committed"


def test_a_home_folder_entire_is_refused_as_a_root(library) -> None:
    refused = index_with_roots(library, Path.home().resolve().as_uri())
    assert isinstance(refused, str) and "a home folder entire" in refused


def test_an_escaped_parent_in_a_root_uri_and_a_remote_host_are_refused(library) -> None:
    inside = library["root"] / "notes"
    escaped = index_with_roots(library, f"file://{inside}/%2F..%2F..%2F")
    assert isinstance(escaped, str) and "escaped slash" in escaped
    # The SDK's client drops a plain `..` from a URI before sending it; a client of its own might not.
    with pytest.raises(OutsideRootsError, match="parent folder"):
        root_path(f"file://{inside}/../..")
    remote = index_with_roots(library, f"file://fileserver{library['root']}")
    assert isinstance(remote, str) and "'fileserver'" in remote and "only local roots" in remote


def test_relative_allowed_roots_are_refused_at_startup() -> None:
    with pytest.raises(ValidationError, match="relative path"):
        Settings(allowed_roots=".")
    assert Settings(allowed_roots="~/notes").allowed_root_paths[0].is_absolute()


def test_names_with_escapes_and_newlines_cannot_forge_log_lines() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "skipped %s: %s", None, None)
    record.args = ("evil\n[granrag] ERROR the store is corrupt\x1b[2J.md", "no text")
    line = OneLineFormatter("[granrag] %(levelname)s %(message)s").format(record)
    assert "\n" not in line and "\x1b" not in line
    assert line == "[granrag] WARNING skipped evil\\n[granrag] ERROR the store is corrupt\\x1b[2J.md: no text"


def test_index_paths_lists_only_the_doc_ids_it_indexed(library) -> None:
    notes = library["root"] / "notes"
    (notes / "empty.md").write_text("   \n", encoding="utf-8")

    async def scenario(client: Client) -> dict[str, Any]:
        return await call(client, "index_paths", {"paths": [str(notes)]})

    result = run(server_for(library), scenario)
    assert [f["reason"] for f in result["failed"]] == ["no text"]
    assert sorted(result["doc_ids"]) == ["deep/comet.txt", "kettle.md"]


class Caller:
    """What `Runs.execute` needs of a tool call's context."""

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def test_a_cancelled_run_is_not_busy_on_the_immediate_retry() -> None:
    """A client that cancels and asks again at once (over stdio the cancel is not awaited) finds the server free
    as soon as the cancelled run reaches its next step, instead of "index busy"."""
    runs = Runs()
    in_stage, release = threading.Event(), threading.Event()

    def work(progress: Any) -> Any:
        progress.update("embedding sentences", 0, 2)
        in_stage.set()
        release.wait(10)  # a stretch of work without a progress step, where the cancel is not yet seen
        progress.update("embedding sentences", 1, 2)  # raises RunCancelled
        raise AssertionError("the cancelled run went on")

    async def scenario() -> str:
        first = runs.begin("index", ["a"])
        async with anyio.create_task_group() as group:
            scope = anyio.CancelScope()

            async def call() -> None:
                with scope:
                    await runs.execute(Caller(), first, work)  # type: ignore[arg-type]

            group.start_soon(call)
            await anyio.to_thread.run_sync(in_stage.wait)
            scope.cancel()
            await anyio.sleep(0.05)
            threading.Timer(0.3, release.set).start()
            second = await runs.start("index", ["a"])  # while the first is still stopping
        assert runs.last is not None
        return f"{second.kind} after {runs.last.outcome}"

    assert anyio.run(scenario) == "index after cancelled"


def test_all_zero_weights_are_refused_with_what_to_do(library) -> None:
    zero = dict.fromkeys(RRF_LISTS, 0.0)  # every list search_fused may fuse

    async def scenario(client: Client) -> dict[str, Any]:
        return {
            "zero": await fail(client, "search_fused", {"query": "comet", "weights": zero}),
            "one": await call(client, "search_fused", {"query": "comet", "weights": {**zero, "narrow_dense": 1.0}}),
        }

    out = run(server_for(library), scenario)
    assert "every list has weight 0" in out["zero"] and "above 0" in out["zero"]
    assert out["one"]["hits"]


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("granrag://documents/" + "x" * 300 + ".md", "no document"),
        ("granrag://documents/" + "é" * 150 + "/a.md", "no document"),
        ("granrag://documents/astronomy.md?page=abc", "page must be a whole number"),
        ("granrag://documents/astronomy.md?page=", "page must be a whole number"),
        ("granrag://chunks/" + "9" * 300, "chunk"),
    ],
)
def test_odd_resource_ids_are_one_clear_line_without_a_traceback(library, caplog, uri: str, expected: str) -> None:
    async def scenario(client: Client) -> str:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        return str(refused.value)

    with caplog.at_level(logging.DEBUG):
        message = run(server_for(library), scenario)
    assert expected in message and "\n" not in message, message
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info]


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ([(b"authorization", b"Bearer s3cret")], True),
        ([(b"authorization", b"Bearer s3cret"), (b"authorization", b"Bearer s3cret")], False),
        ([(b"authorization", b"Bearer s3cret"), (b"authorization", b"Bearer other")], False),
        ([(b"authorization", b"Bearer other"), (b"authorization", b"Bearer s3cret")], False),
        ([], False),
    ],
)
def test_exactly_one_authorization_header_is_accepted(headers: list[tuple[bytes, bytes]], allowed: bool) -> None:
    reached: list[bool] = []
    statuses: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}
    anyio.run(BearerTokenMiddleware(app, "s3cret"), scope, receive, send)
    assert bool(reached) == allowed and statuses == ([] if allowed else [401])


def test_a_path_component_longer_than_the_file_system_allows_is_one_clear_line(library, caplog) -> None:
    too_long = str(library["root"] / ("n" * 300) / "a.md")

    async def scenario(client: Client) -> str:
        return await fail(client, "index_paths", {"paths": [too_long]})

    with caplog.at_level(logging.DEBUG):
        message = run(server_for(library), scenario)
    assert "cannot be a path here (File name too long)" in message and "\n" not in message
    assert not [r for r in caplog.records if r.exc_info]
