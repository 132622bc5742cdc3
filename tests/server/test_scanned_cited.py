"""Scanned PDFs answer as their text versions do: the same PDFs, written here with reportlab, indexed once with
their text layer and once drawn at 150 dpi as images only (read by OCR), asked the same questions through the MCP
client: hit rate at 5 within 0.05 of the text PDFs', pages cited right for 0.95 of answering hits, and page_image
marks the answer on OCR'd pages. Skipped where Tesseract is not installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from granrag_mcp.pages import ocr
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.pages.test_ocr import scanned
from tests.server.test_app import call, fake_engine, run
from tests.server.tools.test_evidence import SUBJECTS, TOWNS, answer_boxes, overlaps, write_pdf

pytestmark = pytest.mark.skipif(ocr.missing() is not None, reason=ocr.missing() or "")

SURNAMES = [
    "Fairbank",
    "Holloway",
    "Kingsley",
    "Pemberton",
    "Ashford",
    "Whitby",
    "Dunmore",
    "Lowell",
    "Hale",
    "Reed",
    "Carver",
    "Thornton",
]


def questions() -> list[tuple[str, str, str]]:
    """(sentence, question, answer surname): who rebuilt what, each pair of subject and town and each name once."""
    pairs = [(t, s) for t in TOWNS[:2] for s in SUBJECTS[:6]]
    return [
        (f"The {subject} of {town} was rebuilt by Anne {name} after the flood.", f"{subject} {town} rebuilt", name)
        for (town, subject), name in zip(pairs, SURNAMES)
    ]


def serve(folder: Path, store: Path) -> Any:
    settings = Settings(store=store, model="fake-hash-embedder", mid_tokens=64, semantic_min_tokens=8)
    embedder = FakeEmbedder(dimension=256)
    summary = fake_index([folder], settings, embedder)
    engine = fake_engine(settings, embedder)
    return build_server(settings, engine_factory=lambda _: engine), summary


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("scanned")
    cases = questions()
    pdfs: dict[str, bytes] = {}
    for kind in ("text", "scan"):
        (root / kind).mkdir()
    for n in range(2):
        data = write_pdf([sentence for sentence, _, _ in cases[n * 6 : (n + 1) * 6]], seed=n)
        pdfs[f"minutes-{n}.pdf"] = data
        (root / "text" / f"minutes-{n}.pdf").write_bytes(data)
        (root / "scan" / f"minutes-{n}.pdf").write_bytes(scanned(data))
    text_server, _ = serve(root / "text", root / "text-store")
    scan_server, summary = serve(root / "scan", root / "scan-store")
    return {"text": text_server, "scan": scan_server, "summary": summary, "pdfs": pdfs, "cases": cases}


def ask(server: Any, cases: list[tuple[str, str, str]], pdfs: dict[str, bytes]) -> dict[str, Any]:
    """Hits at 5, pages cited right, and for the scans the answer marked by page_image, over the questions."""

    found = {"hit": 0, "page": 0, "marked": 0}
    for _, question, answer in cases:  # a client each: OCR reads a scanned page again for its page_image

        async def scenario(client: Client, question: str = question, answer: str = answer) -> None:
            hits = (await call(client, "search_narrow", {"query": question, "k": 5, "lexical": True}))["hits"]
            hit = next((h for h in hits if answer in h["text"]), None)
            if hit is None:
                return
            found["hit"] += 1
            page, box = answer_boxes(pdfs[hit["doc_id"]], answer)
            found["page"] += hit["pages"][0] <= page <= hit["pages"][1]
            shown = await call(client, "page_image", {"chunk_id": hit["chunk_id"], "max_pixels": 20_000})
            found["marked"] += any(b["page"] == page and overlaps(b["box"], box) for b in shown["boxes"])

        run(server, scenario)
    return found


def test_scanned_pdfs_answer_as_their_text_versions_do(corpora: dict[str, Any]) -> None:
    cases, pdfs = corpora["cases"], corpora["pdfs"]
    assert (corpora["summary"].added, corpora["summary"].failed) == (len(pdfs), [])  # every scan, no flag
    text = ask(corpora["text"], cases, pdfs)
    scan = ask(corpora["scan"], cases, pdfs)
    assert text["hit"] / len(cases) - scan["hit"] / len(cases) <= 0.05, (text, scan)
    assert scan["page"] >= 0.95 * scan["hit"], scan
    assert scan["marked"] >= 0.90 * scan["hit"], scan


def test_page_image_marks_a_hit_on_an_image_file(tmp_path: Path) -> None:
    from tests.indexing.formats.test_image import frames, saved

    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "page.png").write_bytes(saved("PNG", frames(dpi=150)[1:]))
    server, summary = serve(folder, tmp_path / "store")
    assert summary.added == 1

    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        hit = (await call(client, "search_narrow", {"query": "Thomas Reed mill", "k": 1, "lexical": True}))["hits"][0]
        return hit, await call(client, "page_image", {"chunk_id": hit["chunk_id"], "max_pixels": 20_000})

    hit, shown = run(server, scenario)
    assert "Reed" in hit["text"] and hit["pages"] == [1, 1]
    assert shown["pages"] == [1] and shown["boxes"]
    x0, y0, x1, y1 = shown["boxes"][0]["box"]
    assert y0 < 0.1 and x0 < 0.2  # the sentence stands at the top left of the page, as reportlab drew it
