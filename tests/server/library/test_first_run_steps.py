"""`serve --library` over an empty store with the real bundled model and the SDK's stdio client: the first run
commits in steps, the first documents are searchable while the rest are read, the library resource says how far
the run is, and the store ends as a one-piece run's; a run killed between steps leaves its last step servable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import stdio_client

from granrag_mcp.levels import LEVELS
from granrag_mcp.settings import Settings
from granrag_mcp.store.graph import has_graph
from granrag_mcp.store.store import TMP_PREFIX, Snapshot, read_current
from tests.server.library.test_folders import params, search
from tests.server.transport.test_stdio import SESSION_TIMEOUT, granrag_command, server_env

TOPICS = ["harbour crane", "orchard apple", "comet tail", "violin maker", "desert well", "glacier ice"]
NOTES = {
    f"n{n:03d}.md": f"Note {n} tells of the {TOPICS[n % len(TOPICS)]} number {n}. Its keeper logged it on day {n}."
    for n in range(60)
}
QUERIES = ["Who logged the harbour crane?", "the comet tail number 13", "a violin maker"]


def corpus(folder: Path) -> Path:
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def served(store: Path) -> dict[str, Any]:
    """What a store holds, for comparing two: its documents, every chunk, and whether it has the graph."""
    snapshot = Snapshot.open(store)
    try:
        catalog = snapshot.catalog
        return {
            "documents": [(d.doc_id, d.content_hash, d.n_chars) for d in catalog.documents()],
            "chunks": {level: catalog.chunks_of_level(level) for level in LEVELS},
            "counts": snapshot.manifest.counts,
            "graph": has_graph(snapshot.folder),
        }
    finally:
        snapshot.close()


async def library(client: Client) -> dict[str, Any]:
    read = await client.read_resource("granrag://library")
    return json.loads(read.contents[0].text)  # type: ignore[union-attr]


def test_the_first_documents_are_searchable_while_the_rest_are_indexed(tmp_path: Path) -> None:
    folder = corpus(tmp_path / "notes")
    store = tmp_path / "store"
    server = params(store, folder)
    server.env = {**(server.env or {}), "GRANRAG_INDEX_STEP_DOCUMENTS": "6"}

    async def scenario() -> dict[str, Any]:
        with open(tmp_path / "server.stderr", "w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(server, errlog=errlog)) as client:
                first: list[dict[str, Any]] = []
                while not first:
                    first = await search(client, "Who logged the harbour crane?")
                    await anyio.sleep(0.05)
                early = await library(client)
                while "indexing" in (status := await library(client)) or "last_run" not in status:
                    await anyio.sleep(0.2)
                hits = {query: await search(client, query) for query in QUERIES}
        return {"first": first, "early": early, "status": status, "hits": hits}

    out = anyio.run(scenario)
    # The first search found documents of a step while the run went on, and the resource said how far it was.
    early = out["early"]
    assert early["indexing"]["of"] == len(NOTES) and early["indexing"]["searchable"] < len(NOTES), early
    assert early["documents"] == early["indexing"]["searchable"], early
    assert {h["doc_id"] for h in out["first"]} <= set(NOTES)
    assert out["status"]["documents"] == len(NOTES) and out["status"]["last_run"]["outcome"] == "committed"
    log = (tmp_path / "server.stderr").read_text()
    # The first step is a quarter of the bound (at least one document), each next one as large as what is committed.
    assert f"generation 1 committed: 1 of {len(NOTES)} documents searchable" in log
    assert f"generation 4 committed: 8 of {len(NOTES)} documents searchable" in log

    # The last generation is the one a run in one piece commits over the same folder.
    whole = tmp_path / "whole"
    command = [granrag_command(), "index", str(folder), "--store", str(whole)]
    env = os.environ | server_env(Settings(store=whole), GRANRAG_INDEX_STEP_DOCUMENTS="0")
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=SESSION_TIMEOUT)
    assert served(store) == served(whole)
    assert served(store)["graph"]

    async def one_piece() -> dict[str, Any]:
        with open(tmp_path / "whole.stderr", "w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(params(whole, folder), errlog=errlog)) as client:
                return {query: await search(client, query) for query in QUERIES}

    def ranked(hits: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[str, str]]]:
        return {query: [(h["chunk_id"], h["doc_id"]) for h in found] for query, found in hits.items()}

    assert ranked(out["hits"]) == ranked(anyio.run(one_piece))


def test_a_run_killed_between_steps_leaves_its_last_step_servable(tmp_path: Path) -> None:
    folder = corpus(tmp_path / "notes")
    store = tmp_path / "store"
    command = [granrag_command(), "index", str(folder), "--store", str(store)]
    env = os.environ | server_env(Settings(store=store), GRANRAG_INDEX_STEP_DOCUMENTS="6")
    with open(tmp_path / "killed.stderr", "w") as errlog:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        deadline = time.monotonic() + 180
        while read_current(store) is None:  # the first step
            assert process.poll() is None and time.monotonic() < deadline, "no step was committed"
            time.sleep(0.02)
        while not any(p.name.startswith(TMP_PREFIX) for p in store.iterdir()):  # the next step being written
            assert process.poll() is None and time.monotonic() < deadline, "the run ended before a second step"
            time.sleep(0.002)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(30)
    stepped = served(store)  # every checksum verified
    assert 0 < len(stepped["documents"]) < len(NOTES)
    assert not stepped["graph"]

    # The next run indexes the rest and computes the graph over every document.
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=SESSION_TIMEOUT)
    assert done.returncode == 0, done.stderr
    final = served(store)
    assert len(final["documents"]) == len(NOTES) and final["graph"]
    assert not any(p.name.startswith(TMP_PREFIX) for p in store.iterdir())
