"""The tool list is the server's public contract: a change to it must be deliberate.

Regenerate after an intended change with:  UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/server/test_tool_snapshot.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp_types import Tool

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings

SNAPSHOTS = Path(__file__).parent / "snapshots"
SNAPSHOT = SNAPSHOTS / "tools.json"
WRITE_SNAPSHOT = SNAPSHOTS / "tools_write.json"


def listed(settings: Settings) -> list[Tool]:
    """The tools as a client receives them (the server's middleware shapes the answer)."""

    async def main() -> list[Tool]:
        async with Client(build_server(settings)) as client:
            return (await client.list_tools()).tools

    return anyio.run(main)


def current_tools(*, allow_write: bool = False) -> str:
    """The read-only server's tools, or with allow_write only the tools that `--allow-write` adds."""
    read_only = listed(Settings(store=Path("unused-store"), max_tokens=4000))
    server_tools = read_only
    if allow_write:
        writing = listed(Settings(store=Path("unused-store"), max_tokens=4000, allow_write=True))
        known = {tool.name for tool in read_only}
        server_tools = [tool for tool in writing if tool.name not in known]
    tools = [
        {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
            if tool.annotations
            else None,
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
        }
        for tool in sorted(server_tools, key=lambda t: t.name)
    ]
    return json.dumps(tools, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(
    ("allow_write", "snapshot"), [(False, SNAPSHOT), (True, WRITE_SNAPSHOT)], ids=["read", "write"]
)
def test_tool_list_matches_the_snapshot(allow_write: bool, snapshot: Path) -> None:
    current = current_tools(allow_write=allow_write)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(current, encoding="utf-8")
    assert snapshot.exists(), f"{snapshot} is missing: create it with UPDATE_SNAPSHOTS=1"
    expected = snapshot.read_text(encoding="utf-8")
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile=f"{snapshot.name} (snapshot)",
                tofile="tools now",
                n=2,
            )
        )
        raise AssertionError(
            "the MCP tool list changed (names, descriptions, schemas or annotations). If that is intended, "
            f"regenerate with UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/server/test_tool_snapshot.py\n{diff}"
        )
