"""Pages and heading paths end to end, through the MCP client: every hit, window, parent and section of a paged
document with headings cites exactly the pages and headings its text lies under; the outline and the section
tools navigate it; the document resource carries its outline. A page or heading off by one fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.outlined import SUFFIX, Report, build_report, code, register
from tests.server.test_app import _text, call, fail, fake_engine, run

PLAIN = "A plain note about the copper kettle. It has no headings and no pages at all."


@pytest.fixture(scope="module")
def report() -> Report:
    return build_report()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, report: Report):
    root = tmp_path_factory.mktemp("structure")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / f"report{SUFFIX}").write_text(report.source, encoding="utf-8")
    (corpus / "note.txt").write_text(PLAIN, encoding="utf-8")
    settings = Settings(store=root / "store", model="fake-hash-embedder", mid_tokens=64, semantic_min_tokens=16)
    embedder = FakeEmbedder(dimension=256)
    with pytest.MonkeyPatch.context() as patch:
        register(patch)
        fake_index([corpus], settings, embedder)
    engine = fake_engine(settings, embedder)
    return build_server(settings, engine_factory=lambda _: engine)


def check(hit: dict[str, Any], report: Report) -> None:
    pages, section = report.expected(hit["text"])
    assert (hit.get("pages"), hit.get("section", [])) == (pages, section), hit["text"]


QUERIES = [
    (code("glacier", 3), [1, 1], ["Introduction"]),
    (code("lantern", 2), [2, 2], ["Methods", "Sampling"]),
    (code("lantern", 9), [3, 3], ["Methods", "Sampling"]),
    (code("regression", 5), [3, 3], ["Methods", "Statistical analysis"]),
    (code("harvest", 6), [4, 4], ["Results"]),
]


@pytest.mark.parametrize(("query", "pages", "section"), QUERIES)
def test_every_hit_window_and_parent_cites_its_pages_and_headings(
    server, report: Report, query: str, pages: list[int], section: list[str]
) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        narrow = await call(client, "search_narrow", {"query": query, "k": 10})
        top = narrow["hits"][0]
        parents = await call(client, "get_parent", {"chunk_ids": [h["chunk_id"] for h in narrow["hits"]]})
        window = await call(client, "expand_window", {"chunk_id": top["chunk_id"], "before": 3, "after": 3})
        broad = await call(client, "search_broad", {"query": query, "k": 5})
        text = _text(await client.call_tool("search_narrow", {"query": query, "k": 1}))
        return {"narrow": narrow, "parents": parents, "window": window, "broad": broad, "text": text}

    out = run(server, scenario)
    top = out["narrow"]["hits"][0]
    assert f"{query} was" in top["text"]
    assert (top.get("pages"), top.get("section", [])) == (pages, section)
    for hit in out["narrow"]["hits"]:
        if hit["doc_id"] == "note.txt":
            assert "pages" not in hit and "section" not in hit  # an unstructured document cites nothing
        else:
            check(hit, report)
    for group in out["parents"]["parents"]:
        if group["parent"]["doc_id"] != "note.txt":
            check(group["parent"], report)
    for hit in out["broad"]["hits"]:
        if hit["doc_id"] != "note.txt":
            check(hit, report)
    window = out["window"]
    check(window, report)
    for member in window["members"]:
        assert member["pages"] and member["section"]
    page_text = f"p. {pages[0]}" if pages[0] == pages[1] else f"p. {pages[0]}-{pages[1]}"
    assert f"level narrow | {page_text} |" in out["text"]
    assert f"```section\n{' > '.join(section)}\n```" in out["text"]


def test_the_outline_lists_each_section_with_its_pages_and_reads_it_by_its_chunk(server, report: Report) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        outline = await call(client, "document_outline", {"doc_id": f"report{SUFFIX}"})
        top_only = await call(client, "document_outline", {"doc_id": f"report{SUFFIX}", "max_depth": 1})
        sections = [
            await call(client, "get_section", {"chunk_id": s["chunk_id"], "depth": s["level"]})
            for s in outline["sections"]
        ]
        plain = await call(client, "document_outline", {"doc_id": "note.txt"})
        return {"outline": outline, "top": top_only, "sections": sections, "plain": plain}

    out = run(server, scenario)
    outline = out["outline"]
    assert outline["page_count"] == 4 and outline["total"] == 5 and outline["omitted"] == 0
    assert [(s["level"], s["section"], s["pages"]) for s in outline["sections"]] == [
        (1, ["Introduction"], [1, 1]),
        (1, ["Methods"], [2, 3]),
        (2, ["Methods", "Sampling"], [2, 3]),
        (2, ["Methods", "Statistical analysis"], [3, 3]),
        (1, ["Results"], [4, 4]),
    ]
    assert [s["section"] for s in out["top"]["sections"]] == [["Introduction"], ["Methods"], ["Results"]]
    methods, sampling, statistics = outline["sections"][1:4]
    assert methods["tokens"] > sampling["tokens"] + statistics["tokens"] - 5 and sampling["tokens"] > 100
    for entry, section in zip(outline["sections"], out["sections"], strict=True):
        assert (section["number"], section["section"], section["pages"]) == (
            entry["number"],
            entry["section"],
            entry["pages"],
        )
        assert section["text"].startswith(entry["section"][-1] + "\n")
        assert (section["start"], section["section_end"]) == (entry["start"], entry["end"])
        assert section["pages"] == report.expected(section["text"])[0]  # a section is named by itself, not its body
    assert out["plain"]["sections"] == [] and "page_count" not in out["plain"]


def test_get_section_climbs_from_a_sentence_to_its_section_and_chapter(server, report: Report) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        hit = (await call(client, "search_narrow", {"query": code("regression", 4), "k": 1}))["hits"][0]
        inner = await call(client, "get_section", {"chunk_id": hit["chunk_id"]})
        chapter = await call(client, "get_section", {"chunk_id": hit["chunk_id"], "depth": 1})
        short = await call(client, "get_section", {"chunk_id": hit["chunk_id"], "depth": 1, "max_tokens": 50})
        plain = (await call(client, "search_narrow", {"query": "copper kettle", "k": 1}))["hits"][0]
        error = await fail(client, "get_section", {"chunk_id": plain["chunk_id"]})
        return {"hit": hit, "inner": inner, "chapter": chapter, "short": short, "error": error, "plain": plain}

    out = run(server, scenario)
    assert f"{code('regression', 4)} was" in out["hit"]["text"]
    inner, chapter, short = out["inner"], out["chapter"], out["short"]
    assert (inner["section"], inner["pages"]) == (["Methods", "Statistical analysis"], [3, 3])
    assert inner["text"].startswith("Statistical analysis\n") and out["hit"]["text"] in inner["text"]
    assert "harvest" not in inner["text"] and "lantern" not in inner["text"]
    assert (chapter["section"], chapter["pages"], chapter["level"]) == (["Methods"], [2, 3], 1)
    assert chapter["text"].startswith("Methods\nSampling\n") and inner["text"] in chapter["text"]
    assert not chapter["truncated"] and chapter["omitted"] == 0
    assert short["truncated"] and short["tokens_used"] <= 50 and short["omitted"] > 0
    assert len(short["chunk_ids"]) < len(chapter["chunk_ids"])
    assert out["plain"]["doc_id"] == "note.txt" and "has no headings" in out["error"]


def test_the_document_resource_carries_its_outline(server) -> None:
    async def scenario(client: Client) -> Any:
        return (
            await client.read_resource(f"granrag://documents/report{SUFFIX}"),
            await client.read_resource("granrag://documents/note.txt"),
        )

    report_read, note_read = run(server, scenario)
    text, outline = report_read.contents
    assert text.text.startswith(f"Introduction\nThe glacier record {code('glacier', 0)}")
    data = json.loads(outline.text)
    assert outline.mime_type == "application/json" and data["doc_id"] == f"report{SUFFIX}"
    assert len(data["page_starts"]) == 4 and data["page_starts"][0] == 0
    assert text.text[data["page_starts"][3] :].startswith("Results\n")
    assert [s["section"][-1] for s in data["sections"]] == [
        "Introduction",
        "Methods",
        "Sampling",
        "Statistical analysis",
        "Results",
    ]
    assert all(text.text[s["start"] :].startswith(s["section"][-1]) for s in data["sections"])
    assert len(note_read.contents) == 1


def test_a_section_and_a_document_are_summarized_by_their_own_sentences_with_citations(server, report: Report) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        hit = (await call(client, "search_narrow", {"query": code("regression", 4), "k": 1}))["hits"][0]
        chapter = await call(client, "get_section", {"chunk_id": hit["chunk_id"], "depth": 1})
        args = {"chunk_id": hit["chunk_id"], "depth": 1, "summary": True, "max_tokens": 80}
        summary = await call(client, "get_section", args)
        text = _text(await client.call_tool("get_section", args))
        document = await call(client, "document_outline", {"doc_id": f"report{SUFFIX}", "summary": True})
        plain = await call(client, "document_outline", {"doc_id": "note.txt", "summary": True, "max_tokens": 100})
        return {"chapter": chapter, "summary": summary, "text": text, "document": document, "plain": plain}

    out = run(server, scenario)
    chapter, summary = out["chapter"], out["summary"]
    chosen = summary["summary"]["sentences"]
    assert summary["text"] == "" and summary["section"] == ["Methods"] and summary["chunk_ids"] == chapter["chunk_ids"]
    assert 1 <= len(chosen) < summary["summary"]["of_sentences"] and summary["tokens_used"] <= 80
    assert [s["start"] for s in chosen] == sorted(s["start"] for s in chosen)  # reading order
    for sentence in chosen:
        assert sentence["text"] in chapter["text"] and sentence["chunk_id"].startswith("narrow:")
        assert chapter["start"] <= sentence["start"] < chapter["section_end"]
        pages, section = report.expected(sentence["text"])
        assert sentence["citation"].startswith(f"report{SUFFIX} · p. {pages[0]}")
        assert sentence["citation"].endswith(" > ".join(section))
    assert chosen[0]["chunk_id"] in out["text"] and "summary:" in out["text"]
    document = out["document"]
    assert document["summary"]["sentences"] and document["sections"]  # the outline stays beside the summary
    assert {s["doc_id"] for s in document["summary"]["sentences"]} == {f"report{SUFFIX}"}
    plain = out["plain"]["summary"]["sentences"]
    assert plain and all(s["text"] in PLAIN and s["citation"] == "note.txt" for s in plain)
    assert out["plain"]["sections"] == [] and out["plain"]["tokens_used"] <= 100
