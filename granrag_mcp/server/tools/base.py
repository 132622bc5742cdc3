"""How a tool joins the server: a title and behaviour hints, its docstring as description, structured output,
errors the model can act on, results rendered as quoted data, the `memory` argument for the tools that read the
search history, and what every tool reads (`Served`), filled in by the SDK's resolver before the tool runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp_types import ToolAnnotations

from granrag_mcp.packing import TokenCounter
from granrag_mcp.retrieval.view import View
from granrag_mcp.server.library.state import EngineHolder, holder_of
from granrag_mcp.server.session.handle import remembers, with_memory_argument
from granrag_mcp.server.tools.presenting import F, description, presented, tool_errors


@dataclass(frozen=True)
class Served:
    """What a tool reads: a view of the current generation, the token counter that budgets its results, and the
    engine's holder (settings, the sessions' memories)."""

    view: View
    tokens: TokenCounter
    holder: EngineHolder


@tool_errors
def served(ctx: Context[Any, Any]) -> Served:
    """What the tool called reads; the first call waits for the engine to load, like every tool."""
    holder = holder_of(ctx)
    view, tokens = holder.view()
    return Served(view, tokens, holder)


Current = Annotated[Served, Resolve(served)]
"""A tool's parameter the SDK fills with `served(ctx)` before the tool runs (once per call, however many
parameters ask for it); resolved parameters are not part of the tool's schema."""


async def current_view(current: Current) -> View:
    return current.view


async def token_counter(current: Current) -> TokenCounter:
    return current.tokens


CurrentView = Annotated[View, Resolve(current_view)]
"""The view of the current generation a tool reads."""
Tokens = Annotated[TokenCounter, Resolve(token_counter)]
"""The token counter that budgets a tool's results."""

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
