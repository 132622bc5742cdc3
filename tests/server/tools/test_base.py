"""What every tool reads: resolved without a worker thread of its own, the view taken where the tool first reads it."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from mcp.server.subscriptions import InMemorySubscriptionBus

from granrag_mcp.server.library.state import EngineHolder
from granrag_mcp.server.tools.base import served
from granrag_mcp.server.tools.session_search import SearchOptions, search_options
from granrag_mcp.settings import Settings


class LoadingEngine:
    tokenizer = object()

    def __init__(self) -> None:
        self.viewed_in: list[int] = []

    def view(self) -> str:
        self.viewed_in.append(threading.get_ident())
        return "the current view"


def test_what_a_tool_reads_resolves_at_once_and_its_view_is_taken_by_the_thread_that_reads_it(tmp_path: Path) -> None:
    loaded, engine = threading.Event(), LoadingEngine()

    def factory(_: Settings) -> LoadingEngine:
        loaded.wait(30)
        return engine

    holder = EngineHolder(Settings(store=tmp_path), factory, InMemorySubscriptionBus())  # type: ignore[arg-type]
    ctx = SimpleNamespace(request_context=SimpleNamespace(lifespan_context=holder))
    began = time.monotonic()
    current = asyncio.run(served(ctx))  # type: ignore[arg-type]  # a coroutine: the event loop is not held
    assert time.monotonic() - began < 5 and not engine.viewed_in
    loaded.set()
    taken: list[object] = []
    reader = threading.Thread(target=lambda: taken.extend([current.view, current.tokens, current.view]))
    reader.start()
    reader.join(30)
    assert taken == ["the current view", LoadingEngine.tokenizer, "the current view"]
    assert engine.viewed_in == [reader.ident]  # once per call, in the tool's thread


def test_a_search_reads_its_options_from_its_arguments_without_a_thread() -> None:
    given = dict(doc_ids=None, doc_prefix="notes/", max_tokens=300, diversify="mmr", mmr_lambda=0.3)
    options = asyncio.run(search_options(**given, exclude_seen=True, language="fr"))  # type: ignore[arg-type]
    assert options == SearchOptions(**given, exclude_seen=True, language="fr")  # type: ignore[arg-type]
