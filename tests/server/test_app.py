"""The server end to end in one process: its errors, its engine loading in the background, new generations and
its start-up checks; and the helpers every tool test uses (an in-memory client, a store built with the fake
embedder, see `conftest.py`). Each tool group's own tests are in tests/server/tools/."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client import Client
from mcp_types import CallToolResult

from granrag_mcp.cli import main as cli_main
from granrag_mcp.engine import Engine
from granrag_mcp.errors import ModelLoadError, StoreMismatchError, StoreNotFoundError
from granrag_mcp.rerankers import SentenceWindowReranker
from granrag_mcp.server.app import build_server, check_store
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index

TOOLS = {
    "search_broad",
    "search_narrow",
    "search_fused",
    "expand_window",
    "get_parent",
    "rerank",
    "hrr_search",
    "list_documents",
    "get_chunks",
    "document_outline",
    "get_section",
    "page_image",
}
GRAPH_TOOLS = {"find_concepts", "concept_neighbourhood", "concept_paths", "evidence_chain", "graph_search"}
TOOLS |= GRAPH_TOOLS
SMALL_CHUNKS = {"broad_tokens": 256, "broad_overlap": 32, "mid_tokens": 64}
FAKE_MODEL = "fake-hash-embedder"

# --- a small corpus with known facts -------------------------------------------------------------------------------

FACTS = {
    "bridge": "The Zephyr Bridge over the Calder was completed in 1931 by the engineer Ada Moreau.",
    "lighthouse": "The Harrow Point lighthouse focuses its beam through a lens of 88 glass prisms.",
    "apple": "The Quillon apple ripens in late September and keeps until March in a cool cellar.",
    "late": "A second lighthouse keeper named Osric Vane joined the Harrow Point crew in 1954.",
}
_FILLER = (
    "market lantern harvest copper window meadow valley ledger sparrow timber orchard basket candle wagon "
    "pepper kettle thimble mirror saddle garden cobble ribbon quarry ferry hollow granary blanket"
).split()


def _filler_paragraph(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        chosen = [rng.choice(_FILLER) for _ in range(rng.randint(9, 16))]
        out.append(" ".join(chosen).capitalize() + ".")
    return " ".join(out)


def write_corpus(folder: Path, seed: int = 7) -> Path:
    """Three documents, each long enough for several broad chunks at 256 tokens; one fact hides in each."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    layout = {"bridges.md": "bridge", "coast/lighthouses.txt": "lighthouse", "orchards.md": "apple"}
    for name, fact in layout.items():
        paragraphs = [_filler_paragraph(rng, 5) for _ in range(8)]
        paragraphs.insert(3, f"{_filler_paragraph(rng, 2)} {FACTS[fact]} {_filler_paragraph(rng, 2)}")
        title = f"# {name.split('/')[-1].split('.')[0].title()}\n\n" if name.endswith(".md") else ""
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(title + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return folder


def part_of(text: str, fact: str) -> bool:
    """The text is the fact sentence or a long piece of it (fixed-size mid windows may cut a sentence in two)."""
    return len(text.strip()) >= 20 and text.strip() in FACTS[fact]


def fake_settings(store: Path) -> Settings:
    return Settings(store=store, model=FAKE_MODEL, **SMALL_CHUNKS)


def fake_engine(settings: Settings, embedder: FakeEmbedder) -> Engine:
    return Engine(settings, embedder=embedder, reranker=SentenceWindowReranker(embedder))


# --- calling tools -----------------------------------------------------------------------------------------------


def run(server: Any, scenario: Callable[[Client], Awaitable[Any]], **client_options: Any) -> Any:
    async def main() -> Any:
        async with Client(server, **client_options) as client:
            with anyio.fail_after(60):
                return await scenario(client)

    return anyio.run(main)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must succeed; check its structured content against its output schema."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}{arguments}: {_text(result)}"
    tools = {t.name: t for t in (await client.list_tools()).tools}
    jsonschema.validate(result.structured_content, tools[name].output_schema)
    return result.structured_content  # type: ignore[return-value]


async def fail(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}{arguments} should have failed: {result.structured_content}"
    return _text(result)


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


# --- errors ----------------------------------------------------------------------------------------------------------


def test_bad_ids_and_queries_are_tool_errors_that_say_what_to_do(server) -> None:
    async def scenario(client: Client):
        return {
            "malformed": await fail(client, "get_chunks", {"chunk_ids": ["chunk-7"]}),
            "unknown": await fail(client, "expand_window", {"chunk_id": "mid:987654"}),
            "blank": await fail(client, "search_narrow", {"query": "   \n\t "}),
            "broad_parent": await fail(client, "get_parent", {"chunk_ids": ["broad:1"]}),
            "rerank_unknown": await fail(client, "rerank", {"query": "x", "chunk_ids": ["narrow:999999"]}),
            "weights": await fail(client, "search_fused", {"query": "x", "weights": {"sparse": 1.0}}),
        }

    errors = run(server, scenario)
    assert "malformed chunk id 'chunk-7'" in errors["malformed"] and "'mid:40'" in errors["malformed"]
    assert "mid:987654" in errors["unknown"] and "search again" in errors["unknown"]
    assert "query is empty" in errors["blank"]
    assert "no parent" in errors["broad_parent"] and "mid or narrow" in errors["broad_parent"]
    assert "narrow:999999" in errors["rerank_unknown"]
    assert "broad_dense" in errors["weights"]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("search_broad", {"query": ""}),
        ("search_broad", {"query": "x" * 4001}),
        ("search_broad", {"query": "x", "k": 0}),
        ("search_narrow", {"query": "x", "k": 101}),
        ("search_narrow", {"query": "x", "level": "broad"}),
        ("search_narrow", {"query": "x", "max_tokens": 49}),
        ("search_narrow", {"query": "x", "max_tokens": 100_001}),
        ("search_fused", {"query": "x", "rrf_k": 0}),
        ("search_fused", {"query": "x", "rrf_k": 1001}),
        ("search_fused", {"query": "x", "method": "max"}),
        ("search_fused", {"query": "x", "weights": {"broad_dense": -1}}),
        ("expand_window", {"chunk_id": "mid:1", "before": 21}),
        ("expand_window", {"chunk_id": "mid:1", "after": -1}),
        ("expand_window", {"chunk_id": ""}),
        ("get_parent", {"chunk_ids": []}),
        ("get_parent", {"chunk_ids": ["mid:1"], "merge_threshold": 1.5}),
        ("get_chunks", {"chunk_ids": [f"mid:{i}" for i in range(101)]}),
        ("rerank", {"query": "x", "chunk_ids": ["mid:1"], "top_n": 0}),
        ("hrr_search", {"query": "x", "rerank_n": 101}),
        ("list_documents", {"limit": 0}),
        ("list_documents", {"limit": 501}),
        ("list_documents", {"offset": -1}),
        ("list_documents", {"offset": 2**70}),
        ("search_broad", {}),
    ],
)
def test_arguments_out_of_bounds_are_refused(server, name: str, arguments: dict[str, Any]) -> None:
    async def scenario(client: Client):
        return await fail(client, name, arguments)

    message = run(server, scenario)
    assert "validation error" in message


def test_an_unexpected_failure_does_not_leak_internals(built, engine: Engine) -> None:
    class Broken:
        tokenizer = engine.tokenizer

        def view(self):
            raise RuntimeError("secret detail /srv/private/path")

    server = build_server(built[0], engine_factory=lambda _: Broken())  # type: ignore[arg-type, return-value]

    async def scenario(client: Client):
        return await fail(client, "search_narrow", {"query": "bridge"})

    message = run(server, scenario)
    assert "secret" not in message and "private" not in message
    assert "search_narrow" in message


def test_an_engine_that_fails_to_load_makes_every_call_an_error(built) -> None:
    def factory(_: Settings) -> Engine:
        raise ModelLoadError("cannot load embedding model 'x' from local files")

    server = build_server(built[0], engine_factory=factory)

    async def scenario(client: Client):
        tools = (await client.list_tools()).tools
        return tools, await fail(client, "list_documents", {})

    tools, message = run(server, scenario)
    assert len(tools) == len(TOOLS)
    assert "cannot load embedding model 'x'" in message and "restart" in message


def test_initialize_does_not_wait_for_the_engine(built, engine: Engine) -> None:
    release = threading.Event()

    def blocked(_: Settings) -> Engine:
        assert release.wait(60), "the test never released the engine"
        return engine

    server = build_server(built[0], engine_factory=blocked)

    async def scenario(client: Client):
        tools = (await client.list_tools()).tools  # answered while the engine is still loading
        listed_while_loading = not release.is_set()
        release.set()
        result = await call(client, "list_documents", {})
        return len(tools), listed_while_loading, result

    count, listed_while_loading, result = run(server, scenario)
    assert count == len(TOOLS) and listed_while_loading
    assert result["total"] == 3


def test_a_client_leaving_before_the_engine_is_ready_does_not_break_the_next(built, engine: Engine) -> None:
    built_engines = []

    def slow(_: Settings) -> Engine:
        time.sleep(1.0)
        built_engines.append(engine)
        return engine

    server = build_server(built[0], engine_factory=slow)

    async def leave_early(client: Client):
        return len((await client.list_tools()).tools)

    async def leave_at_once(client: Client):
        return None

    async def stay(client: Client):
        return await call(client, "list_documents", {})

    run(server, leave_at_once)
    assert run(server, leave_early) == len(TOOLS)
    assert run(server, stay)["total"] == 3
    assert len(built_engines) == 1  # built once, for every connection


def test_the_legacy_handshake_works_too(server) -> None:
    async def scenario(client: Client):
        return client.protocol_version, await call(client, "list_documents", {"limit": 1})

    version, result = run(server, scenario, mode="legacy")
    assert version and result["total"] == 3


def test_unstructured_content_mirrors_the_structured_content(server) -> None:
    async def scenario(client: Client):
        return await client.call_tool("list_documents", {"limit": 2})

    result = run(server, scenario)
    # Document names are quoted data: the page is JSON lines inside a fence (see models.render_documents).
    quoted = _text(result).split("```json\n", 1)[1].rsplit("\n```", 1)[0]
    assert [json.loads(line) for line in quoted.split("\n")] == result.structured_content["documents"]


# --- new generations ---------------------------------------------------------------------------------------------


def test_a_new_generation_is_seen_by_the_next_call(tmp_path: Path, embedder: FakeEmbedder) -> None:
    corpus = write_corpus(tmp_path / "corpus", seed=11)
    settings = fake_settings(tmp_path / "store")
    fake_index([corpus], settings, embedder)
    server = build_server(settings, engine_factory=lambda s: fake_engine(s, embedder))

    async def scenario(client: Client):
        before = await call(client, "list_documents", {})
        missing = await call(client, "search_narrow", {"query": "keeper Osric Vane joined", "k": 1})
        (corpus / "coast" / "keepers.md").write_text(f"# Keepers\n\n{FACTS['late']}\n", encoding="utf-8")
        await anyio.to_thread.run_sync(fake_index, [corpus], settings, embedder)
        after = await call(client, "list_documents", {})
        found = await call(client, "search_narrow", {"query": "keeper Osric Vane joined", "k": 1})
        return before, missing, after, found

    before, missing, after, found = run(server, scenario)
    assert (before["generation"], before["total"]) == (1, 3)
    assert "Osric Vane" not in missing["hits"][0]["text"]
    assert (after["generation"], after["total"]) == (2, 4)
    assert found["generation"] == 2 and "Osric Vane" in found["hits"][0]["text"]


# --- start-up checks ------------------------------------------------------------------------------------------------


def test_check_store_refuses_a_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError, match="granrag-mcp index"):
        check_store(fake_settings(tmp_path / "nothing"))


def test_check_store_refuses_a_store_built_with_another_model(built) -> None:
    settings = built[0].model_copy(update={"model": "sentence-transformers/all-MiniLM-L6-v2"})
    with pytest.raises(StoreMismatchError, match="model: store='fake-hash-embedder'"):
        check_store(settings)
    assert check_store(built[0]).generation == 1


def test_serve_fails_fast_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", "--store", str(tmp_path / "missing")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = [line for line in captured.err.splitlines() if line.startswith("granrag-mcp: error:")]
    assert len(lines) == 1 and "no index at" in lines[0]
