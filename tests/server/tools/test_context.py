"""The context tools: the text around a chunk, the chunks that enclose it, and chunks fetched by id."""

from __future__ import annotations

from mcp.client import Client

from tests.server.test_app import FACTS, call, part_of, run


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


def test_get_chunks_keeps_the_order_given(server) -> None:
    async def scenario(client: Client):
        hits = (await call(client, "search_narrow", {"query": "lighthouse apple bridge", "k": 4}))["hits"]
        ids = [h["chunk_id"] for h in hits][::-1] + [hits[0]["parent_id"]]
        return hits, ids, await call(client, "get_chunks", {"chunk_ids": ids})

    hits, ids, result = run(server, scenario)
    assert [h["chunk_id"] for h in result["hits"]] == ids
    assert all("score" not in h for h in result["hits"])
    assert result["hits"][0]["text"] == hits[-1]["text"]
