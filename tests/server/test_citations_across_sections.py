"""Hits whose text runs across sections cite what the sections share, or list each one, never only the one they
start in: Word and Markdown files with a title, parts and nested sections, written here, indexed with small
windows so passages run across headings, and asked through every tool that returns text with a citation."""

from __future__ import annotations

import io
import random
from typing import Any

import docx
import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import SMALL_CHUNKS, call, fake_engine, run

FILLER = [
    "The survey team walked the river bank and wrote down what they saw.",
    "Most of the morning went on measuring the depth of the channel.",
    "The notes were copied out again in the evening by lamplight.",
    "Nobody expected the weather to hold for a second week.",
    "A farmer pointed out where the old ford had been.",
]
PARTS = {"Upstream": ["Springs", "Mills"], "Downstream": ["Marshes", "Estuary"], "Findings": []}


def outline(title: str) -> list[tuple[list[str], int]]:
    """Each section's heading path and level: the title (level 1), its parts (2) and their sections (3)."""
    found = [([title], 1)]
    for part, subsections in PARTS.items():
        found.append(([title, part], 2))
        found += [([title, part, sub], 3) for sub in subsections]
    return found


def paragraphs(rng: random.Random, answer: str) -> list[str]:
    """Three paragraphs of filler, the answer's sentence in one of them."""
    out = [" ".join(rng.choice(FILLER) for _ in range(4)) for _ in range(3)]
    n = rng.randrange(3)
    out[n] = f"{out[n]} The gauge at this place was read by {answer} every day."
    return out


def make_corpus(rng: random.Random) -> tuple[dict[str, bytes], dict[str, tuple[str, list[str]]]]:
    """Files by name, and each answer's document and heading path."""
    answers: dict[str, tuple[str, list[str]]] = {}
    files: dict[str, bytes] = {}
    for number, title in enumerate(["Valley survey", "Coast survey", "Hill survey"]):
        word, markdown = docx.Document(), []
        for path, level in outline(title):
            for name, _ in (("docx", 0), ("md", 1)):
                answer = f"Gauger{len(answers):02d}{name}zq"
                # Word's Title and Heading 1 are both top-level headings: a part is not inside the title there
                cited = path[1:] if name == "docx" and level > 1 else path
                answers[answer] = (f"survey-{number}.{name}", cited)
                body = paragraphs(rng, answer)
                if name == "docx":
                    word.add_paragraph(path[-1], style="Title" if level == 1 else f"Heading {level - 1}")
                    for text in body:
                        word.add_paragraph(text)
                else:
                    markdown += [f"{'#' * level} {path[-1]}", *body]
        buffer = io.BytesIO()
        word.save(buffer)
        files[f"survey-{number}.docx"] = buffer.getvalue()
        files[f"survey-{number}.md"] = "\n\n".join(markdown).encode()
    return files, answers


def right(hit: dict[str, Any], path: list[str]) -> bool:
    """A citation is right when the sections it lists hold the answer's, or when, listing none, it names it."""
    listed = hit.get("sections") or []
    return path in listed if listed else hit.get("section", []) == path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("across")
    folder = root / "corpus"
    folder.mkdir()
    files, answers = make_corpus(random.Random(7))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    settings = Settings(
        store=root / "store",
        model="fake-hash-embedder",
        semantic_min_tokens=8,
        **SMALL_CHUNKS,  # type: ignore[arg-type]
    )
    embedder = FakeEmbedder(dimension=256)
    fake_index([folder], settings, embedder)
    engine = fake_engine(settings, embedder)
    return {"server": build_server(settings, engine_factory=lambda _: engine), "answers": answers}


async def answering(client: Client, answer: str) -> dict[str, list[dict[str, Any]]]:
    """The hits of every tool that hold `answer`, by tool."""

    def holding(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [h for h in hits if answer in h.get("text", "")][:1]

    query = {"query": answer, "lexical": True}
    narrow = holding((await call(client, "search_narrow", {**query, "k": 3}))["hits"])
    mid = holding((await call(client, "search_narrow", {**query, "k": 3, "level": "mid"}))["hits"])
    broad = holding((await call(client, "search_broad", {**query, "k": 3}))["hits"])
    found = {
        "search_narrow": narrow,
        "search_narrow mid": mid,
        "search_broad": broad,
        "search_fused": holding((await call(client, "search_fused", {"query": answer, "k": 5}))["hits"]),
        "hrr_search": holding((await call(client, "hrr_search", {"query": answer, "k": 5}))["hits"]),
    }
    if mid:
        parents = await call(client, "get_parent", {"chunk_ids": [mid[0]["chunk_id"]]})
        found["get_parent"] = holding([g["parent"] for g in parents["parents"]])
    if narrow:
        window = await call(client, "expand_window", {"chunk_id": narrow[0]["chunk_id"], "before": 3, "after": 3})
        found["expand_window"] = holding([window])
    if broad:
        found["get_chunks"] = holding((await call(client, "get_chunks", {"chunk_ids": [broad[0]["chunk_id"]]}))["hits"])
    return found


def test_every_tool_cites_the_sections_its_answering_hits_hold(corpus: dict[str, Any]) -> None:
    answers = corpus["answers"]

    async def scenario(client: Client) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        by_tool: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for answer in answers:
            for tool, hits in (await answering(client, answer)).items():
                by_tool.setdefault(tool, []).extend((answer, h) for h in hits)
        return by_tool

    by_tool = run(corpus["server"], scenario)
    across = 0
    for tool, hits in by_tool.items():
        assert len(hits) >= 0.8 * len(answers), f"{tool}: {len(hits)} answering hits of {len(answers)}"
        wrong = [(a, h.get("section"), h.get("sections")) for a, h in hits if not right(h, answers[a][1])]
        assert len(wrong) <= 0.05 * len(hits), f"{tool}: {len(wrong)} of {len(hits)} wrong, e.g. {wrong[:3]}"
        for answer, hit in hits:
            assert hit["doc_id"] == answers[answer][0]
            across += bool(hit.get("sections"))
    assert across >= len(answers)  # passages do run across sections here: the rule is exercised


def test_get_section_of_a_passage_across_sections_holds_all_of_it(corpus: dict[str, Any]) -> None:
    """The section get_section returns for a passage that runs across subsections is one that holds them all."""

    async def scenario(client: Client) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        out = []
        for answer in list(corpus["answers"])[:12]:
            for hit in (await call(client, "search_broad", {"query": answer, "k": 1, "lexical": True}))["hits"]:
                if len(hit.get("sections", [])) > 1 and hit.get("section"):
                    out.append((hit, await call(client, "get_section", {"chunk_id": hit["chunk_id"]})))
        return out

    pairs = run(corpus["server"], scenario)
    assert pairs
    for hit, section in pairs:
        assert section["section"] == hit["section"]
        # a section starts at its heading's text, past the Markdown marks of the line the passage may open with
        assert section["start"] <= hit["start"] + len(hit["text"].split("\n", 1)[0])
        assert hit["end"] <= section["section_end"]
