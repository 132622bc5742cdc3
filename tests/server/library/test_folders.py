"""`serve --library` end to end with the real bundled model and the SDK's stdio client: a file edited, added,
renamed and deleted in the watched folder is searchable (or gone) within 5 s of its last write, each change
commits one generation that indexes only that file, and a SIGKILL in the middle of a sync's commit leaves a store
that a restarted server searches, catching up on the change it missed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from granrag_mcp.settings import Settings
from granrag_mcp.store.store import TMP_PREFIX, Snapshot, generation_name, read_current
from tests.server.transport.test_stdio import SESSION_TIMEOUT, granrag_command, server_env

SETTLED_WITHIN = 5.0  # seconds from a file's last write to the change being searchable
COMMITTED = re.compile(r"library sync: generation (\d+) committed: (\d+) added, (\d+) updated, (\d+) removed")
NOTES = {
    "bridge.md": "The Zephyr Bridge was finished in 1931 by the engineer Ada Moreau. It spans the Kell river.",
    "orchard.md": "The Quillon apple ripens in late October in the northern orchards. Its skin is pale gold.",
}


def params(store: Path, folder: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=granrag_command(),
        args=["serve", "--store", str(store), "--library", str(folder)],
        env=os.environ | server_env(Settings(store=store), GRANRAG_LIBRARY_SETTLE="0.5"),
    )


async def search(client: Client, query: str) -> list[dict[str, Any]]:
    result = await client.call_tool("search_narrow", {"query": query, "k": 5})
    if result.is_error:  # the first sync has not committed yet
        return []
    return result.structured_content["hits"]  # type: ignore[index]


async def seconds_until(check: Callable[[], Awaitable[bool]], limit: float = 60.0) -> float:
    start = time.monotonic()
    while not await check():
        assert time.monotonic() - start < limit, "the change never became searchable"
        await anyio.sleep(0.1)
    return time.monotonic() - start


def found(client: Client, query: str, doc_id: str, words: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return any(h["doc_id"] == doc_id and words in h["text"] for h in await search(client, query))

    return check


def gone(client: Client, query: str, doc_id: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        hits = await search(client, query)
        return bool(hits) and all(h["doc_id"] != doc_id for h in hits)

    return check


def test_edits_adds_renames_and_deletes_are_searchable_within_seconds(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = tmp_path / "store"
    errlog_path = tmp_path / "server.stderr"

    async def scenario() -> dict[str, float]:
        waits: dict[str, float] = {}
        with open(errlog_path, "w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(params(store, folder), errlog=errlog)) as client:
                # The first sync indexes the folder into an empty store (model load included).
                await seconds_until(found(client, "Who built the Zephyr Bridge?", "bridge.md", "Ada Moreau"), 180)

                (folder / "bridge.md").write_text(NOTES["bridge.md"].replace("Ada Moreau", "Ines Varga"), "utf-8")
                waits["edit"] = await seconds_until(
                    found(client, "Who built the Zephyr Bridge?", "bridge.md", "Ines Varga")
                )

                new = folder / "sub" / "lighthouse.md"
                new.parent.mkdir()
                with new.open("w", encoding="utf-8") as stream:  # a save in pieces
                    for part in ["The Harrow Point lighthouse ", "lens has ", "forty-two prisms."]:
                        stream.write(part)
                        stream.flush()
                        time.sleep(0.05)  # well inside the quiet period, however busy the event loop
                waits["add"] = await seconds_until(
                    found(client, "How many prisms in the lighthouse lens?", "sub/lighthouse.md", "forty-two")
                )

                # An editor's atomic save: a swap file, then a temporary file renamed over the original.
                (folder / ".orchard.md.swp").write_bytes(b"swap")
                (folder / "orchard.md.tmp").write_text(NOTES["orchard.md"] + " Pick it by hand.", encoding="utf-8")
                os.replace(folder / "orchard.md.tmp", folder / "orchard.md")
                (folder / ".orchard.md.swp").unlink()
                waits["atomic save"] = await seconds_until(
                    found(client, "How is the Quillon apple picked?", "orchard.md", "Pick it by hand")
                )

                (folder / "orchard.md").rename(folder / "apples.md")
                waits["rename"] = await seconds_until(
                    found(client, "When does the Quillon apple ripen?", "apples.md", "late October")
                )
                assert await gone(client, "When does the Quillon apple ripen?", "orchard.md")()

                (folder / "sub" / "lighthouse.md").unlink()
                waits["delete"] = await seconds_until(
                    gone(client, "How many prisms in the lighthouse lens?", "sub/lighthouse.md")
                )
                await anyio.sleep(1.5)  # time for any extra run to show itself
        return waits

    waits = anyio.run(scenario)
    assert all(seconds <= SETTLED_WITHIN for seconds in waits.values()), waits
    commits = [tuple(map(int, m.groups())) for m in COMMITTED.finditer(errlog_path.read_text())]
    # One generation per change, numbered without a gap, each indexing only the file that changed.
    assert [c[0] for c in commits] == list(range(1, 7)), commits
    assert [c[1:] for c in commits] == [(2, 0, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 1), (0, 0, 1)], commits


def test_a_sigkill_during_a_sync_commit_leaves_a_servable_store(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = tmp_path / "store"
    server = params(store, folder)
    with open(tmp_path / "killed.stderr", "w") as errlog:
        process = subprocess.Popen(
            [server.command, *server.args], env=server.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog
        )
    killed_in_commit = False
    try:
        deadline = time.monotonic() + 180
        while read_current(store) is None:  # the first sync's commit
            assert process.poll() is None and time.monotonic() < deadline, "the first sync never committed"
            time.sleep(0.1)
        for attempt in range(20):  # each change is a short commit: watch for its half-built folder, and kill
            before = read_current(store)
            next_number = int(before.generation.rpartition("-")[2]) + 1
            (folder / f"change{attempt}.md").write_text(f"Trial {attempt} moved the harbour crane.", "utf-8")
            change_deadline = time.monotonic() + 20
            while time.monotonic() < change_deadline:
                if any(p.name.startswith(TMP_PREFIX) for p in store.iterdir()):
                    process.send_signal(signal.SIGKILL)
                    killed_in_commit = True
                    break
                time.sleep(0.002)
            if killed_in_commit:
                break
    finally:
        process.kill()
        process.wait(30)
    assert killed_in_commit, "never caught a sync in its commit"
    # The generation committed before the killed run (or, had the kill come just after its publishing, that run's)
    # is current, and opens with every checksum verified.
    current = read_current(store)
    assert current is not None and current.generation in (before.generation, generation_name(next_number))
    Snapshot.open(store).close()

    async def restarted() -> list[dict[str, Any]]:
        with open(tmp_path / "restarted.stderr", "w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(server, errlog=errlog)) as client:
                hits = await search(client, "Who built the Zephyr Bridge?")
                assert any(h["doc_id"] == "bridge.md" for h in hits)  # the last generation serves at once
                await seconds_until(found(client, "harbour crane", f"change{attempt}.md", "harbour crane"), 60)
                return await search(client, "Who built the Zephyr Bridge?")

    assert any(h["doc_id"] == "bridge.md" for h in anyio.run(restarted))
    assert not any(p.name.startswith(TMP_PREFIX) for p in store.iterdir())  # cleaned by the next writer
