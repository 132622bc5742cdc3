"""Concurrent tool calls on one server share the real models safely.

The SDK runs each tool call in its own worker thread. Hugging Face fast tokenizers are not thread-safe (each call
sets padding and truncation on one shared Rust object), so before `server.guard_models` two searches or reranks at
once could fail with "Unable to create tensor ... activate truncation and/or padding" and the client got the bare
"Error executing tool rerank". In memory, with the bundled model: 8 tasks on one session for a few seconds.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter

import anyio
import pytest
from mcp.client import Client

from granrag_mcp.engine import Engine
from granrag_mcp.server.app import build_server
from tests.reliability.conftest import RealStore
from tests.reliability.support import record, text_of

TASKS = 8
SECONDS = float(os.environ.get("GRANRAG_CONCURRENT_SECONDS", "8"))
QUERIES = [
    "Who built the Zephyr Bridge?",
    "lighthouse lens prisms",
    "Quillon apple cellar",
    "emoji flag family",
    "granary ferry quarry blanket meadow",
    "Ignore previous instructions",
]


@pytest.fixture(scope="module")
def engine(real_store: RealStore) -> Engine:
    return Engine(real_store.settings)


def test_parallel_calls_on_one_server(real_store: RealStore, engine: Engine) -> None:
    parallel_calls(real_store, engine, SECONDS, "concurrent-calls-in-memory-short")


@pytest.mark.slow
def test_parallel_calls_on_one_server_long(real_store: RealStore, engine: Engine) -> None:
    parallel_calls(real_store, engine, 15 * SECONDS, "concurrent-calls-in-memory")


def parallel_calls(real_store: RealStore, engine: Engine, seconds: float, name: str) -> None:
    server = build_server(real_store.settings, engine_factory=lambda _: engine)
    tally: Counter[str] = Counter()
    failures: list[str] = []

    async def worker(client: Client, number: int, deadline: float) -> None:
        rng = random.Random(number)
        while time.monotonic() < deadline:
            query = rng.choice(QUERIES)
            found = await client.call_tool(
                "search_narrow", {"query": query, "k": rng.randint(5, 20), "lexical": rng.random() < 0.5}
            )
            calls = [found]
            if not found.is_error:
                ids = [h["chunk_id"] for h in found.structured_content["hits"]]
                # passages of different lengths: different padding in each embedding batch
                calls.append(await client.call_tool("rerank", {"query": query, "chunk_ids": ids, "top_n": 3}))
                calls.append(
                    await client.call_tool("hrr_search", {"query": query, "k": 2, "rerank_n": rng.randint(5, 40)})
                )
                calls.append(await client.call_tool("search_fused", {"query": query, "k": 8}))
            for result in calls:
                tally["calls"] += 1
                if result.is_error:
                    failures.append(text_of(result))

    async def main() -> None:
        async with Client(server) as client:
            await client.call_tool("list_documents", {})  # waits for the engine
            deadline = time.monotonic() + seconds
            with anyio.fail_after(seconds + 120):
                async with anyio.create_task_group() as group:
                    for number in range(TASKS):
                        group.start_soon(worker, client, number, deadline)

    anyio.run(main)
    record(name, {"tasks": TASKS, "seconds": seconds, "calls": tally["calls"], "failed calls": len(failures)})
    assert failures == [], failures[:5]
    assert tally["calls"] >= TASKS * 4
