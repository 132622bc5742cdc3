"""A PDF table that runs on to the next page, indexed and searched through the MCP client: the broad parent of a
row printed on the second page holds the whole table under its caption and cites both pages; the row itself, found
as a sentence, names its columns and cites the page it is printed on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.indexing.formats.test_pdf_tables import HEADER, ROWS, row_line, split_table_pdf
from tests.server.test_app import call, fake_engine, run

pytest.importorskip("pdfplumber")


def test_a_row_on_the_second_page_has_the_whole_table_as_its_parent_citing_both_pages(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "survey.pdf").write_bytes(split_table_pdf())
    settings = Settings(store=tmp_path / "store", model="fake-hash-embedder", mid_tokens=64, semantic_min_tokens=8)
    embedder = FakeEmbedder(dimension=256)
    fake_index([folder], settings, embedder)
    server = build_server(settings, engine_factory=lambda _: fake_engine(settings, embedder))
    row = ROWS[35]

    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        narrow = (await call(client, "search_narrow", {"query": row[2], "k": 1, "lexical": True}))["hits"][0]
        broad = (await call(client, "search_broad", {"query": row[2], "k": 1, "lexical": True}))["hits"][0]
        return narrow, broad

    narrow, broad = run(server, scenario)
    assert row_line(row) in narrow["text"] and all(f"{h}: " in narrow["text"] for h in HEADER)
    assert narrow["pages"] == [2, 2]
    table = "Table 3: Mills and their keepers\n" + "\n".join(row_line(r) for r in ROWS[:30])
    assert table in broad["text"] and row_line(ROWS[-1]) in broad["text"]
    assert broad["pages"] == [1, 2]
