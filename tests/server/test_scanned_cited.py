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


CHINESE = [
    "北京是中国的首都，也是一座历史悠久的城市。",
    "上海位于长江入海口，是中国最大的港口城市。",
    "广州的老城区保存着许多古老的街道和市场。",
    "西安曾经是多个朝代的都城，城墙至今完好。",
    "杭州的西湖四季风景优美，每年吸引大量游客。",
    "成都以美食和悠闲的生活方式而闻名全国。",
]


def test_page_image_reads_a_scanned_page_again_in_the_documents_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import Image, ImageDraw, ImageFont

    from tests.pages.test_ocr import FONTS

    if not FONTS["chinese"].exists() or ocr.languages_for("zh") is None:
        pytest.skip("no Chinese font to draw the page with, or no Chinese OCR data (tesseract-ocr-chi-sim)")
    picture = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(picture)
    font = ImageFont.truetype(str(FONTS["chinese"]), 28)
    lines = {}
    for n, line in enumerate(CHINESE):
        draw.text((120, 160 + 70 * n), line, font=font, fill="black")
        x0, y0, x1, y1 = draw.textbbox((120, 160 + 70 * n), line, font=font)
        lines[line] = [x0 / 1240, y0 / 1754, x1 / 1240, y1 / 1754]
    folder = tmp_path / "scans"
    folder.mkdir()
    picture.save(folder / "cities.pdf", "PDF", resolution=150)
    server, summary = serve(folder, tmp_path / "store")
    assert summary.added == 1
    read_in: list[tuple[str, ...] | None] = []
    real = ocr.read_image

    def recorded(image: Any, languages: tuple[str, ...] | None = None) -> list[ocr.Word]:
        read_in.append(languages)
        return real(image, languages)

    monkeypatch.setattr(ocr, "read_image", recorded)

    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        hit = (await call(client, "search_narrow", {"query": "西湖", "k": 1, "lexical": True}))["hits"][0]
        return hit, await call(client, "page_image", {"chunk_id": hit["chunk_id"], "max_pixels": 20_000})

    hit, shown = run(server, scenario)
    assert "西湖" in hit["text"].replace(" ", "")
    assert read_in == [ocr.languages_for("zh")]  # the stored language, not English first
    truth = lines[CHINESE[4]]
    assert any(b["page"] == 1 and overlaps(b["box"], truth) for b in shown["boxes"]), (shown["boxes"], truth)
