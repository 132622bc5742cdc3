"""search_fused reaches its fusion method through the registry: a method registered there is offered by the tool,
described, called with the caller's arguments, and its weights reported."""

from __future__ import annotations

import pytest
from mcp.client import Client

from granrag_mcp.levels import TOP
from granrag_mcp.retrieval import fusion_methods
from granrag_mcp.retrieval.fusion import FusionRequest, FusionUsed
from granrag_mcp.retrieval.view import ScoredChunk, View
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import call, fake_engine, fake_settings, run, write_corpus


class TopDenseOnly:
    """A made-up method: the top level's dense list alone, remembering what it was asked."""

    SUMMARY = "the top level's dense list alone"

    def __init__(self) -> None:
        self.requests: list[tuple[str, int, FusionRequest]] = []

    def search(self, view: View, query: str, depth: int, request: FusionRequest) -> list[ScoredChunk]:
        self.requests.append((query, depth, request))
        return view.scored_chunks(view.dense(TOP, view.query_vector(query), depth))

    def used(self, view: View, depth: int, request: FusionRequest) -> FusionUsed:
        return FusionUsed({"broad_dense": 1.0}, {"broad_dense": depth}, 60)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, FakeEmbedder]:
    root = tmp_path_factory.mktemp("fusion-methods")
    settings, embedder = fake_settings(root / "store"), FakeEmbedder(dimension=256)
    fake_index([write_corpus(root / "corpus")], settings, embedder)
    return settings, embedder


def test_a_registered_fusion_method_is_offered_and_called_by_search_fused(
    built: tuple[Settings, FakeEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    method = TopDenseOnly()
    monkeypatch.setitem(fusion_methods.FUSION_METHODS, "top_dense", method)
    settings, embedder = built
    engine = fake_engine(settings, embedder)
    server = build_server(settings, engine_factory=lambda _: engine)
    arguments = {"query": "When was the Zephyr Bridge completed?", "k": 3, "method": "top_dense", "rrf_k": 7}

    async def scenario(client: Client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        return tools["search_fused"].input_schema["properties"]["method"], await call(client, "search_fused", arguments)

    schema, result = run(server, scenario)
    assert schema["enum"] == [*fusion_methods.FUSION_METHODS] and "top_dense" in schema["enum"]
    assert "top_dense: the top level's dense list alone" in schema["description"]
    query, depth, request = method.requests[0]
    assert query == arguments["query"] and depth >= 3 and request.rrf_k == 7 and request.level == "mid"
    expected = engine.view().dense(TOP, engine.view().query_vector(query), 3)
    assert [h["chunk_id"] for h in result["hits"]] == [f"{TOP}:{chunk_id}" for chunk_id, _ in expected]
    assert result["weights"] == {"broad_dense": 1.0} and result["depths"] == {"broad_dense": depth}
    assert result["rrf_k"] == 60


def test_an_unregistered_method_is_refused_with_the_registered_names(built: tuple[Settings, FakeEmbedder]) -> None:
    settings, embedder = built
    engine = fake_engine(settings, embedder)
    server = build_server(settings, engine_factory=lambda _: engine)

    async def scenario(client: Client):
        return await client.call_tool("search_fused", {"query": "bridge", "method": "top_dense"})

    result = run(server, scenario)
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert result.is_error and all(name in text for name in fusion_methods.FUSION_METHODS)


def test_each_registered_method_searches_and_names_its_weights(built: tuple[Settings, FakeEmbedder]) -> None:
    settings, embedder = built
    view = fake_engine(settings, embedder).view()
    request = FusionRequest()
    for name, method in fusion_methods.FUSION_METHODS.items():
        hits = method.search(view, "Zephyr Bridge", 5, request)
        assert hits and all(isinstance(h, ScoredChunk) for h in hits), name
        used = method.used(view, 5, request)
        assert used is None or all(h.sources.keys() <= used.weights.keys() <= used.depths.keys() for h in hits), name
    assert fusion_methods.DEFAULT_FUSION_METHOD in fusion_methods.FUSION_METHODS
