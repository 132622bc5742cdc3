"""Real files of every structured format, written by their own writer libraries, indexed and searched through the
MCP client: the sentence that holds a marker word cites exactly the page (slide) and heading path it was written
under. A page or heading off by one fails."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pptx
import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.indexing.formats.test_epub import TWO, build_epub
from tests.indexing.formats.test_pdf import build_pdf
from tests.server.test_app import call, fake_engine, run

FILLER = "The survey team walked the river bank and wrote down what they saw."


def word_file() -> bytes:
    document = docx.Document()
    document.add_heading("Field report", level=1)
    document.add_paragraph(f"{FILLER} Nothing stood out on the first day.")
    document.add_heading("Birds", level=2)
    document.add_paragraph(f"{FILLER} A kingfisherzq dived into the shallows at noon.")
    document.add_heading("Plants", level=2)
    document.add_paragraph(f"{FILLER} Reeds grew thick where the water slowed.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def slide_deck() -> bytes:
    deck = pptx.Presentation()
    for title, body in [("Agenda", f"{FILLER} Welcome."), ("Budget", f"{FILLER} The budgetzq grew by a third.")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def workbook() -> bytes:
    book = openpyxl.Workbook()
    first = book.active
    first.title = "Staff"
    first.append(["name", "role"])
    first.append(["Ada", "surveyor"])
    prices = book.create_sheet("Prices")
    prices.append(["item", "note"])
    prices.append(["rope", "The ropezq costs four pounds a coil."])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def notebook() -> bytes:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Setup\n", "\n", f"{FILLER}"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["## Loading\n", "\n", "The loaderzq reads the files."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": ["print(1)"]},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


CHAPTER = "<html><head><title>Book</title></head><body><h1>Voyage</h1><p>{}</p><h2>Storm</h2><p>{}</p></body></html>"
FILES = {
    "report.pdf": lambda: build_pdf([["The first page is an introduction."], ["The harbourzq is on page two."], ["."]]),
    "field.docx": word_file,
    "deck.pptx": slide_deck,
    "ledger.xlsx": workbook,
    "book.epub": lambda: build_epub(
        {"OEBPS/text/one a.xhtml": CHAPTER.format(FILLER, "The mastzq cracked at dawn."), "OEBPS/text/two.xhtml": TWO}
    ),
    "analysis.ipynb": notebook,
    "notes.md": lambda: f"# Trip\n\n{FILLER}\n\n## Camp\n\nThe tentzq leaked all night.\n".encode(),
    "page.html": lambda: f"<html><body><h1>Guide</h1><p>{FILLER}</p><h2>Routes</h2><p>The pathzq is up.</p>".encode(),
    "store.py": lambda: b'class Store:\n    def load(self):\n        """The cachezq is filled here."""\n',
}
CASES = [  # marker word, its document, the pages and heading path its sentence must cite
    ("harbourzq", "report.pdf", [2, 2], []),
    ("kingfisherzq", "field.docx", None, ["Field report", "Birds"]),
    ("budgetzq", "deck.pptx", [2, 2], ["Budget"]),
    ("ropezq", "ledger.xlsx", None, ["Prices"]),
    ("mastzq", "book.epub", None, ["Voyage", "Storm"]),
    ("loaderzq", "analysis.ipynb", None, ["Setup", "Loading"]),
    ("tentzq", "notes.md", None, ["Trip", "Camp"]),
    ("pathzq", "page.html", None, ["Guide", "Routes"]),
    ("cachezq", "store.py", None, ["class Store", "def load"]),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("formats")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, make in FILES.items():
        (corpus / name).write_bytes(make())
    settings = Settings(store=root / "store", model="fake-hash-embedder", mid_tokens=64, semantic_min_tokens=8)
    embedder = FakeEmbedder(dimension=256)
    fake_index([corpus], settings, embedder)
    engine = fake_engine(settings, embedder)
    return build_server(settings, engine_factory=lambda _: engine)


def test_every_format_is_indexed(server) -> None:
    listed = run(server, lambda client: call(client, "list_documents", {}))
    assert sorted(d["doc_id"] for d in listed["documents"]) == sorted(Path(name).name for name in FILES)


@pytest.mark.parametrize(("marker", "doc_id", "pages", "section"), CASES, ids=[c[1] for c in CASES])
def test_a_sentence_cites_the_page_and_headings_it_was_written_under(
    server, marker: str, doc_id: str, pages: list[int] | None, section: list[str]
) -> None:
    async def scenario(client: Client) -> dict[str, Any]:
        return await call(client, "search_narrow", {"query": marker, "k": 1, "lexical": True})

    top = run(server, scenario)["hits"][0]
    assert (top["doc_id"], marker in top["text"]) == (doc_id, True)
    assert (top.get("pages"), top.get("section", [])) == (pages, section), top["text"]
