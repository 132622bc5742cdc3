"""The write tools end to end with the real bundled model: over stdio (index a folder with progress, search it
filtered, read it as a resource, remove it, a path outside the roots refused) and over streamable HTTP (one agent
indexing while another searches: no failed call, every returned id resolves)."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from granrag_mcp.settings import Settings
from tests.server.transport.test_http import run, start, stop
from tests.server.transport.test_stdio import Session, build_real_store, granrag_command, server_env

WRITE_TOOLS = {"index_paths", "remove_documents", "index_status"}
TOPICS = ["glacier", "violin", "harbour", "orchard", "comet", "lantern", "falcon", "meadow", "quarry", "kettle"]


def write_notes(folder: Path, documents: int, seed: int = 5, group: str = "set") -> Path:
    """Doc ids are relative to the folder indexed: each test uses its own `group` so they never replace another's."""
    rng = random.Random(seed)
    for n in range(documents):
        topic = TOPICS[n % len(TOPICS)]
        sentences = [
            f"Note {n} is about the {topic} number {n}. " + " ".join(rng.choice(TOPICS) for _ in range(12)) + "."
            for _ in range(30)
        ]
        path = folder / f"{group}{n % 3}" / f"note{n:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(" ".join(sentences), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("writes")
    settings, _ = build_real_store(root)
    (root / "allowed").mkdir()
    return settings, root


def test_the_agent_indexes_searches_reads_and_removes_over_stdio(store, tmp_path: Path) -> None:
    settings, root = store
    notes = write_notes(root / "allowed" / "stdio-notes", 4)
    (tmp_path / "outside.md").write_text("Nothing to see here. " * 10)

    def params(*flags: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=granrag_command(),
            args=["serve", "--store", str(settings.store), *flags],
            env=os.environ | server_env(settings),
        )

    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with open(tmp_path / "read-only.stderr", "w") as errlog:
            async with Client(stdio_client(params(), errlog=errlog)) as client:
                out["read_only_tools"] = {t.name for t in (await client.list_tools()).tools}
        with open(tmp_path / "write.stderr", "w") as errlog:
            flags = ("--allow-write", "--allowed-roots", str(root / "allowed"))
            async with Client(stdio_client(params(*flags), errlog=errlog)) as client:
                s = Session(client, {t.name: t for t in (await client.list_tools()).tools})
                out["tools"] = set(s.tools)
                result = await client.call_tool("index_paths", {"paths": [str(notes)]}, progress_callback=on_progress)
                assert not result.is_error, result.content
                out["indexed"] = result.structured_content
                out["hits"] = await s.ok(
                    "search_narrow", {"query": "the harbour number 2", "k": 5, "doc_prefix": "set2/"}
                )
                out["document"] = (await client.read_resource("granrag://documents/set2/note002.md")).contents[0]
                out["listed"] = [r.uri for r in (await client.list_resources()).resources]
                out["removed"] = await s.ok("remove_documents", {"doc_ids": ["set2/note002.md"]})
                out["after"] = await s.ok(
                    "search_narrow", {"query": "the harbour number 2", "k": 5, "doc_prefix": "set2/"}
                )
                out["outside"] = await s.error("index_paths", {"paths": [str(tmp_path / "outside.md")]})
        return out

    out = run(scenario)
    assert not out["read_only_tools"] & WRITE_TOOLS and WRITE_TOOLS <= out["tools"]
    assert out["indexed"]["outcome"] == "committed" and out["indexed"]["added"] == 4
    values = [v for v, _ in progress]
    assert values and values == sorted(values) and values[-1] == 1.0
    assert any((m or "").startswith("embedding sentences") for _, m in progress)
    hits = out["hits"]["hits"]
    assert hits and {h["doc_id"] for h in hits} == {"set2/note002.md"}  # the only document under set2/
    assert out["document"].text.startswith("Note 2 is about the harbour number 2.")
    assert "granrag://documents/set2/note002.md" in out["listed"]
    assert out["removed"]["outcome"] == "committed"
    assert out["after"]["hits"] == []
    assert "outside the allowed roots" in out["outside"] and str((root / "allowed").resolve()) in out["outside"]


def test_one_agent_indexes_while_another_searches_over_http(store) -> None:
    settings, root = store
    notes = write_notes(root / "allowed" / "http-notes", 40, seed=9, group="http")
    server = start(
        settings, root / "http-server", GRANRAG_ALLOW_WRITE="true", GRANRAG_ALLOWED_ROOTS=str(root / "allowed")
    )
    try:

        async def scenario() -> dict[str, Any]:
            searches: list[dict[str, Any]] = []
            done = anyio.Event()
            out: dict[str, Any] = {}

            async def writer() -> None:
                async with Client(server.url) as client:
                    result = await client.call_tool("index_paths", {"paths": [str(notes)]})
                    assert not result.is_error, result.content
                    out["indexed"] = result.structured_content
                done.set()

            async def reader() -> None:
                async with Client(server.url) as client:
                    while True:
                        finished = done.is_set()  # before the search: a search begun after the commit sees it
                        query = random.choice(["the violin number 4", "Zephyr Bridge", "glacier meadow"])
                        result = await client.call_tool("search_fused", {"query": query, "k": 5})
                        assert not result.is_error, result.content
                        ids = [h["chunk_id"] for h in result.structured_content["hits"]]
                        opened = await client.call_tool("get_chunks", {"chunk_ids": ids})
                        assert not opened.is_error, opened.content  # every returned id resolves
                        searches.append(result.structured_content)
                        if finished and len(searches) >= 3:
                            break
                    out["final"] = await client.call_tool(
                        "search_narrow", {"query": "the violin number 11", "k": 3, "doc_prefix": "http2/"}
                    )

            async with anyio.create_task_group() as group:
                group.start_soon(writer)
                group.start_soon(reader)
            out["searches"] = searches
            return out

        out = run(scenario)
    finally:
        stop(server.process)
    assert out["indexed"]["added"] == 40
    generations = [s["generation"] for s in out["searches"]]
    assert generations == sorted(generations) and generations[-1] == out["indexed"]["generation"]
    assert generations[0] < generations[-1]  # the reader searched while the writer indexed, across the switch
    final = out["final"].structured_content["hits"]
    assert final and final[0]["doc_id"] == "http2/note011.md"


def test_first_run_on_an_empty_store_then_the_cli_commit_is_announced_over_stdio(store, tmp_path: Path) -> None:
    """`serve --allow-write` on a store that does not exist yet; index_paths commits its first generation; then
    `granrag-mcp index` in another process commits the next, and the subscribed client hears of it."""
    from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

    settings, root = store
    mine = write_notes(root / "allowed" / "first-notes", 2, seed=3, group="first")
    theirs = write_notes(root / "allowed" / "cli-notes", 2, seed=4, group="cli")
    empty_store = tmp_path / "fresh" / "store"
    env = os.environ | server_env(settings) | {"GRANRAG_WATCH_INTERVAL": "0.2"}
    params = StdioServerParameters(
        command=granrag_command(),
        args=["serve", "--store", str(empty_store), "--allow-write", "--allowed-roots", str(root / "allowed")],
        env=env,
    )
    watched = "granrag://documents/cli1/note001.md"

    def cli_index() -> subprocess.CompletedProcess[str]:
        command = [granrag_command(), "index", str(theirs), "--store", str(empty_store), "--quiet"]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with open(tmp_path / "server.stderr", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                s = Session(client, {t.name: t for t in (await client.list_tools()).tools})
                out["tools"] = set(s.tools)
                out["empty"] = await s.error("search_fused", {"query": "the violin number 1"})
                out["listed"] = await s.ok("list_documents", {})
                out["indexed"] = await s.ok("index_paths", {"paths": [str(mine)]})
                out["mine"] = await s.ok("search_narrow", {"query": "the violin number 1", "k": 3})
                events: list[Any] = []
                async with client.listen(resources_list_changed=True, resource_subscriptions=[watched]) as sub:
                    out["cli"] = await anyio.to_thread.run_sync(cli_index)
                    with anyio.fail_after(60):
                        async for event in sub:
                            events.append(event)
                            if ResourceUpdated(uri=watched) in events and ResourcesListChanged() in events:
                                break
                out["events"] = events
                out["theirs"] = await s.ok(
                    "search_narrow", {"query": "the violin number 1", "k": 3, "doc_prefix": "cli1/"}
                )
        return out

    out = run(scenario)
    assert WRITE_TOOLS <= out["tools"]
    assert "the library is empty: call index_paths" in out["empty"]
    assert out["listed"]["total"] == 0
    assert out["indexed"]["outcome"] == "committed" and out["indexed"]["generation"] == 1
    assert out["mine"]["hits"] and out["mine"]["hits"][0]["doc_id"] == "first1/note001.md"
    assert out["cli"].returncode == 0, out["cli"].stderr
    assert ResourceUpdated(uri=watched) in out["events"] and ResourcesListChanged() in out["events"]
    assert out["theirs"]["generation"] == 2 and out["theirs"]["hits"][0]["doc_id"] == "cli1/note001.md"


def test_first_run_on_a_missing_store_over_http(store, tmp_path: Path) -> None:
    settings, root = store
    notes = write_notes(root / "allowed" / "http-first", 2, seed=6, group="hfirst")
    fresh = settings.model_copy(update={"store": tmp_path / "missing" / "store"})
    server = start(fresh, tmp_path / "server", GRANRAG_ALLOW_WRITE="true", GRANRAG_ALLOWED_ROOTS=str(root / "allowed"))
    try:

        async def scenario() -> dict[str, Any]:
            async with Client(server.url) as client:
                s = Session(client, {t.name: t for t in (await client.list_tools()).tools})
                return {
                    "empty": await s.error("search_narrow", {"query": "the violin number 1"}),
                    "status": await s.ok("index_status", {}),
                    "indexed": await s.ok("index_paths", {"paths": [str(notes)]}),
                    "hits": await s.ok("search_narrow", {"query": "the violin number 1", "k": 3}),
                }

        out = run(scenario)
    finally:
        stop(server.process)
    assert "the library is empty: call index_paths" in out["empty"]
    assert out["status"]["generation"] == 0 and out["status"]["documents"] == 0
    assert out["indexed"]["generation"] == 1
    assert out["hits"]["hits"] and out["hits"]["hits"][0]["doc_id"] == "hfirst1/note001.md"
