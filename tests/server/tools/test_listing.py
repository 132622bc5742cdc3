"""The tool list the model sees: every tool read-only, with bounded arguments and budgets from the settings."""

from __future__ import annotations

import anyio
from mcp.client import Client

from granrag_mcp.server.app import build_server
from tests.server.test_app import GRAPH_TOOLS, TOOLS, run


def test_tools_are_listed_read_only_with_schemas(server) -> None:
    async def scenario(client: Client):
        return (await client.list_tools()).tools

    tools = run(server, scenario)
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.open_world_hint is False
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert len(tool.description) > 80
        properties = tool.input_schema["properties"]
        if "max_tokens" in properties:
            assert (properties["max_tokens"]["minimum"], properties["max_tokens"]["maximum"]) == (50, 100_000)
            assert properties["max_tokens"]["default"] == 4000
        if "query" in properties:
            assert (properties["query"]["minLength"], properties["query"]["maxLength"]) == (1, 4000)
        if "chunk_ids" in properties:
            assert (properties["chunk_ids"]["minItems"], properties["chunk_ids"]["maxItems"]) == (1, 100)
        if "k" in properties and tool.name not in GRAPH_TOOLS:
            assert properties["k"]["maximum"] == 100
    assert {t.name for t in tools if "max_tokens" in t.input_schema["properties"]} == TOOLS - {
        "list_documents",
        "find_concepts",
        "page_image",  # returns images, bounded by max_pixels, and no document text
    }


def test_max_tokens_default_follows_the_settings(built) -> None:
    settings = built[0].model_copy(update={"max_tokens": 777})
    tools = anyio.run(build_server(settings).list_tools)
    assert {
        t.input_schema["properties"]["max_tokens"]["default"]
        for t in tools
        if t.name not in ("list_documents", "find_concepts", "page_image")
    } == {777}
