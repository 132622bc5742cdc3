"""What a search result carries besides its JSON: readable text, then a resource link to each hit's chunk that
reads back as that chunk; and the JSON leaves out optional fields that hold nothing yet validates."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mcp.client import Client
from mcp_types import ResourceLink, TextContent

from granrag_mcp.server.app import build_server
from granrag_mcp.server.tools.presenting import links_allowed
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import call, fake_engine, fake_settings, run, write_corpus

QUESTION = "When was the Zephyr Bridge completed?"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("presenting")
    embedder = FakeEmbedder(dimension=256)
    settings = fake_settings(root / "store")
    fake_index([write_corpus(root / "corpus")], settings, embedder)
    return settings, fake_engine(settings, embedder)


@pytest.fixture
def server(built):
    """A server of its own (its query memory starts empty) over the shared store and engine."""
    settings, engine = built
    return build_server(settings, engine_factory=lambda _: engine)


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 and the 2025-11-25 handshake
def test_each_hit_is_linked_to_its_chunk_resource_which_reads_back_as_the_chunk(server, mode: str) -> None:
    async def scenario(client: Client):
        result = await client.call_tool("search_narrow", {"query": QUESTION, "k": 4})
        links = [block for block in result.content if isinstance(block, ResourceLink)]
        texts = [(await client.read_resource(str(link.uri))).contents[0] for link in links]
        return result, links, texts

    result, links, texts = run(server, scenario, mode=mode)
    hits = result.structured_content["hits"]
    assert isinstance(result.content[0], TextContent) and len(result.content) == len(hits) + 1
    assert [link.name for link in links] == [h["chunk_id"] for h in hits]
    assert all(link.mime_type == "text/plain" for link in links)
    assert [getattr(t, "text", None) for t in texts] == [h["text"] for h in hits]


def test_protocols_before_resource_links_get_none() -> None:
    def ctx(version: str) -> SimpleNamespace:
        return SimpleNamespace(request_context=SimpleNamespace(protocol_version=version))

    assert links_allowed(ctx("2025-06-18")) and links_allowed(ctx("2026-07-28"))
    assert not links_allowed(ctx("2025-03-26")) and not links_allowed(None)


def test_hits_leave_out_what_holds_nothing_and_still_validate(server) -> None:
    async def scenario(client: Client):
        broad = await call(client, "search_broad", {"query": QUESTION, "k": 3})
        fused = await call(client, "search_fused", {"query": QUESTION, "k": 3})
        return broad, fused

    broad, fused = run(server, scenario)  # `call` validates each against the tool's output schema
    for hit in broad["hits"]:
        assert "parent_id" not in hit and not {"evidence", "cluster", "folded"} & set(hit)
        assert all(value not in (None, [], {}) for value in hit.values())
    assert all(hit["sources"] and hit["parent_id"] for hit in fused["hits"] if hit["level"] != "broad")
    assert "similar_previous" not in broad and fused["similar_previous"]


def test_a_tool_declares_its_result_model_with_the_same_schema_and_takes_its_dump_as_it_is() -> None:
    from pydantic import TypeAdapter

    from granrag_mcp.server.schemas.results import SessionSearchResult
    from granrag_mcp.server.tools.presenting import dumped

    declared = TypeAdapter(dumped(SessionSearchResult))
    assert declared.json_schema() == TypeAdapter(SessionSearchResult).json_schema()
    dump = SessionSearchResult(generation=3, tokens_used=0, omitted=0, hits=[]).model_dump(mode="json")
    assert declared.validate_python(dump) is dump  # the SDK's check of every answer: the dump, not rebuilt
    assert dumped(SessionSearchResult) is dumped(SessionSearchResult)
