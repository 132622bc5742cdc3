"""The server's state, built in `build_server` and yielded by its lifespan: the engine, loading in the background.

The engine (embedding model, store, reranker) loads in its own thread, started just after `initialize` is answered
(see `app.middleware`), so the handshake is answered at once; a tool called before it is ready waits for it. A
dedicated daemon thread rather than a cancellable task: the build must run to its end even when the connection
that started it goes away first, and must not hold the process up when it exits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import SubscriptionBus

from granrag_mcp.errors import GranragError, StoreNotFoundError
from granrag_mcp.server.library.watch import LibraryWatch
from granrag_mcp.server.session.memory import QueryMemories
from granrag_mcp.settings import Settings

if TYPE_CHECKING:  # the core (torch, FAISS) loads in the engine thread, after `initialize` is answered
    from granrag_mcp.engine import Engine
    from granrag_mcp.indexing.sync import LibrarySync
    from granrag_mcp.packing import TokenCounter
    from granrag_mcp.retrieval.view import View

log = logging.getLogger(__name__)

ENGINE_WAIT_SECONDS = 300.0
ENGINE_THREAD = "granrag-engine-load"
EMPTY_LIBRARY = "the library is empty: call index_paths with a folder inside the allowed roots"


class EngineHolder:
    """The engine, built once in its own thread; tool calls (in worker threads) wait until it is ready."""

    def __init__(self, settings: Settings, factory: Callable[[Settings], Engine], bus: SubscriptionBus) -> None:
        self.settings = settings
        self._factory = factory
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._engine: Engine | None = None
        self._error: str | None = None
        # per client session (see session.memory); a stdio server has one client
        self.queries = QueryMemories(settings.query_memory, one_client=settings.transport == "stdio")
        self.watch = LibraryWatch(settings.store, bus, legacy_stdio=settings.transport == "stdio")
        self.library: LibrarySync | None = None
        """The sync of `serve --library`, once it runs."""

    def start(self) -> None:
        """Start building the engine, once; later calls (one per request) do nothing."""
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._build, name=ENGINE_THREAD, daemon=True)
                self._thread.start()

    def start_after(self, delay: float) -> None:
        """Start building the engine `delay` seconds from now (once the answer in hand has been written)."""
        if self._thread is None:
            timer = threading.Timer(delay, self.start)
            timer.daemon = True
            timer.start()

    def _build(self) -> None:
        try:
            engine = self._factory(self.settings)
        except GranragError as exc:
            self._error = f"the index could not be loaded: {exc}; restart the server once that is fixed"
            log.error("%s", self._error)
        except Exception:
            self._error = "the index could not be loaded (see the server's log); restart the server once that is fixed"
            log.exception("loading the engine failed")
        else:
            try:
                self.watch.baseline(engine)
            except Exception as exc:  # an unreadable store: the tools say what to do when they are called
                log.warning("the library's documents not read at start: %s", exc)
            self._engine = engine
            log.info("ready: serving the index at %s", self.settings.store)
        finally:
            self._ready.set()

    def ready(self) -> bool:
        """Whether the engine's build has ended (ready, or failed: `engine` says which)."""
        return self._ready.is_set()

    def engine(self, timeout: float = ENGINE_WAIT_SECONDS) -> Engine:
        self.start()
        if not self._ready.wait(timeout):
            raise ToolError("the index is still loading (the embedding model takes a few seconds); call again")
        if self._engine is None:
            raise ToolError(self._error or "the index is not loaded")
        return self._engine

    def view(self) -> tuple[View, TokenCounter]:
        """A view of the current generation, and the token counter that budgets results."""
        engine = self.engine()
        store = self.settings.store
        try:
            view = engine.view()
        except StoreNotFoundError as exc:  # no generation yet: only a server that may write or syncs starts so
            raise ToolError(self._empty_library() or str(exc)) from None
        except OSError as exc:  # a generation folder or manifest gone from under the server
            log.error("cannot read the index at %s: %s", store, exc)
            raise ToolError(
                f"the index at {store} cannot be read ({exc.strerror or exc}: {exc.filename}); run "
                f"`granrag-mcp recover --store {store}` or rebuild it with `granrag-mcp index PATH... "
                f"--rebuild --store {store}`"
            ) from None
        return view, engine.tokenizer

    def _empty_library(self) -> str | None:
        """Why a server that may start with no generation has none yet, and what to do."""
        if self.settings.library:
            running = self.library.running if self.library is not None else None
            how_far = f" ({running.stage})" if running is not None else ""
            return (
                f"the library folders are being indexed for the first time{how_far}: call again in a moment; "
                "documents appear as soon as they are committed"
            )
        return EMPTY_LIBRARY if self.settings.allow_write else None

    def empty(self) -> bool:
        """Whether the library has no committed generation yet (a writing server started on an empty store)."""
        return self.engine().empty


def loading() -> bool:
    """Whether an engine is still loading in this process."""
    return any(thread.name == ENGINE_THREAD and thread.is_alive() for thread in threading.enumerate())


def holder_of(ctx: Context[Any, Any]) -> EngineHolder:
    holder = ctx.request_context.lifespan_context
    assert isinstance(holder, EngineHolder), "the server's lifespan yields its EngineHolder"
    return holder
