"""The tool list is the server's public contract: a change to it must be deliberate.

Regenerate after an intended change with:  UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/server/test_tool_snapshot.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import anyio

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools.json"


def current_tools() -> str:
    server = build_server(Settings(store=Path("unused-store"), max_tokens=4000))
    server_tools = anyio.run(server.list_tools)
    tools = [
        {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True),
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
        }
        for tool in sorted(server_tools, key=lambda t: t.name)
    ]
    return json.dumps(tools, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_tool_list_matches_the_snapshot() -> None:
    current = current_tools()
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.exists(), f"{SNAPSHOT} is missing: create it with UPDATE_SNAPSHOTS=1"
    expected = SNAPSHOT.read_text(encoding="utf-8")
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile="tests/snapshots/tools.json (snapshot)",
                tofile="tools now",
                n=2,
            )
        )
        raise AssertionError(
            "the MCP tool list changed (names, descriptions, schemas or annotations). If that is intended, "
            f"regenerate with UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/server/test_tool_snapshot.py\n{diff}"
        )
