"""The `memory` argument of the search tools: the handle of a search history, passed back by the agent.

Every tool that takes `exclude_seen` gets it from `with_memory_argument`, so the search tools' own signatures stay
about their technique; the handle reaches `session_search` through a context variable set for the call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any, TypeVar

from pydantic import Field

F = TypeVar("F", bound=Callable[..., Any])

MEMORY_HANDLE: ContextVar[str | None] = ContextVar("memory_handle", default=None)
REMEMBERING_PARAMETER = "exclude_seen"
"""The tools that take this parameter read the search history, so they also take its handle."""

MemoryHandle = Annotated[
    str | None,
    Field(
        max_length=64,
        description="`memory` of an earlier result: continue its search history, also without a session.",
    ),
]


def remembers(fn: Callable[..., Any]) -> bool:
    return REMEMBERING_PARAMETER in inspect.signature(fn).parameters


def with_memory_argument(fn: F) -> F:
    """`fn` with one more keyword argument, `memory`, which it sees as `MEMORY_HANDLE` during the call."""
    signature = inspect.signature(fn, eval_str=True)
    memory = inspect.Parameter("memory", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=MemoryHandle)

    @functools.wraps(fn)
    def wrapper(*args: Any, memory: str | None = None, **kwargs: Any) -> Any:
        token = MEMORY_HANDLE.set(memory)
        try:
            return fn(*args, **kwargs)
        finally:
            MEMORY_HANDLE.reset(token)

    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), memory]
    )
    return wrapper  # type: ignore[return-value]
