"""How a tool joins the server: read-only annotations, its docstring as description, structured output, errors
the model can act on and results rendered as quoted data."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from granrag_mcp.server.tools.presenting import F, description, presented, tool_errors

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def read_only_tool(server: MCPServer, title: str) -> Callable[[F], F]:
    def add(fn: F) -> F:
        server.add_tool(
            presented(tool_errors(fn)),
            title=title,
            description=description(fn),
            annotations=READ_ONLY,
            structured_output=True,
        )
        return fn

    return add
