"""A stdio server registers its tools, resources and templates at the first request after `initialize`: clients
see the same server as one that registers them at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings


def seen(server: Any, first_call: str | None = None) -> dict[str, Any]:
    """What a client sees: the tools, the resource templates and, if given, the answer to a first tool call."""

    async def main() -> dict[str, Any]:
        async with Client(server) as client:
            with anyio.fail_after(60):
                answer = await client.call_tool(first_call, {"query": "bridge"}) if first_call else None
                tools = (await client.list_tools()).tools
                templates = (await client.list_resource_templates()).resource_templates
        return {"tools": tools, "templates": templates, "answer": answer}

    return anyio.run(main)


def test_nothing_is_registered_before_the_first_request() -> None:
    server = build_server(Settings(store=Path("unused-store")), defer_tools=True)
    assert anyio.run(server.list_tools) == []


def test_the_deferred_server_lists_what_the_eager_one_does() -> None:
    for settings in (Settings(store=Path("unused-store")), Settings(store=Path("unused-store"), allow_write=True)):
        eager = seen(build_server(settings))
        deferred = seen(build_server(settings, defer_tools=True))
        assert deferred["tools"] == eager["tools"] and len(deferred["tools"]) >= 15
        assert deferred["templates"] == eager["templates"] and deferred["templates"]


def test_a_tool_call_as_the_first_request_reaches_its_tool(tmp_path: Path) -> None:
    answer = seen(build_server(Settings(store=tmp_path / "missing"), defer_tools=True), "search_narrow")["answer"]
    text = answer.content[0].text
    assert answer.is_error and "Unknown tool" not in text and "index" in text, text
