"""The reading limits an extractor is held to, for the document it is reading now, and the one-line warning that
names a limit and the variable that raises it.

The limits travel with the extraction (`extract_text` sets them for the one document, in whatever process reads
it), so every format's `extract(path, data)` keeps its signature and reads them here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.settings import LimitSettings

_ACTIVE: ContextVar[LimitSettings | None] = ContextVar("granrag_read_limits", default=None)


def active() -> LimitSettings:
    """The limits of the document being read; the defaults where no run set any."""
    return _ACTIVE.get() or LimitSettings()


@contextmanager
def reading_limits(limits: LimitSettings | None) -> Iterator[None]:
    token = _ACTIVE.set(limits)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def variable(name: str) -> str:
    """The environment variable of a limit setting."""
    return f"GRANRAG_{name.upper()}"


def over_limit(path: Path, what: str, name: str, limit: float) -> ExtractionError:
    """The error that skips a file past a limit: what it holds, the limit's variable and value, what to do."""
    return ExtractionError(path, f"{what}, over {variable(name)} ({limit:,}); raise it to index this file")
