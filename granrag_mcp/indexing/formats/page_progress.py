"""Pages read so far of the document being read, told to whoever reads it: the extraction worker passes them on
to the run, so a long scanned PDF shows its pages going by and is timed a page at a time, not as one document.

Like the reading limits (`limits`), the listener travels with the extraction (`extract_text` sets it for the one
document), so every format's `extract(path, data)` keeps its signature; a reader that has no pages says nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

PageListener = Callable[[int, int], None]
"""(pages read, pages in the document)."""

_LISTENER: ContextVar[PageListener | None] = ContextVar("granrag_page_listener", default=None)


@contextmanager
def listening(listener: PageListener | None) -> Iterator[None]:
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def page_read(done: int, total: int) -> None:
    """Tell the listener, if any, that `done` of the document's `total` pages are read."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(done, total)
