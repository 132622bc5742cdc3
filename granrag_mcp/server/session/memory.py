"""A memory of each client session's recent searches: query text, query vector and the chunk ids returned.

It lets a search tell the agent which earlier queries of the same session were nearly the same (so it can reuse
their answer instead of searching again) and drop chunk ids the session already received. Nothing is written to
disk, each session holds at most `capacity` queries, and the memory of a session goes with its connection.

Every memory has a handle the server mints (random, so it cannot be guessed): search results return it as
`memory`, and a search given it back as its `memory` argument uses that memory, whatever the transport. It is how
a client keeps its search history where the protocol has no session, and it outlives nothing: handles go with
their memory (least recently used first beyond `max_sessions`). Without a handle, the session decides:

- stdio: the process serves exactly one client, so the process is the session, whatever protocol era the client
  speaks; the memory goes with the process.
- streamable HTTP, handshake era (``initialize``, ``Mcp-Session-Id``): the session is the client connection. The
  SDK gives a tool no public handle on the connection, but the client's `initialize` parameters
  (``ctx.session.client_params``) are one object per connection that lives as long as it: that object's identity
  is the key, and a finalizer on it frees the session's memory when the connection is dropped (DELETE, idle
  timeout, crash). Two HTTP clients are two connections, so they never see each other's queries.
- streamable HTTP, 2026 era: the protocol is stateless (no session), so a request without a handle starts a new
  memory and gets its handle back.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:  # the server answers `initialize` before the core (numpy, torch, FAISS) loads
    import numpy as np

    from granrag_mcp.retrieval.view import ScoredChunk

DEFAULT_CAPACITY = 256
DEFAULT_THRESHOLD = 0.92
MAX_SIMILAR_LISTED = 3  # each entry carries up to 100 ids: a few are enough to decide whether to search again
MAX_SESSIONS = 1024  # a safety net for connections the runtime keeps alive: the least recently used one goes


@dataclass(frozen=True, slots=True)
class Remembered:
    query: str
    chunk_ids: tuple[str, ...]
    generation: int


@dataclass(frozen=True, slots=True)
class Similar:
    previous: Remembered
    similarity: float


class SessionMemory:
    """The recent searches of one session, newest last, and how often each chunk id was returned.

    The query vectors live in one matrix, a ring of `capacity` rows grown as queries come, so that comparing a
    query with every remembered one is one product rather than a stack of them all per search.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self.handle = secrets.token_urlsafe(12)
        self._queries: deque[Remembered] = deque()
        self._vectors: np.ndarray | None = None  # row (oldest + i) % capacity holds the vector of _queries[i]
        self._oldest = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()  # one session may run tool calls in parallel worker threads

    def __len__(self) -> int:
        return len(self._queries)

    def similar(self, vector: np.ndarray, threshold: float, limit: int = MAX_SIMILAR_LISTED) -> list[Similar]:
        """Earlier queries at cosine >= threshold to `vector` (unit vectors), most similar first."""
        import numpy as np

        with self._lock:
            queries = list(self._queries)
            if not queries or self._vectors is None:
                return []
            by_row = self._vectors[: len(queries)] @ np.asarray(vector, dtype=np.float32)
            oldest = self._oldest
        scores = by_row[(oldest + np.arange(len(queries))) % len(queries)] if oldest else by_row
        close = np.flatnonzero(scores >= threshold)
        order = close[np.argsort(-scores[close], kind="stable")][:limit]
        return [Similar(queries[i], float(min(scores[i], 1.0))) for i in order.tolist()]

    def seen(self, chunk_id: str) -> bool:
        with self._lock:
            return self._seen[chunk_id] > 0

    def unseen(self, hits: Sequence[ScoredChunk]) -> tuple[list[ScoredChunk], int]:
        """The hits whose chunk id this session has not received yet, and how many were dropped."""
        with self._lock:
            kept = [hit for hit in hits if self._seen[hit.chunk.public_id] <= 0]
        return kept, len(hits) - len(kept)

    def record(self, query: str, vector: np.ndarray, chunk_ids: Iterable[str], generation: int) -> None:
        import numpy as np

        if self.capacity <= 0:
            return
        entry = Remembered(query, tuple(chunk_ids), generation)
        row = np.asarray(vector, dtype=np.float32)
        with self._lock:
            if len(self._queries) == self.capacity:  # full: the oldest query's row and ids make room
                old = self._queries.popleft()
                slot = self._oldest
                self._oldest = (self._oldest + 1) % self.capacity
                for chunk_id in old.chunk_ids:
                    left = self._seen[chunk_id] - 1
                    if left > 0:
                        self._seen[chunk_id] = left
                    else:
                        self._seen.pop(chunk_id, None)
            else:
                slot = len(self._queries)
            self._vectors = _with_row(self._vectors, slot, row, self.capacity)
            self._queries.append(entry)
            self._seen.update(entry.chunk_ids)


def _with_row(matrix: np.ndarray | None, slot: int, row: np.ndarray, capacity: int) -> np.ndarray:
    """`matrix` with `row` at `slot`, grown (doubling, at most `capacity` rows) when the slot lies beyond it."""
    import numpy as np

    if matrix is None:
        matrix = np.empty((min(16, capacity), row.shape[0]), dtype=np.float32)
    elif slot >= matrix.shape[0]:
        grown = np.empty((min(2 * matrix.shape[0], capacity), matrix.shape[1]), dtype=np.float32)
        grown[: matrix.shape[0]] = matrix
        matrix = grown
    matrix[slot] = row
    return matrix


class QueryMemories:
    """The memory of every live session, by its handle and by its connection's identity."""

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY, max_sessions: int = MAX_SESSIONS, one_client: bool = False
    ) -> None:
        self.capacity = capacity
        self.one_client = one_client  # stdio: every request comes from the one client of this process
        self.max_sessions = max_sessions
        self._by_handle: dict[str, SessionMemory] = {}  # the memories themselves; the dict's order is recency
        self._by_marker: dict[int, str] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_handle)

    def of(self, ctx: Any, handle: str | None = None) -> SessionMemory | None:
        """The memory the handle names, else that of the session `ctx` (a tool's Context) belongs to, else a new
        one; None when the memory is off (capacity 0)."""
        if self.capacity <= 0:
            return None
        if handle is not None:
            with self._lock:
                memory = self._by_handle.pop(handle, None)
                if memory is not None:
                    self._by_handle[handle] = memory
                    return memory
        marker = self.marker_of(ctx)
        if marker is None:
            memory = SessionMemory(self.capacity)
            with self._lock:
                self._keep(memory)
            return memory
        return self.of_marker(marker)

    def marker_of(self, ctx: Any) -> object | None:
        if self.one_client:
            return self
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None  # stateless by protocol: nothing ties two requests to one client
        return ctx.session.client_params  # one object per connection, alive as long as the connection

    def of_marker(self, marker: object) -> SessionMemory:
        key = id(marker)
        with self._lock:
            handle = self._by_marker.get(key)
            memory = self._by_handle.pop(handle, None) if handle is not None else None
            if memory is None:
                memory = SessionMemory(self.capacity)
                self._by_marker[key] = memory.handle
                # Runs when the connection's objects are freed; dict.pop is atomic, so it needs no lock (it may
                # run in any thread, even one holding this lock). The id cannot be reused before it runs.
                weakref.finalize(marker, self._forget, key, memory.handle)
            self._keep(memory)
        return memory

    def _keep(self, memory: SessionMemory) -> None:
        """Store `memory` as the most recently used (the caller holds the lock)."""
        self._by_handle[memory.handle] = memory
        while len(self._by_handle) > self.max_sessions:
            self._by_handle.pop(next(iter(self._by_handle)), None)

    def _forget(self, key: int, handle: str) -> None:
        self._by_marker.pop(key, None)
        self._by_handle.pop(handle, None)
