"""`serve --library` with the real bundled model and the SDK's stdio client, against a library that holds links out
of it and a file whose extraction does not end: nothing outside the folder is ever searchable, and a note written
after the hostile file is searchable within seconds, its time limit (GRANRAG_EXTRACT_TIMEOUT) included."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from granrag_mcp.settings import Settings
from tests.reliability.test_hostile_documents import wide_rows
from tests.server.library.test_folders import NOTES, found, search, seconds_until
from tests.server.transport.test_stdio import SESSION_TIMEOUT, granrag_command, server_env

FILE_SECONDS = 2.0
WIDE_ROWS = 4000  # rows 16,384 cells wide: far longer to read than FILE_SECONDS


def serve(store: Path, folder: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=granrag_command(),
        args=["serve", "--store", str(store), "--library", str(folder)],
        env=os.environ
        | server_env(Settings(store=store), GRANRAG_LIBRARY_SETTLE="0.5", GRANRAG_EXTRACT_TIMEOUT=str(FILE_SECONDS)),
    )


def library(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_no_file_reached_through_a_link_out_of_the_library_is_served(tmp_path: Path) -> None:
    folder = library(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The vault beneath the Zephyr Bridge opens with the word nightingale.", "utf-8")
    (folder / "leak.md").symlink_to(outside / "secret.md")
    if Path("/etc/passwd").is_file():
        (folder / "passwd.txt").symlink_to("/etc/passwd")
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)

    async def scenario() -> dict[str, object]:
        with open(tmp_path / "server.stderr", "w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(serve(tmp_path / "store", folder), errlog=errlog)) as client:
                await seconds_until(found(client, "Who built the Zephyr Bridge?", "bridge.md", "Ada Moreau"), 180)
                (outside / "late.md").write_text("A nightingale sang under the Zephyr Bridge at night.", "utf-8")
                await anyio.sleep(2.0)  # past a settle and a sync
                hits = await search(client, "What word opens the vault, the nightingale?")
                listed = await client.call_tool("list_documents", {})
                return {"hits": hits, "listed": listed.structured_content}

    out = anyio.run(scenario)
    doc_ids = {d["doc_id"] for d in out["listed"]["documents"]}  # type: ignore[index]
    assert doc_ids == set(NOTES), doc_ids
    assert not any("nightingale" in h["text"] or "root:" in h["text"] for h in out["hits"])  # type: ignore[union-attr]


def test_a_hostile_file_delays_a_later_note_by_no_more_than_its_time_limit(tmp_path: Path) -> None:
    folder = library(tmp_path)

    async def scenario() -> float:
        with open(tmp_path / "server.stderr", "w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(serve(tmp_path / "store", folder), errlog=errlog)) as client:
                await seconds_until(found(client, "Who built the Zephyr Bridge?", "bridge.md", "Ada Moreau"), 180)
                (folder / "hostile.xlsx").write_bytes(wide_rows(WIDE_ROWS))
                await anyio.sleep(1.0)  # its run has begun
                (folder / "later.md").write_text("The Harrow Point lighthouse lens has forty-two prisms.", "utf-8")
                return await seconds_until(
                    found(client, "How many prisms in the lighthouse lens?", "later.md", "forty-two"), 60
                )

    waited = anyio.run(scenario)
    assert waited <= FILE_SECONDS + 10.0, waited
