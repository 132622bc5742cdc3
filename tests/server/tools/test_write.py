"""The write tools, filters and document resources through the SDK's in-memory client (fake embedder)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import ListRootsResult, Root

from granrag_mcp.server.app import build_server
from granrag_mcp.server.library.resources import DOCUMENT_PREFIX as DOCUMENTS
from granrag_mcp.server.library.resources import PAGE_CHARS
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import FAKE_MODEL, SMALL_CHUNKS, call, fail, fake_engine, run, write_corpus

WRITE_TOOLS = {"index_paths", "remove_documents", "index_status"}
NOTES = {
    "kettle.md": "The brass kettle whistles when the water boils. Tea steeps for four minutes in the pot.",
    "deep/comet.txt": "The comet Halloran returns every 71 years. Its tail points away from the sun.",
}


def write_notes(folder: Path) -> Path:
    for name, text in NOTES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join([text] * 4), encoding="utf-8")
    return folder


@pytest.fixture
def library(tmp_path: Path) -> dict[str, Any]:
    """A store of the three-document corpus; a notes folder inside the allowed root; a secret outside it."""
    root = tmp_path / "allowed"
    write_notes(root / "notes")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "plans.md").write_text("The vault code is 4417. " * 20, encoding="utf-8")
    settings = Settings(
        store=tmp_path / "store", model=FAKE_MODEL, allow_write=True, allowed_roots=str(root), **SMALL_CHUNKS
    )
    embedder = FakeEmbedder()
    fake_index([write_corpus(tmp_path / "corpus")], settings, embedder)
    return {"settings": settings, "embedder": embedder, "root": root, "tmp": tmp_path}


def server_for(library: dict[str, Any], **changes: Any):
    settings = library["settings"].model_copy(update=changes)
    return build_server(settings, lambda s: fake_engine(s, library["embedder"]))


def test_without_allow_write_the_write_tools_are_not_listed(library) -> None:
    async def scenario(client: Client) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    assert not run(server_for(library, allow_write=False), scenario) & WRITE_TOOLS
    assert WRITE_TOOLS <= run(server_for(library), scenario)


def test_index_a_folder_with_progress_search_it_filtered_read_it_and_remove_it(library) -> None:
    notes = library["root"] / "notes"
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def scenario(client: Client) -> dict[str, Any]:
        before = await call(client, "index_status", {})
        result = await client.call_tool("index_paths", {"paths": [str(notes)]}, progress_callback=on_progress)
        assert not result.is_error, result.content
        indexed = result.structured_content
        again = await call(client, "index_paths", {"paths": [str(notes)]})
        hits = await call(client, "search_narrow", {"query": "comet tail sun kettle", "k": 5, "doc_prefix": "deep/"})
        only = await call(client, "search_fused", {"query": "bridge lighthouse", "k": 3, "doc_ids": ["kettle.md"]})
        unknown = await fail(client, "search_broad", {"query": "x", "doc_ids": ["missing.md"]})
        listed = await client.list_resources()
        text = await client.read_resource("granrag://documents/deep/comet.txt")
        chunk = await client.read_resource(f"granrag://chunks/{hits['hits'][0]['chunk_id']}")
        status = await call(client, "index_status", {})
        removed = await call(client, "remove_documents", {"doc_ids": ["deep/comet.txt"]})
        gone = await fail(client, "search_narrow", {"query": "comet", "doc_ids": ["deep/comet.txt"]})
        unknown_removal = await fail(client, "remove_documents", {"doc_ids": ["deep/comet.txt"]})
        return locals()

    out = run(server_for(library), scenario)
    assert out["before"]["documents"] == 3 and "running" not in out["before"]
    assert out["before"]["allowed_roots"] == [str(library["root"].resolve())]
    indexed = out["indexed"]
    assert indexed["outcome"] == "committed" and indexed["added"] == 2
    assert sorted(indexed["doc_ids"]) == sorted(NOTES)
    assert indexed["generation"] == out["before"]["generation"] + 1
    assert out["again"]["outcome"] == "unchanged" and out["again"]["unchanged"] == 2
    # progress: growing shares of 1, with file and chunk counts in the messages
    values = [v for v, _, _ in progress]
    assert progress and values == sorted(values) and values[-1] == 1.0 and {t for _, t, _ in progress} == {1.0}
    messages = " | ".join(m or "" for _, _, m in progress)
    assert "extracting documents: 2/2 files" in messages and "embedding sentences" in messages
    assert out["hits"]["hits"] and {h["doc_id"] for h in out["hits"]["hits"]} == {"deep/comet.txt"}
    assert out["only"]["hits"] and {h["doc_id"] for h in out["only"]["hits"]} == {"kettle.md"}
    assert "unknown doc_id" in out["unknown"] and "missing.md" in out["unknown"]
    uris = {r.uri for r in out["listed"].resources if r.uri.startswith(DOCUMENTS)}  # not the evidence view's
    assert {"granrag://documents/kettle.md", "granrag://documents/deep/comet.txt"} <= uris and len(uris) == 5
    assert out["text"].contents[0].text.startswith(NOTES["deep/comet.txt"])
    assert out["chunk"].contents[0].text.strip() in NOTES["deep/comet.txt"] * 4
    assert out["status"]["documents"] == 5 and out["status"]["last_run"]["outcome"] == "unchanged"
    assert out["removed"]["outcome"] == "committed" and out["removed"]["removed"] == 1
    assert "unknown doc_id" in out["gone"] and "Nothing was removed" in out["unknown_removal"]


def test_paths_outside_the_roots_and_links_leading_out_are_refused(library) -> None:
    tmp, root = library["tmp"], library["root"]
    os.symlink(tmp / "secret" / "plans.md", root / "notes" / "plans.md")
    os.symlink(tmp / "secret", root / "secret-link")

    async def scenario(client: Client) -> dict[str, str]:
        return {
            "outside": await fail(client, "index_paths", {"paths": [str(tmp / "secret")]}),
            "relative": await fail(client, "index_paths", {"paths": ["notes"]}),
            "file_link": await fail(client, "index_paths", {"paths": [str(root / "notes")]}),
            "folder_link": await fail(client, "index_paths", {"paths": [str(root / "secret-link")]}),
            "dotdot": await fail(client, "index_paths", {"paths": [str(root / ".." / "secret")]}),
        }

    out = run(server_for(library), scenario)
    allowed = str(root.resolve())
    for name, message in out.items():
        assert allowed in message, (name, message)
    assert "outside the allowed roots" in out["outside"] and "relative path" in out["relative"]
    assert "symbolic link" in out["file_link"] and "plans.md" in out["file_link"]
    assert "leads to" in out["folder_link"]

    async def nothing_indexed(client: Client) -> dict[str, Any]:
        return await call(client, "list_documents", {})

    assert run(server_for(library), nothing_indexed)["total"] == 3


def test_no_roots_at_all_is_a_clear_error(library) -> None:
    async def scenario(client: Client) -> str:
        return await fail(client, "index_paths", {"paths": [str(library["root"])]})

    assert "GRANRAG_ALLOWED_ROOTS" in run(server_for(library, allowed_roots=""), scenario)


def client_roots_scenario(library: dict[str, Any]) -> tuple[Any, Any]:
    """A client that offers one root of its own, and a scenario that reads the status, indexes under the configured
    folder and under the client's root."""
    tmp = library["tmp"]
    write_notes(tmp / "client-root")

    async def roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=(tmp / "client-root").resolve().as_uri(), name="client")])

    async def scenario(client: Client) -> dict[str, Any]:
        async def attempt(path: Path) -> dict[str, Any] | str:
            try:
                return await call(client, "index_paths", {"paths": [str(path)]})
            except AssertionError as exc:
                return str(exc)

        return {
            "status": await call(client, "index_status", {}),
            "configured": await attempt(library["root"] / "notes"),
            "client": await attempt(tmp / "client-root"),
        }

    return roots, scenario


def test_configured_folders_win_over_the_clients_roots_and_roots_are_never_asked(library) -> None:
    roots, scenario = client_roots_scenario(library)
    asked: list[Any] = []

    async def counting(context: Any) -> ListRootsResult:
        asked.append(context)
        return await roots(context)

    out = run(server_for(library), scenario, list_roots_callback=counting, mode="legacy")
    assert out["status"]["roots_from"] == "GRANRAG_ALLOWED_ROOTS"
    assert out["status"]["allowed_roots"] == [str(library["root"].resolve())]
    assert isinstance(out["configured"], dict) and out["configured"]["added"] == 2
    assert "outside the allowed roots" in str(out["client"])
    assert asked == []  # roots are deprecated from 2026-07-28: a configured server never sends roots/list


def test_without_configured_folders_the_clients_roots_are_the_fallback(library) -> None:
    roots, scenario = client_roots_scenario(library)
    with pytest.warns(MCPDeprecationWarning, match="roots capability is deprecated"):
        out = run(server_for(library, allowed_roots=""), scenario, list_roots_callback=roots, mode="legacy")
    assert out["status"]["roots_from"].startswith("the client's MCP roots")
    assert out["status"]["allowed_roots"] == [str((library["tmp"] / "client-root").resolve())]
    assert "outside the allowed roots" in str(out["configured"])
    assert isinstance(out["client"], dict) and out["client"]["added"] == 2


def test_long_documents_are_read_in_pages_and_listing_pages_through_documents(library, monkeypatch) -> None:
    import granrag_mcp.server.library.resources as resources

    monkeypatch.setattr(resources, "LIST_PAGE", 2)
    long_text = "word " * (PAGE_CHARS // 5 + 100)
    (library["root"] / "long.txt").write_text(long_text, encoding="utf-8")

    async def scenario(client: Client) -> dict[str, Any]:
        await call(client, "index_paths", {"paths": [str(library["root"] / "long.txt")]})
        pages, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages.append([r.uri for r in page.resources if r.uri.startswith(DOCUMENTS)])
            cursor = page.next_cursor
            if cursor is None:
                break
        first = await client.read_resource("granrag://documents/long.txt")
        second = await client.read_resource("granrag://documents/long.txt?page=2")
        with pytest.raises(MCPError) as past_the_end:
            await client.read_resource("granrag://documents/long.txt?page=3")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("granrag://documents/nope.md")
        return {
            "pages": pages,
            "first": first.contents[0].text,
            "second": second.contents[0].text,
            "third": str(past_the_end.value),
            "unknown": str(unknown.value),
        }

    out = run(server_for(library), scenario)
    assert "has 2 page(s)" in out["third"] and "no document 'nope.md'" in out["unknown"]
    assert [len(p) for p in out["pages"]] == [2, 2]
    assert len(out["first"]) == PAGE_CHARS and out["first"] + out["second"] == long_text


class SlowEmbedder(FakeEmbedder):
    """Embeds one text at a time with a pause, so that a run can be cancelled in the middle."""

    def embed(self, texts, progress=None, groups=None):
        import time

        out = []
        for done, text in enumerate(texts, 1):
            time.sleep(0.01)
            out.append(super().embed([text])[0])
            if progress is not None:
                progress(done, len(texts))
        import numpy as np

        return np.stack(out) if out else np.zeros((0, self.dimension), dtype=np.float32)


def test_a_cancelled_run_leaves_the_previous_generation_and_the_lock_free(library) -> None:
    import anyio

    slow = SlowEmbedder()
    server = build_server(library["settings"], lambda s: fake_engine(s, slow))
    notes = library["root"] / "notes"

    async def scenario(client: Client) -> dict[str, Any]:
        before = await call(client, "index_status", {})
        started = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if message and message.startswith("embedding sentences"):
                started.set()

        async with anyio.create_task_group() as group:

            async def index() -> None:
                await client.call_tool("index_paths", {"paths": [str(notes)]}, progress_callback=on_progress)

            group.start_soon(index)
            await started.wait()
            group.cancel_scope.cancel()
        for _ in range(200):  # the server stops the run at its next step and releases the writer lock
            status = await call(client, "index_status", {})
            if "running" not in status:
                break
            await anyio.sleep(0.05)
        after = await call(client, "index_paths", {"paths": [str(notes)]})
        return {"before": before, "status": status, "after": after}

    out = run(server, scenario)
    assert "running" not in out["status"] and out["status"]["last_run"]["outcome"] == "cancelled"
    assert out["status"]["generation"] == out["before"]["generation"] and out["status"]["documents"] == 3
    assert out["after"]["outcome"] == "committed" and out["after"]["generation"] == out["before"]["generation"] + 1
    leftovers = [p.name for p in library["settings"].store.iterdir() if p.name.startswith(".tmp-gen-")]
    assert leftovers == []


def test_the_cli_and_the_server_exclude_each_other(library) -> None:
    from granrag_mcp.store.writer import StoreWriter

    async def scenario(client: Client) -> str:
        with StoreWriter(library["settings"].store, command="index"):
            return await fail(client, "index_paths", {"paths": [str(library["root"] / "notes")]})

    message = run(server_for(library), scenario)
    assert "index busy: process" in message and "granrag-mcp index" in message


def test_an_empty_library_is_served_until_index_paths_commits_its_first_generation(library) -> None:
    """`serve --allow-write` on a store that does not exist yet: the first run of "index my notes folder"."""
    from granrag_mcp.engine import Engine
    from granrag_mcp.rerankers import SentenceWindowReranker

    settings = library["settings"].model_copy(update={"store": library["tmp"] / "new" / "store"})
    embedder = library["embedder"]
    server = build_server(
        settings, lambda s: Engine(s, embedder=embedder, reranker=SentenceWindowReranker(embedder), allow_empty=True)
    )

    async def scenario(client: Client) -> dict[str, Any]:
        tools = {t.name for t in (await client.list_tools()).tools}
        empty = await fail(client, "search_narrow", {"query": "comet"})
        hrr = await fail(client, "hrr_search", {"query": "comet"})
        listed = await call(client, "list_documents", {})
        status = await call(client, "index_status", {})
        resources = (await client.list_resources()).resources
        indexed = await call(client, "index_paths", {"paths": [str(library["root"] / "notes")]})
        hits = await call(client, "search_narrow", {"query": "comet tail sun", "k": 3})
        after = await call(client, "list_documents", {})
        return locals()

    out = run(server, scenario)
    assert WRITE_TOOLS <= out["tools"] and "search_narrow" in out["tools"]
    for message in (out["empty"], out["hrr"]):
        assert "the library is empty: call index_paths" in message
    assert out["listed"]["total"] == 0 and out["listed"]["documents"] == []
    assert out["status"]["generation"] == 0 and out["status"]["documents"] == 0
    assert [r for r in out["resources"] if r.uri.startswith(DOCUMENTS)] == []
    assert out["indexed"]["outcome"] == "committed" and out["indexed"]["generation"] == 1
    assert out["hits"]["hits"] and out["hits"]["hits"][0]["doc_id"] == "deep/comet.txt"
    assert out["after"]["total"] == 2


def test_a_generation_another_process_commits_is_served_and_announced_to_listeners(library) -> None:
    from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

    settings, embedder = library["settings"], library["embedder"]
    kettle = "granrag://documents/kettle.md"

    async def scenario(client: Client) -> dict[str, Any]:
        before = await call(client, "list_documents", {})
        events: list[Any] = []
        async with client.listen(resources_list_changed=True, resource_subscriptions=[kettle]) as subscription:
            # as `granrag-mcp index` in another process: the same store, not through the server
            await anyio.to_thread.run_sync(lambda: fake_index([library["root"] / "notes"], settings, embedder))
            with anyio.fail_after(30):
                async for event in subscription:
                    events.append(event)
                    if any(isinstance(e, ResourceUpdated) for e in events) and ResourcesListChanged() in events:
                        break
        hits = await call(client, "search_narrow", {"query": "kettle water boils", "k": 3, "doc_ids": ["kettle.md"]})
        return {"before": before, "events": events, "hits": hits}

    out = run(server_for(library, watch_interval=0.05), scenario)
    assert out["before"]["total"] == 3
    assert ResourceUpdated(uri=kettle) in out["events"] and ResourcesListChanged() in out["events"]
    assert {e.uri for e in out["events"] if isinstance(e, ResourceUpdated)} == {kettle}  # only what it listens to
    assert out["hits"]["generation"] == out["before"]["generation"] + 1
    assert out["hits"]["hits"] and out["hits"]["hits"][0]["doc_id"] == "kettle.md"


def test_a_client_on_an_older_protocol_hears_of_commits_by_another_process_too(library) -> None:
    from mcp_types import ResourceListChangedNotification, ResourceUpdatedNotification

    settings, embedder = library["settings"], library["embedder"]
    heard: list[Any] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        heard.append(message)
        if isinstance(message, ResourceListChangedNotification):
            arrived.set()

    async def scenario(client: Client) -> list[str]:
        await call(client, "list_documents", {})
        await anyio.to_thread.run_sync(lambda: fake_index([library["root"] / "notes"], settings, embedder))
        with anyio.fail_after(30):
            await arrived.wait()
        await anyio.sleep(0.2)  # the updates follow the list change
        return sorted(m.params.uri for m in heard if isinstance(m, ResourceUpdatedNotification))

    uris = run(server_for(library, watch_interval=0.05), scenario, mode="legacy", message_handler=on_message)
    assert uris == ["granrag://documents/deep/comet.txt", "granrag://documents/kettle.md"]
