"""diversify, exclude_seen and similar_previous through the MCP client: the tools' arguments, the session memory
(one per connection, isolated, freed with it) and the result fields."""

from __future__ import annotations

import gc

import anyio
import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import call, fail, fake_engine, fake_settings, run, write_corpus

QUESTION = "When was the Zephyr Bridge completed?"
SEARCHES = ("search_broad", "search_narrow", "search_fused")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("session-search")
    embedder = FakeEmbedder(dimension=256)
    settings = fake_settings(root / "store")
    fake_index([write_corpus(root / "corpus")], settings, embedder)
    return settings, fake_engine(settings, embedder)


def served(built, **updates):
    """A server (with its own session memories) over the shared store and engine."""
    settings, engine = built
    return build_server(settings.model_copy(update=updates), engine_factory=lambda _: engine)


def test_a_repeated_query_lists_the_earlier_one_with_its_ids(built) -> None:
    server = served(built)

    async def scenario(client: Client):
        first = await call(client, "search_narrow", {"query": QUESTION, "k": 3})
        again = await call(client, "search_narrow", {"query": QUESTION.lower() + " ", "k": 3})
        other = await call(client, "search_narrow", {"query": "lighthouse lens prisms", "k": 3})
        return first, again, other

    first, again, other = run(server, scenario)
    assert "similar_previous" not in first and first["seen_dropped"] == 0
    [previous] = again["similar_previous"]
    assert previous["query"] == QUESTION
    assert previous["similarity"] >= 0.92
    assert previous["chunk_ids"] == [h["chunk_id"] for h in first["hits"]]
    assert previous["generation"] == first["generation"]
    assert all(p["query"] != "lighthouse lens prisms" for p in other.get("similar_previous", []))
    assert {p["query"] for p in other.get("similar_previous", [])} <= {QUESTION, QUESTION.lower() + " "}


def test_the_threshold_is_a_setting(built) -> None:
    server = served(built, similar_query_threshold=0.0)

    async def scenario(client: Client):
        await call(client, "search_narrow", {"query": QUESTION})
        return await call(client, "search_broad", {"query": "apples in a cellar"})

    assert [p["query"] for p in run(server, scenario)["similar_previous"]] == [QUESTION]


@pytest.mark.parametrize("tool", SEARCHES)
def test_exclude_seen_drops_the_ids_already_received_and_counts_them(built, tool: str) -> None:
    server = served(built)

    async def scenario(client: Client):
        first = await call(client, tool, {"query": QUESTION, "k": 3})
        second = await call(client, tool, {"query": QUESTION, "k": 3, "exclude_seen": True})
        third = await call(client, tool, {"query": QUESTION, "k": 3})
        return first, second, third

    first, second, third = run(server, scenario)
    seen = {h["chunk_id"] for h in first["hits"]}
    assert second["hits"] and not seen & {h["chunk_id"] for h in second["hits"]}
    assert second["seen_dropped"] >= 1
    assert third["seen_dropped"] == 0 and seen & {h["chunk_id"] for h in third["hits"]}


@pytest.mark.parametrize("tool", SEARCHES)
def test_diversify_arguments_on_every_search_tool(built, tool: str) -> None:
    server = served(built)

    async def scenario(client: Client):
        plain = await call(client, tool, {"query": "lighthouse beam", "k": 8})
        mmr = await call(client, tool, {"query": "lighthouse beam", "k": 8, "diversify": "mmr", "mmr_lambda": 0.3})
        kmeans = await call(client, tool, {"query": "lighthouse beam", "k": 8, "diversify": "kmeans"})
        text = (await client.call_tool(tool, {"query": "lighthouse beam", "k": 8, "diversify": "kmeans"})).content[0]
        return plain, mmr, kmeans, text.text

    plain, mmr, kmeans, text = run(server, scenario)
    assert mmr["hits"] and mmr["hits"][0]["chunk_id"] == plain["hits"][0]["chunk_id"]
    assert 1 <= len(kmeans["hits"]) <= 5
    assert any(h.get("cluster") for h in kmeans["hits"])  # a hit alone in its cluster carries no cluster field
    assert all("cluster" not in h for h in plain["hits"])
    assert "cluster of" in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"mmr_lambda": 1.5}, "mmr_lambda"),
        ({"mmr_lambda": -0.1}, "mmr_lambda"),
        ({"diversify": "clusters"}, "diversify"),
    ],
)
def test_bad_diversify_arguments_are_refused_clearly(built, arguments, message) -> None:
    server = served(built)

    async def scenario(client: Client):
        return await fail(client, "search_narrow", {"query": QUESTION, **arguments})

    assert message in run(server, scenario)


def test_two_connections_never_see_each_others_queries_and_memory_goes_with_the_connection(built) -> None:
    # Handshake-era connections over HTTP-like transport settings: one memory per connection.
    server = served(built, transport="http")
    memories = []

    async def main():
        async with Client(server, mode="legacy") as alice, Client(server, mode="legacy") as bob:
            await call(alice, "search_narrow", {"query": QUESTION})
            seen_by_bob = await call(bob, "search_narrow", {"query": QUESTION})
            again = await call(alice, "search_narrow", {"query": QUESTION, "exclude_seen": True})
            bob_again = await call(bob, "search_narrow", {"query": QUESTION})
            memories.append(len(holder.queries))
            return seen_by_bob, again, bob_again

    holder = holder_of_server(server)
    seen_by_bob, again, bob_again = anyio.run(main)
    assert "similar_previous" not in seen_by_bob
    assert [p["query"] for p in again["similar_previous"]] == [QUESTION]
    assert again["seen_dropped"] >= 1
    assert len(bob_again["similar_previous"]) == 1
    assert memories == [2]
    gc.collect()
    assert len(holder.queries) == 0


def test_a_stateless_request_continues_a_history_by_its_handle_and_stdio_has_one_for_the_process(built) -> None:
    http = served(built, transport="http")
    stdio = served(built, transport="stdio")

    async def twice(client: Client, pass_handle: bool):
        first = await call(client, "search_narrow", {"query": QUESTION})
        handle = {"memory": first["memory"]} if pass_handle else {}
        return first, await call(client, "search_narrow", {"query": QUESTION, "exclude_seen": True, **handle})

    # The SDK client speaks the 2026 protocol to this server: no session, so only the handle ties the two.
    first, unlinked = run(http, lambda client: twice(client, False))
    assert "similar_previous" not in unlinked and unlinked["seen_dropped"] == 0
    assert unlinked["memory"] != first["memory"]
    first, linked = run(http, lambda client: twice(client, True))
    assert [p["query"] for p in linked["similar_previous"]] == [QUESTION] and linked["seen_dropped"] >= 1
    assert linked["memory"] == first["memory"]
    first, one_client = run(stdio, lambda client: twice(client, False))
    assert len(one_client["similar_previous"]) == 1 and one_client["seen_dropped"] >= 1
    assert one_client["memory"] == first["memory"]


def test_query_memory_zero_turns_the_memory_off(built) -> None:
    server = served(built, query_memory=0)

    async def scenario(client: Client):
        await call(client, "search_narrow", {"query": QUESTION})
        return await call(client, "search_narrow", {"query": QUESTION, "exclude_seen": True})

    result = run(server, scenario)
    assert "similar_previous" not in result and result["seen_dropped"] == 0 and "memory" not in result


def holder_of_server(server):
    """The EngineHolder the server's lifespan yields (entered here once; the holder is the same object)."""

    async def enter():
        async with server.settings.lifespan(server) as holder:
            return holder

    return anyio.run(enter)
