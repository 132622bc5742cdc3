"""How a tool joins the server: a title and behaviour hints, its docstring as description, structured output,
errors the model can act on, results rendered as quoted data, the `memory` argument for the tools that read the
search history, and what every tool reads (`Served`), filled in by the SDK's resolver before the tool runs.

A resolver written as a plain function costs a call a trip to a worker thread and back before the tool's own
trip, so the ones a search needs are coroutines that do no blocking work."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp_types import ToolAnnotations

from granrag_mcp.packing import TokenCounter
from granrag_mcp.retrieval.view import View
from granrag_mcp.server.library.state import EngineHolder, holder_of
from granrag_mcp.server.session.handle import remembers, with_memory_argument
from granrag_mcp.server.tools.presenting import F, description, presented, tool_errors


class Served:
    """What a tool reads: a view of the current generation, the token counter that budgets its results, and the
    engine's holder (settings, the sessions' memories).

    The view is taken where it is first read: in the tool's own worker thread for a tool that takes `Current`, so
    that the call needs no thread of its own to resolve it (the first call waits there for the engine to load, and
    a new generation is opened there, never on the event loop).
    """

    def __init__(self, holder: EngineHolder) -> None:
        self.holder = holder

    @functools.cached_property
    def _taken(self) -> tuple[View, TokenCounter]:
        return tool_errors(self.holder.view)()

    @property
    def view(self) -> View:
        return self._taken[0]

    @property
    def tokens(self) -> TokenCounter:
        return self._taken[1]


async def served(ctx: Context[Any, Any]) -> Served:
    """What the tool called reads, its view not yet taken (see `Served`)."""
    return Served(holder_of(ctx))


Current = Annotated[Served, Resolve(served)]
"""A tool's parameter the SDK fills with `served(ctx)` before the tool runs (once per call, however many
parameters ask for it); resolved parameters are not part of the tool's schema."""


def taken(current: Current) -> Served:
    """`current` with its view taken, in a worker thread: the first call waits for the engine to load, like every
    tool."""
    current.view  # noqa: B018  # taking it is the point
    return current


Taken = Annotated[Served, Resolve(taken)]
"""What `CurrentView` and `Tokens` read: one trip to a worker thread per call, however many of them a tool takes."""


async def current_view(current: Taken) -> View:
    return current.view


async def token_counter(current: Taken) -> TokenCounter:
    return current.tokens


CurrentView = Annotated[View, Resolve(current_view)]
"""The view of the current generation a tool reads."""
Tokens = Annotated[TokenCounter, Resolve(token_counter)]
"""The token counter that budgets a tool's results."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def read_only_tool(server: MCPServer, title: str, meta: dict[str, Any] | None = None) -> Callable[[F], F]:
    """Add a read-only tool with its title; `meta` is the tool's `_meta` (a UI resource a host may render)."""

    def add(fn: F) -> F:
        target = with_memory_argument(fn) if remembers(fn) else fn
        server.add_tool(
            presented(tool_errors(target)),
            title=title,
            description=description(fn),
            annotations=READ_ONLY,
            structured_output=True,
            meta=meta,
        )
        return fn

    return add
