"""The session memory over streamable HTTP with the bundled model: two handshake-era clients of one server never see
each other's queries, and a closed session's memory goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp.client import Client

from tests.server.transport.test_http import Running, real_store_server, run

QUESTION = "Who built the Zephyr Bridge?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with real_store_server(tmp_path_factory.mktemp("session-http")) as running:
        yield running


async def search(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("search_narrow", {"query": QUESTION, "k": 3, **arguments})
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


def test_two_http_sessions_are_isolated(server: Running) -> None:
    async def scenario():
        async with Client(server.url, mode="legacy") as alice, Client(server.url, mode="legacy") as bob:
            first = await search(alice)
            bobs_first = await search(bob)
            alice_again = await search(alice, exclude_seen=True)
            return first, bobs_first, alice_again

    first, bobs_first, alice_again = run(scenario)
    assert "Zephyr Bridge" in first["hits"][0]["text"]
    assert "similar_previous" not in bobs_first and bobs_first["seen_dropped"] == 0
    [previous] = alice_again["similar_previous"]
    assert previous["query"] == QUESTION and previous["similarity"] > 0.99
    assert previous["chunk_ids"] == [h["chunk_id"] for h in first["hits"]]
    assert alice_again["seen_dropped"] >= 1
    assert not {h["chunk_id"] for h in alice_again["hits"]} & set(previous["chunk_ids"])


def test_a_new_session_starts_empty(server: Running) -> None:
    async def scenario():
        async with Client(server.url, mode="legacy") as client:
            return await search(client, exclude_seen=True)

    run(scenario)
    result = run(scenario)  # the previous session ended with its client
    assert "similar_previous" not in result and result["seen_dropped"] == 0
