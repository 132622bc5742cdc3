"""The session memory on its own: bounded, similar queries by cosine, seen ids, sessions freed with their marker."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import numpy as np

from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.view import ScoredChunk
from granrag_mcp.server.session.memory import QueryMemories, SessionMemory


class Marker:
    """Stands for a connection's client parameters: any object that can be weakly referenced."""


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def hit(chunk_id: int) -> ScoredChunk:
    return ScoredChunk(Chunk(chunk_id, "d", "narrow", 0, 0, 1, 1, None, "x"), 1.0)


def test_similar_lists_close_queries_most_similar_first_with_their_ids() -> None:
    memory = SessionMemory()
    memory.record("a", unit(1, 0, 0), ["narrow:1", "narrow:2"], 3)
    memory.record("b", unit(1, 0.2, 0), ["narrow:3"], 3)
    memory.record("c", unit(0, 1, 0), ["narrow:4"], 3)
    found = memory.similar(unit(1, 0.1, 0), threshold=0.92)
    assert [s.previous.query for s in found] == ["b", "a"] or [s.previous.query for s in found] == ["a", "b"]
    assert all(s.similarity >= 0.92 for s in found)
    assert found[0].similarity >= found[1].similarity
    assert {s.previous.chunk_ids for s in found} == {("narrow:1", "narrow:2"), ("narrow:3",)}
    assert memory.similar(unit(0, 0, 1), threshold=0.92) == []


def test_the_memory_is_bounded_and_forgets_the_ids_of_forgotten_queries() -> None:
    memory = SessionMemory(capacity=2)
    memory.record("a", unit(1, 0), ["narrow:1"], 1)
    memory.record("b", unit(0, 1), ["narrow:2", "narrow:1"], 1)
    memory.record("c", unit(1, 1), ["narrow:3"], 1)
    assert len(memory) == 2
    assert memory.similar(unit(1, 0), threshold=0.99) == []  # "a" was forgotten
    assert memory.seen("narrow:1") and memory.seen("narrow:2") and memory.seen("narrow:3")
    memory.record("d", unit(1, 1), [], 1)
    assert not memory.seen("narrow:1") and not memory.seen("narrow:2") and memory.seen("narrow:3")
    kept, dropped = memory.unseen([hit(1), hit(3), hit(4)])
    assert [h.chunk.id for h in kept] == [1, 4] and dropped == 1


def test_each_marker_has_its_own_memory_freed_with_it() -> None:
    memories = QueryMemories()
    alice, bob = Marker(), Marker()
    memories.of_marker(alice).record("q", unit(1, 0), ["mid:1"], 1)
    assert memories.of_marker(alice).seen("mid:1")
    assert not memories.of_marker(bob).seen("mid:1")
    assert len(memories) == 2
    del alice
    gc.collect()
    assert len(memories) == 1


def test_the_least_recently_used_session_goes_beyond_the_session_limit() -> None:
    memories = QueryMemories(max_sessions=2)
    markers = [Marker() for _ in range(3)]
    memories.of_marker(markers[0]).record("q", unit(1, 0), ["mid:1"], 1)
    memories.of_marker(markers[1])
    memories.of_marker(markers[0])  # used again: markers[1] is now the least recently used
    memories.of_marker(markers[2])
    assert len(memories) == 2
    assert memories.of_marker(markers[0]).seen("mid:1")


def test_without_a_session_each_request_gets_a_new_memory_and_its_handle_brings_it_back() -> None:
    memories = QueryMemories()
    modern = SimpleNamespace(protocol_version="2026-07-28", session=SimpleNamespace(client_params=object()))
    first, second = memories.of(modern), memories.of(modern)
    assert first is not None and second is not None and first is not second
    assert first.handle != second.handle and len(first.handle) >= 16
    assert memories.of(modern, first.handle) is first
    fresh = memories.of(modern, "not-a-handle-this-server-minted")
    assert fresh is not None and fresh not in (first, second)  # an unknown handle is never adopted as given
    assert QueryMemories(capacity=0, one_client=True).of(modern) is None
    stdio = QueryMemories(one_client=True)
    anonymous = SimpleNamespace(protocol_version="2025-06-18", session=SimpleNamespace(client_params=None))
    assert stdio.of(modern) is stdio.of(anonymous)


def test_a_sessions_handle_names_the_sessions_memory_and_goes_with_it() -> None:
    memories = QueryMemories()
    marker = Marker()
    legacy = SimpleNamespace(protocol_version="2025-11-25", session=SimpleNamespace(client_params=marker))
    memory = memories.of(legacy)
    assert memory is not None and memories.of(legacy) is memory
    stateless = SimpleNamespace(protocol_version="2026-07-28", session=SimpleNamespace(client_params=None))
    assert memories.of(stateless, memory.handle) is memory
    handle = memory.handle
    del marker, legacy, memory
    gc.collect()
    assert len(memories) == 0 and memories.of(stateless, handle).handle != handle


def test_similar_compares_with_exactly_the_remembered_queries_as_the_memory_grows_and_wraps() -> None:
    capacity = 40  # beyond the first block of rows, so the vectors' matrix grows, then wraps around
    memory = SessionMemory(capacity=capacity)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3 * capacity, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for number, vector in enumerate(vectors):
        memory.record(f"q{number}", vector, [f"narrow:{number}"], 1)
        remembered = range(max(0, number + 1 - capacity), number + 1)
        probe = vectors[remembered[0]]  # the oldest still remembered: found, as itself
        assert memory.similar(probe, threshold=0.999)[0].previous.query == f"q{remembered[0]}"
        if number >= capacity:  # the one just forgotten: neither it nor its ids remain
            assert all(
                s.previous.query != f"q{number - capacity}"
                for s in memory.similar(vectors[number - capacity], 0.0, limit=capacity)
            )
            assert not memory.seen(f"narrow:{number - capacity}")
    assert len(memory) == capacity
