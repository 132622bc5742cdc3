"""`serve --library DIR...`: the library sync (indexing/sync.py) run beside the server, each generation it commits
served and announced at once, as any generation is (watch.py).

The sync runs in its own daemon thread, so a run never holds up the event loop and the process may exit in the
middle of one (the store keeps its last committed generation). It shares the engine's embedding model, which it
asks for only when there is something to embed.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.lowlevel

from granrag_mcp.errors import GranragError

if TYPE_CHECKING:
    from granrag_mcp.indexing.sync import SyncPass
    from granrag_mcp.server.library.state import EngineHolder

log = logging.getLogger(__name__)

SYNC_THREAD = "granrag-library-sync"


async def keep_library_in_step(holder: EngineHolder) -> None:
    """Run the library sync until cancelled (the lifespan's end); a commit is announced at once."""
    from granrag_mcp.indexing.sync import LibrarySync  # the indexing pipeline only for a server with a library

    stop = threading.Event()
    token = anyio.lowlevel.current_token()
    sync = LibrarySync(holder.settings, lambda: holder.engine().embedder, stop)
    holder.library = sync

    def announce(result: SyncPass) -> None:
        if result.committed:
            try:
                anyio.from_thread.run(holder.watch.check, holder.engine, token=token)
            except Exception as exc:  # the loop is closing, or nobody listens: the poll tells the rest
                log.debug("library sync: generation not announced: %s", exc)

    def target() -> None:
        try:
            sync.run(announce)
        except GranragError as exc:  # the store does not fit the settings, for one: the tools still serve it
            log.error("library sync stopped: %s", exc)
        except Exception:
            log.exception("library sync stopped; the store keeps its last generation")

    thread = threading.Thread(target=target, name=SYNC_THREAD, daemon=True)
    thread.start()
    try:
        await anyio.sleep_forever()
    finally:
        stop.set()
