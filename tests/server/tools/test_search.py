"""The search tools: one level, levels fused, the hierarchical rerank pipeline, and rerank itself."""

from __future__ import annotations

import json

import jsonschema
import pytest
from mcp.client import Client

from granrag_mcp.retrieval.hrr import HRR_LISTS
from granrag_mcp.retrieval.ranking.model import shipped_ranker
from granrag_mcp.tokens import get_tokenizer
from tests.server.test_app import call, part_of, run


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
