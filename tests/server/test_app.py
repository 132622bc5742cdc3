"""The MCP tools end to end in one process: an in-memory client, a store built with the fake embedder."""

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
from granrag_mcp.retrieval.hrr import HRR_LISTS
from granrag_mcp.retrieval.ranking.model import shipped_ranker
from granrag_mcp.server.app import build_server, check_store
from granrag_mcp.settings import Settings
from granrag_mcp.tokens import get_tokenizer
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
}
GRAPH_TOOLS = {"find_concepts", "concept_neighbourhood", "concept_paths", "graph_search"}  # see tests/server/
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


# --- fixtures -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimension=256)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder: FakeEmbedder) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("server")
    corpus = write_corpus(root / "corpus")
    settings = fake_settings(root / "store")
    fake_index([corpus], settings, embedder)
    return settings, corpus


@pytest.fixture(scope="module")
def engine(built: tuple[Settings, Path], embedder: FakeEmbedder) -> Engine:
    return fake_engine(built[0], embedder)


@pytest.fixture(scope="module")
def server(built: tuple[Settings, Path], engine: Engine):
    return build_server(built[0], engine_factory=lambda _: engine)


# --- listing -------------------------------------------------------------------------------------------------------


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
    }


def test_max_tokens_default_follows_the_settings(built) -> None:
    settings = built[0].model_copy(update={"max_tokens": 777})
    tools = anyio.run(build_server(settings).list_tools)
    assert {
        t.input_schema["properties"]["max_tokens"]["default"]
        for t in tools
        if t.name not in ("list_documents", "find_concepts")
    } == {777}


# --- searches -----------------------------------------------------------------------------------------------------


def test_search_narrow_finds_the_sentence(server) -> None:
    async def scenario(client: Client):
        return await call(client, "search_narrow", {"query": "When was the Zephyr Bridge completed?", "k": 3})

    result = run(server, scenario)
    top = result["hits"][0]
    assert part_of(top["text"], "bridge") and "Zephyr Bridge" in top["text"]
    assert top["level"] == "narrow" and top["chunk_id"].startswith("narrow:")
    assert top["parent_id"].startswith("mid:")
    assert top["doc_id"] == "bridges.md"
    assert top["end"] > top["start"] and top["token_count"] > 5 and top["truncated"] is False
    assert "evidence" not in top
    # dense alone, or dense and BM25 with the weights the index adapted to, which the result names
    assert "sources" not in top if "weights" not in result else set(top["sources"]) <= set(result["weights"])
    assert result["generation"] == 1 and result["omitted"] == 0
    assert [h["score"] for h in result["hits"]] == sorted((h["score"] for h in result["hits"]), reverse=True)


def test_search_narrow_mid_level_and_lexical(server) -> None:
    async def scenario(client: Client):
        dense = await call(client, "search_narrow", {"query": "Harrow Point lens prisms", "level": "mid", "k": 4})
        fused = await call(
            client, "search_narrow", {"query": "Harrow Point lens prisms", "level": "mid", "k": 4, "lexical": True}
        )
        return dense, fused

    dense, fused = run(server, scenario)
    assert all(h["level"] == "mid" and h["parent_id"].startswith("broad:") for h in dense["hits"])
    for result in (dense, fused):  # the fact may be split between two mid chunks
        assert "Harrow Point" in result["hits"][0]["text"] or "glass prisms" in result["hits"][0]["text"]
    assert set(fused["hits"][0]["sources"]) == {"mid_dense", "mid_lexical"}
    assert fused["hits"][0]["sources"]["mid_lexical"]["rank"] <= 3


def test_search_broad(server) -> None:
    async def scenario(client: Client):
        return (
            await call(client, "search_broad", {"query": "Quillon apple ripens September cellar", "k": 2}),
            await call(client, "search_broad", {"query": "Quillon apple", "k": 2, "lexical": True}),
        )

    dense, lexical = run(server, scenario)
    assert len(dense["hits"]) == 2
    assert all(h["level"] == "broad" and "parent_id" not in h for h in dense["hits"])
    assert "Quillon apple" in dense["hits"][0]["text"]
    assert set(lexical["hits"][0]["sources"]) == {"broad_dense", "broad_lexical"}


def test_search_fused_rrf_reports_every_list(server) -> None:
    async def scenario(client: Client):
        default = await call(client, "search_fused", {"query": "engineer Ada Moreau bridge", "k": 3})
        narrow = await call(
            client,
            "search_fused",
            {
                "query": "engineer Ada Moreau bridge",
                "k": 3,
                "level": "narrow",
                "weights": {"broad_dense": 0, "broad_lexical": 0},
                "rrf_k": 10,
            },
        )
        dense_only = await call(client, "search_fused", {"query": "engineer Ada Moreau bridge", "lexical": False})
        return default, narrow, dense_only

    default, narrow, dense_only = run(server, scenario)
    top = default["hits"][0]
    assert top["level"] == "mid" and "Zephyr Bridge" in top["text"]
    assert set(top["sources"]) <= {f"{lv}_{i}" for lv in ("broad", "mid", "narrow") for i in ("dense", "lexical")}
    assert set(top["sources"]) <= set(default["weights"])  # every fused list's weight is reported
    assert {"narrow_dense", "narrow_lexical"} <= set(top["sources"])
    assert top["score"] == pytest.approx(sum(s["fused"] for s in top["sources"].values()))
    for source in top["sources"].values():
        assert source["rank"] >= 1
    assert narrow["hits"][0]["level"] == "narrow" and part_of(narrow["hits"][0]["text"], "bridge")
    # weights not given keep the index's adapted ones, and the result names every weight used
    assert narrow["weights"]["broad_dense"] == 0 and narrow["weights"]["broad_lexical"] == 0
    assert narrow["hits"][0]["sources"]["narrow_dense"]["fused"] == pytest.approx(
        narrow["weights"]["narrow_dense"] / 11
    )
    assert narrow["hits"][0]["sources"]["broad_dense"]["fused"] == 0
    assert all(set(h["sources"]) <= {"broad_dense", "mid_dense", "narrow_dense"} for h in dense_only["hits"])


def test_the_output_schema_spells_out_sources_in_place_and_still_checks_them(server) -> None:
    async def scenario(client: Client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await call(client, "search_fused", {"query": "engineer Ada Moreau bridge", "k": 3})
        return tools["search_fused"].output_schema, result

    schema, result = run(server, scenario)
    sources_schema = schema["$defs"]["Hit"]["properties"]["sources"]
    assert "$ref" not in json.dumps(sources_schema)  # clients validate every result: no reference to resolve
    jsonschema.validate(result, schema)
    hit = result["hits"][0]
    name = next(iter(hit["sources"]))
    for bad in ({"rank": 1, "score": 0.5}, {**hit["sources"][name], "extra": 1}, {**hit["sources"][name], "rank": "1"}):
        broken = {**result, "hits": [{**hit, "sources": {name: bad}}]}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)
    jsonschema.validate({**result, "hits": [{**hit, "sources": None}]}, schema)


def test_search_fused_union_mixes_levels_without_nested_duplicates(server) -> None:
    async def scenario(client: Client):
        return (
            await call(
                client,
                "search_fused",
                {"query": "Harrow Point lighthouse", "method": "union", "k": 8, "level": "narrow"},
            ),
            await call(
                client, "search_fused", {"query": "Harrow Point lighthouse", "method": "union", "k": 8, "level": "mid"}
            ),
        )

    narrow, mid = run(server, scenario)
    assert {h["level"] for h in narrow["hits"]} <= {"broad", "narrow"}
    assert {h["level"] for h in mid["hits"]} <= {"broad", "mid"}
    assert len(narrow["hits"]) == len(mid["hits"]) == 8
    for result in (narrow, mid):
        broad = [h for h in result["hits"] if h["level"] == "broad"]
        for fine in (h for h in result["hits"] if h["level"] != "broad"):
            assert not any(
                b["doc_id"] == fine["doc_id"] and b["start"] <= fine["start"] and fine["end"] <= b["end"] for b in broad
            )


# --- context ------------------------------------------------------------------------------------------------------


def test_expand_window_assembles_the_neighbourhood(server, built) -> None:
    corpus = built[1]

    async def scenario(client: Client):
        hit = (await call(client, "search_narrow", {"query": "Zephyr Bridge completed engineer", "k": 1}))["hits"][0]
        wide = await call(client, "expand_window", {"chunk_id": hit["chunk_id"], "before": 2, "after": 2})
        alone = await call(client, "expand_window", {"chunk_id": hit["chunk_id"], "before": 0, "after": 0})
        short = await call(
            client, "expand_window", {"chunk_id": hit["chunk_id"], "before": 20, "after": 20, "max_tokens": 50}
        )
        return hit, wide, alone, short

    hit, wide, alone, short = run(server, scenario)
    document = (corpus / "bridges.md").read_text(encoding="utf-8")
    assert wide["text"] == document[wide["start"] : wide["end"]]
    assert FACTS["bridge"] in wide["text"]
    assert [m["chunk_id"] for m in wide["members"]].count(hit["chunk_id"]) == 1
    seqs = [m["seq"] for m in wide["members"]]
    assert len(seqs) == 5 and seqs == sorted(seqs)
    assert all(m["text"] == "" for m in wide["members"])
    assert wide["chunk_id"] == hit["chunk_id"] and wide["truncated"] is False and wide["omitted"] == 0
    assert [m["chunk_id"] for m in alone["members"]] == [hit["chunk_id"]]
    assert part_of(alone["text"], "bridge")
    assert short["truncated"] is True and short["tokens_used"] <= 50
    assert short["end"] - short["start"] == len(short["text"]) and short["omitted"] > 0
    assert document[short["start"] : short["end"]] == short["text"]


def test_get_parent_groups_children_and_merges_by_threshold(server) -> None:
    async def scenario(client: Client):
        narrow = (await call(client, "search_narrow", {"query": "Zephyr Bridge completed engineer", "k": 1}))["hits"][0]
        siblings = await call(client, "expand_window", {"chunk_id": narrow["chunk_id"], "before": 1, "after": 1})
        same_parent = [m["chunk_id"] for m in siblings["members"] if m["parent_id"] == narrow["parent_id"]]
        merged = await call(client, "get_parent", {"chunk_ids": same_parent})
        unmerged = await call(client, "get_parent", {"chunk_ids": [narrow["chunk_id"]], "merge_threshold": 1.0})
        up = await call(client, "get_parent", {"chunk_ids": [narrow["parent_id"]]})
        return narrow, same_parent, merged, unmerged, up

    narrow, same_parent, merged, unmerged, up = run(server, scenario)
    [group] = merged["parents"]
    assert group["parent"]["chunk_id"] == narrow["parent_id"]
    assert group["children_hit"] == same_parent
    assert group["children_total"] >= len(same_parent)
    assert "Zephyr Bridge" in group["parent"]["text"] and "score" not in group["parent"]
    assert merged["kept"] == []
    assert unmerged["parents"] == [] and [h["chunk_id"] for h in unmerged["kept"]] == [narrow["chunk_id"]]
    assert up["parents"][0]["parent"]["level"] == "broad"


def test_rerank_orders_the_candidates(server) -> None:
    async def scenario(client: Client):
        pool = await call(client, "search_narrow", {"query": "lighthouse", "k": 10})
        ids = [h["chunk_id"] for h in pool["hits"]]
        alone = await call(
            client, "rerank", {"query": "lens of glass prisms", "chunk_ids": ids, "top_n": 3, "method": "reranker"}
        )
        return ids, alone, await call(client, "rerank", {"query": "lens of glass prisms", "chunk_ids": ids, "top_n": 3})

    ids, alone, result = run(server, scenario)
    assert alone["reranker"].startswith("sentence-windows-fallback:")
    # the candidate ranker by default (its name says so when the index adapted its reliance on embeddings)
    ranker, _, reranker = result["reranker"].partition("+")
    assert ranker.split("*")[0] == shipped_ranker().name and reranker == alone["reranker"]
    assert len(result["hits"]) == 3 and {h["chunk_id"] for h in result["hits"]} <= set(ids)
    scores = [h["score"] for h in result["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert part_of(result["hits"][0]["text"], "lighthouse")


def test_hrr_search_returns_broad_parents_with_evidence(server) -> None:
    async def scenario(client: Client):
        return await call(client, "hrr_search", {"query": "Quillon apple ripens", "k": 2})

    result = run(server, scenario)
    assert result["reranker"].split("*")[0].split("+")[0] == shipped_ranker().name
    assert "+sentence-windows-fallback:" in result["reranker"] and set(result["weights"]) == set(HRR_LISTS)
    top = result["hits"][0]
    assert top["level"] == "broad" and "Quillon apple" in top["text"]
    assert top["evidence"] and all(e.startswith("mid:") for e in top["evidence"])


def test_list_documents_pages_and_filters(server) -> None:
    async def scenario(client: Client):
        return (
            await call(client, "list_documents", {}),
            await call(client, "list_documents", {"limit": 1, "offset": 1}),
            await call(client, "list_documents", {"prefix": "coast/"}),
        )

    everything, page, coast = run(server, scenario)
    assert everything["total"] == 3
    assert [d["doc_id"] for d in everything["documents"]] == ["bridges.md", "coast/lighthouses.txt", "orchards.md"]
    assert all(
        d["n_chars"] > 1000 and d["n_tokens"] > 200 and d["source"].endswith(d["doc_id"].split("/")[-1])
        for d in everything["documents"]
    )
    assert (
        page["total"] == 3
        and page["offset"] == 1
        and [d["doc_id"] for d in page["documents"]] == ["coast/lighthouses.txt"]
    )
    assert coast["total"] == 1


def test_get_chunks_keeps_the_order_given(server) -> None:
    async def scenario(client: Client):
        hits = (await call(client, "search_narrow", {"query": "lighthouse apple bridge", "k": 4}))["hits"]
        ids = [h["chunk_id"] for h in hits][::-1] + [hits[0]["parent_id"]]
        return hits, ids, await call(client, "get_chunks", {"chunk_ids": ids})

    hits, ids, result = run(server, scenario)
    assert [h["chunk_id"] for h in result["hits"]] == ids
    assert all("score" not in h for h in result["hits"])
    assert result["hits"][0]["text"] == hits[-1]["text"]


# --- the token budget ------------------------------------------------------------------------------------------


def test_results_are_packed_within_max_tokens(server) -> None:
    async def scenario(client: Client):
        small = await call(client, "search_broad", {"query": "lighthouse bridge apple", "k": 5, "max_tokens": 300})
        full = await call(client, "search_broad", {"query": "lighthouse bridge apple", "k": 5, "max_tokens": 100000})
        return small, full

    small, full = run(server, scenario)
    assert small["tokens_used"] <= 300
    assert small["hits"][-1]["truncated"] is True
    assert all(not h["truncated"] for h in small["hits"][:-1])
    assert len(small["hits"]) + small["omitted"] == len(full["hits"]) == 5
    assert full["omitted"] == 0 and not any(h["truncated"] for h in full["hits"])
    cut = small["hits"][-1]
    whole = next(h for h in full["hits"] if h["chunk_id"] == cut["chunk_id"])
    assert whole["text"].startswith(cut["text"]) and len(cut["text"]) < len(whole["text"])
    assert cut["token_count"] == whole["token_count"]
    counter = get_tokenizer()
    assert small["tokens_used"] == sum(counter.count(h["text"]) for h in small["hits"])


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
