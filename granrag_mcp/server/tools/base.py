"""How a tool joins the server: a title and behaviour hints, its docstring as description, structured output,
errors the model can act on, results rendered as quoted data, and the `memory` argument for the tools that read
the search history."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from granrag_mcp.server.session.handle import remembers, with_memory_argument
from granrag_mcp.server.tools.presenting import F, description, presented, tool_errors

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def read_only_tool(server: MCPServer, title: str) -> Callable[[F], F]:
    def add(fn: F) -> F:
        target = with_memory_argument(fn) if remembers(fn) else fn
        server.add_tool(
            presented(tool_errors(target)),
            title=title,
            description=description(fn),
            annotations=READ_ONLY,
            structured_output=True,
        )
        return fn

    return add
