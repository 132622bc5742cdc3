"""Announcing each newly committed generation to clients, whoever committed it: this server's write tools, or
`granrag-mcp index` in another process.

The store's CURRENT pointer is a tiny file: the lifespan polls it every `watch_interval` seconds (a read costs
microseconds, see docs/library.md). When it names a generation not yet announced, the server switches to it at
once (so the next call does not pay for opening it), compares the documents' content hashes with the generation
announced before, and publishes `resources/list_changed` and one `resources/updated` per document added, changed or
removed. Subscribers are `subscriptions/listen` streams (the SDK's bus); a client on a protocol from before those
streams gets the same notifications on its session: over stdio the one client, over HTTP the caller of a write tool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, SubscriptionBus
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from granrag_mcp.errors import GranragError
from granrag_mcp.store.store import CurrentPointer, read_current

if TYPE_CHECKING:
    from granrag_mcp.engine import Engine

log = logging.getLogger(__name__)

UNSEEN = CurrentPointer("", "")


def document_uri(doc_id: str, page: int | None = None) -> str:
    """The resource URI of a document (of one page of it, past the first); `resources` reads them."""
    uri = f"granrag://documents/{quote(doc_id, safe='/')}"
    return uri if page is None or page == 1 else f"{uri}?page={page}"


def chunk_uri(chunk_id: str) -> str:
    """The resource URI of a chunk, by its public id; `resources` reads them."""
    return f"granrag://chunks/{quote(chunk_id, safe='')}"


def _pointer(store: Path) -> CurrentPointer | None:
    try:
        return read_current(store)
    except GranragError as exc:  # damaged or unreadable: the tools report it; keep the last announced state
        log.debug("CURRENT not read: %s", exc)
        return UNSEEN


def _hashes(engine: Engine) -> dict[str, str]:
    if engine.empty:
        return {}
    return engine.view().catalog.content_hashes()


class LibraryWatch:
    """The generation last announced and its documents' hashes; `check` announces anything newer, once."""

    def __init__(self, store: Path, bus: SubscriptionBus, legacy_stdio: bool) -> None:
        self._store = store
        self._bus = bus
        self._legacy_stdio = legacy_stdio
        self._seen: CurrentPointer | None = UNSEEN
        self._hashes: dict[str, str] = {}
        self._lock = anyio.Lock()
        self.legacy_session: ServerSession | None = None
        """The stdio client's session when it speaks a protocol from before `subscriptions/listen`."""

    def baseline(self, engine: Engine) -> None:
        """What clients have seen at start: called once, in the engine's loading thread, before any call."""
        self._seen = _pointer(self._store)
        self._hashes = _hashes(engine)

    async def check(self, engine_of: Callable[[], Engine], caller: ServerSession | None = None) -> list[str]:
        """Announce the current generation if it is new; return the doc_ids announced as updated. `caller`: the
        session of a write tool's caller on an older protocol, told as well."""
        async with self._lock:
            if await anyio.to_thread.run_sync(_pointer, self._store) in (self._seen, UNSEEN):
                return []  # the common case: one small read, no engine
            engine = await anyio.to_thread.run_sync(engine_of)  # waits for the load, which sets the baseline
            pointer = await anyio.to_thread.run_sync(_pointer, self._store)
            if pointer in (self._seen, UNSEEN):
                return []
            hashes = await anyio.to_thread.run_sync(_hashes, engine)  # opens (switches to) the new generation
            changed = sorted(d for d in hashes.keys() | self._hashes.keys() if hashes.get(d) != self._hashes.get(d))
            self._seen, self._hashes = pointer, hashes
        log.info(
            "generation %s committed: %d document(s) changed", pointer.generation if pointer else "-", len(changed)
        )
        await self._publish(changed, caller)
        return changed

    async def _publish(self, doc_ids: Sequence[str], caller: ServerSession | None) -> None:
        await self._bus.publish(ResourcesListChanged())
        for doc_id in doc_ids:
            await self._bus.publish(ResourceUpdated(uri=document_uri(doc_id)))
        sessions = {id(s): s for s in (self.legacy_session, caller) if s is not None}
        for session in sessions.values():
            try:
                await session.send_resource_list_changed()
                for doc_id in doc_ids:
                    await session.send_resource_updated(document_uri(doc_id))
            except Exception as exc:  # a client gone or not listening: nothing to tell
                log.debug("resource change notifications not sent: %s", exc)
                if session is self.legacy_session:
                    self.legacy_session = None

    def remember_legacy_stdio_client(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Keep the stdio client's session when its protocol predates `subscriptions/listen`, so commits by another
        process reach it too; decided once per session (the server's middleware calls it for every request)."""
        if self._legacy_stdio and self.legacy_session is None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.legacy_session = ctx.session

    async def poll(self, engine_of: Callable[[], Engine], interval: float) -> None:
        """Check every `interval` seconds until cancelled (the lifespan's end)."""
        while True:
            await anyio.sleep(interval)
            try:
                await self.check(engine_of)
            except Exception as exc:  # the engine failed to load, the store is unreadable: the tools say so
                log.debug("library watch: %s", exc)
