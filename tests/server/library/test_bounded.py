"""A document whose headings are long and many makes no answer many times its size: the outline a document's
first page carries stays under its stated cap and says where the rest is, and document_outline's entries stay
within the budget (in-memory client, fake embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.server.library.resources import OUTLINE_MIME
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import FAKE_MODEL, SMALL_CHUNKS, call, fake_engine, run

SUBSECTIONS = 1500
OUTLINE_CAP = 200_000  # characters, as the document resource's description states
TITLE_CHARS = 200  # characters of one heading in a result


def amplifying(folder: Path) -> Path:
    """About 0.1 MB of Markdown whose outline, each path repeating a 20,000-character title, is about 30 MB."""
    folder.mkdir(parents=True)
    title = " ".join(f"word{n}" for n in range(3000))
    body = "\n\n".join(f"## Part {n}\n\nThe river bend number {n} floods in spring." for n in range(SUBSECTIONS))
    (folder / "deep.md").write_text(f"# {title}\n\nIntroduction.\n\n{body}\n", encoding="utf-8")
    return folder


def test_the_outline_of_a_document_is_bounded_and_continues(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "store", model=FAKE_MODEL, graph=False, **SMALL_CHUNKS)
    embedder = FakeEmbedder()
    fake_index([amplifying(tmp_path / "docs")], settings, embedder)
    server = build_server(settings, lambda s: fake_engine(s, embedder))

    async def scenario(client: Client) -> dict[str, Any]:
        read = await client.read_resource("granrag://documents/deep.md")
        outline = next(c for c in read.contents if c.mime_type == OUTLINE_MIME)
        first = json.loads(outline.text)  # type: ignore[union-attr]
        tool = await call(client, "document_outline", {"doc_id": "deep.md", "max_tokens": 2000})
        rest = await call(
            client, "document_outline", {"doc_id": "deep.md", "offset": len(first["sections"]), "max_tokens": 2000}
        )
        return {"text": outline.text, "first": first, "tool": tool, "rest": rest}  # type: ignore[union-attr]

    out = run(server, scenario)
    assert len(out["text"]) <= OUTLINE_CAP  # the whole outline would be over 100 times the file
    first = out["first"]
    assert first["total"] == SUBSECTIONS + 1 and first["sections"]
    assert first["omitted"] == first["total"] - len(first["sections"]) and "offset=" in first["rest"]
    assert all(len(title) <= TITLE_CHARS for s in first["sections"] for title in s["section"])
    tool = out["tool"]
    assert tool["tokens_used"] <= 2000 and tool["sections"] and tool["omitted"] > 0
    assert all(len(title) <= TITLE_CHARS for s in tool["sections"] for title in s["section"])
    assert out["rest"]["sections"][0]["number"] == len(first["sections"])
