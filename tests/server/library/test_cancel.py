"""A write run cancelled while one file's extraction is stuck frees the server at once: index_status shows no
run, and the next index_paths starts rather than answering "index busy" (in-memory client, fake embedder)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from granrag_mcp.server.app import build_server
from tests.reliability.test_hostile_documents import wide_rows
from tests.server.test_app import call, fake_engine, run
from tests.server.tools.test_write import library, write_notes

__all__ = ["library"]


def test_a_run_cancelled_in_a_stuck_extraction_leaves_the_next_free(library: dict[str, Any]) -> None:
    hostile: Path = library["root"] / "hostile"
    hostile.mkdir()
    # Every row really 16,384 cells wide: minutes to read, far past the test, so only the cancel ends the run.
    (hostile / "wide.xlsx").write_bytes(wide_rows(20_000))
    other = write_notes(library["root"] / "other")
    server = build_server(library["settings"], lambda s: fake_engine(s, library["embedder"]))

    async def scenario(client: Client) -> dict[str, Any]:
        before = await call(client, "index_status", {})
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "index_paths", {"paths": [str(hostile)]})
            status: dict[str, Any] = {}
            for _ in range(600):  # the run reaches the sheet once its worker has started
                status = await call(client, "index_status", {})
                if "extract" in str(status.get("running", "")):
                    break
                await anyio.sleep(0.05)
            assert "extract" in str(status.get("running", "")), status
            await anyio.sleep(0.5)  # well inside the extraction
            group.cancel_scope.cancel()
        cancelled = time.monotonic()
        status = await call(client, "index_status", {})
        for _ in range(40):  # the run ends at its next look at the cancel, a fraction of a second
            if "running" not in status:
                break
            await anyio.sleep(0.05)
            status = await call(client, "index_status", {})
        freed = time.monotonic() - cancelled
        started = time.monotonic()
        after = await call(client, "index_paths", {"paths": [str(other)]})
        return {"before": before, "status": status, "freed": freed, "after": after, "next": time.monotonic() - started}

    out = run(server, scenario)
    assert "running" not in out["status"], out["status"]
    assert out["status"]["last_run"]["outcome"] == "cancelled" and out["freed"] < 2.0
    assert out["after"]["outcome"] == "committed", out["after"]
    assert out["after"]["generation"] == out["before"]["generation"] + 1 and out["next"] < 10.0
    leftovers = [p.name for p in library["settings"].store.iterdir() if p.name.startswith(".tmp-gen-")]
    assert leftovers == []
