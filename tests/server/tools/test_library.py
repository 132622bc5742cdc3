"""The library tools: the documents of the index, paged and filtered."""

from __future__ import annotations

from mcp.client import Client

from tests.server.test_app import call, run


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
