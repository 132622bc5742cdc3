"""page_image through the real MCP client, on PDFs written here with reportlab: the boxes it marks lie on the
answer's own characters (found in the PDF by pdfplumber, not by the code under test) on the right page."""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path
from typing import Any

import pdfplumber
import pytest
from mcp.client import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from granrag_mcp.server.app import build_server
from granrag_mcp.server.tools.evidence_view import VIEW_URI
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.pages.test_formulas import on_line
from tests.pages.test_formulas import write_page as formula_page
from tests.server.test_app import call, fail, fake_engine, run
from tests.server.tools.test_evidence_view import run_view

FILLER = [
    "The committee met in the spring and read the reports of the year.",
    "Rain had fallen on most days, and the roads were slow to travel.",
    "Several members asked for the accounts to be printed in full.",
    "A short note on the library closed the morning session.",
]
SUBJECTS = ["harbour", "bridge", "mill", "school", "chapel", "market", "lighthouse", "granary", "ferry", "tannery"]
TOWNS = ["Elwyn", "Marrow", "Dunstan", "Kettle", "Oakridge"]


def facts() -> list[tuple[str, str]]:
    """(sentence, answer word): each answer a made-up word that occurs once in the corpus."""
    return [
        (f"The {subject} of {town} was rebuilt by {answer} after the flood.", answer)
        for n, (subject, town) in enumerate((s, t) for t in TOWNS for s in SUBJECTS)
        for answer in [f"Quill{chr(97 + n % 26)}{chr(97 + n // 26)}zq"]
    ]


def write_pdf(sentences: list[str], seed: int) -> bytes:
    """The sentences as paragraphs of wrapped lines, filler between them, pages filled top-down, left margins and
    font sizes varied so boxes are not all in one place."""
    rng = random.Random(seed)
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    y = 790.0
    for sentence in sentences:
        paragraph = " ".join([rng.choice(FILLER), sentence, rng.choice(FILLER)])
        size = rng.choice([10, 11, 12])
        margin = rng.choice([60, 72, 90])
        words, line = paragraph.split(), ""
        lines = []
        for word in words:
            if len(line) + len(word) > rng.choice([60, 70, 80]):
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines.append(line)
        for text in lines:
            if y < 60:
                sheet.showPage()
                y = 790.0
            sheet.setFont("Helvetica", size)
            sheet.drawString(margin, y, text)
            y -= size * 1.5
        y -= size
    sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def answer_boxes(pdf: bytes, answer: str) -> tuple[int, list[float]]:
    """The page (1-based) and box (fractions from the top-left) of the one word holding `answer`, by pdfplumber."""
    with pdfplumber.open(io.BytesIO(pdf)) as document:
        for number, page in enumerate(document.pages, 1):
            for word in page.extract_words():
                if answer in word["text"]:
                    w, h = float(page.width), float(page.height)
                    return number, [word["x0"] / w, word["top"] / h, word["x1"] / w, word["bottom"] / h]
    raise AssertionError(f"{answer} is not in the PDF")


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("evidence")
    folder = root / "corpus"
    folder.mkdir()
    cases = facts()
    pdfs = {}
    for n in range(5):
        part = cases[n * 10 : (n + 1) * 10]
        data = write_pdf([sentence for sentence, _ in part], seed=n)
        (folder / f"minutes-{n}.pdf").write_bytes(data)
        pdfs.update({answer: (f"minutes-{n}.pdf", data) for _, answer in part})
    (folder / "notes.md").write_text("# Notes\n\nThe tannery of Elwyn is a Markdown file.\n", encoding="utf-8")
    settings = Settings(store=root / "store", model="fake-hash-embedder", mid_tokens=64, semantic_min_tokens=8)
    embedder = FakeEmbedder(dimension=256)
    fake_index([folder], settings, embedder)
    engine = fake_engine(settings, embedder)
    return {"server": build_server(settings, engine_factory=lambda _: engine), "pdfs": pdfs, "folder": folder}


@pytest.mark.parametrize("tool", ["search_narrow", "search_broad"])
def test_the_marked_boxes_lie_on_the_answers_characters(corpus: dict[str, Any], tool: str) -> None:
    pdfs = corpus["pdfs"]

    async def scenario(client: Client) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        found = []
        for answer in pdfs:
            hits = (await call(client, tool, {"query": answer, "k": 3, "lexical": True}))["hits"]
            hit = next((h for h in hits if answer in h["text"]), None)
            if hit is not None:  # an answering hit: its page image must mark the answer
                found.append((answer, hit, await call(client, "page_image", {"chunk_id": hit["chunk_id"]})))
        return found

    answered = run(corpus["server"], scenario)
    assert len(answered) >= 0.9 * len(pdfs)
    right = 0
    for answer, hit, shown in answered:
        doc_id, data = pdfs[answer]
        page, box = answer_boxes(data, answer)
        assert shown["doc_id"] == hit["doc_id"] == doc_id
        assert page in shown["pages"]
        right += any(b["page"] == page and overlaps(b["box"], box) for b in shown["boxes"])
    assert right / len(answered) >= 0.90, f"{right} of {len(answered)}"


def test_a_sentence_is_marked_and_nothing_beside_it(corpus: dict[str, Any]) -> None:
    """A sentence's boxes hold its answer word and no other answer word of its page: the marking is the span's."""
    pdfs = corpus["pdfs"]
    answer = list(pdfs)[13]

    async def scenario(client: Client) -> dict[str, Any]:
        hit = (await call(client, "search_narrow", {"query": answer, "k": 1, "lexical": True}))["hits"][0]
        assert answer in hit["text"]
        return await call(client, "page_image", {"chunk_id": hit["chunk_id"]})

    shown = run(corpus["server"], scenario)
    doc_id, data = pdfs[answer]
    page, box = answer_boxes(data, answer)
    assert any(overlaps(b["box"], box) for b in shown["boxes"] if b["page"] == page)
    others = [answer_boxes(data, a) for a, (d, _) in pdfs.items() if d == doc_id and a != answer]
    for b in shown["boxes"]:
        assert not any(p == b["page"] and overlaps(b["box"], o) for p, o in others)


def test_the_image_is_a_png_within_max_pixels_and_crop_shows_the_region(corpus: dict[str, Any]) -> None:
    answer = list(pdfs := corpus["pdfs"])[5]

    async def scenario(client: Client) -> list[Any]:
        hit = (await call(client, "search_narrow", {"query": answer, "k": 1, "lexical": True}))["hits"][0]
        out = []
        for arguments in ({"max_pixels": 50_000}, {"max_pixels": 50_000, "crop": True}):
            result = await client.call_tool("page_image", {"chunk_id": hit["chunk_id"], **arguments})
            assert not result.is_error
            images = [c for c in result.content if c.type == "image"]
            out.append((result.structured_content, images))
        return out

    (whole, whole_images), (cropped, cropped_images) = run(corpus["server"], scenario)
    for structured, images in ((whole, whole_images), (cropped, cropped_images)):
        assert len(images) == len(structured["images"]) >= 1
        picture = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
        assert images[0].mime_type == "image/png" and picture.format == "PNG"
        assert picture.width * picture.height <= 50_000
        assert (picture.width, picture.height) == (structured["images"][0]["width"], structured["images"][0]["height"])
    assert whole["images"][0]["region"] == [0, 0, 1, 1]
    region = cropped["images"][0]["region"]
    assert (region[2] - region[0]) * (region[3] - region[1]) < 0.5
    assert all(region[0] <= b["box"][0] and b["box"][2] <= region[2] for b in cropped["boxes"])
    del pdfs


def test_formats_without_pages_and_changed_files_say_so(corpus: dict[str, Any], tmp_path: Path) -> None:
    async def scenario(client: Client) -> tuple[str, str, str]:
        note = (await call(client, "search_narrow", {"query": "Markdown file", "k": 1, "lexical": True}))["hits"][0]
        no_pages = await fail(client, "page_image", {"chunk_id": note["chunk_id"]})
        answer = list(corpus["pdfs"])[0]
        hit = (await call(client, "search_narrow", {"query": answer, "k": 1, "lexical": True}))["hits"][0]
        out_of_range = await fail(client, "page_image", {"chunk_id": hit["chunk_id"], "page": 999})
        path = corpus["folder"] / hit["doc_id"]
        original = path.read_bytes()
        path.write_bytes(original + b"\n% appended\n")
        try:
            changed = await fail(client, "page_image", {"chunk_id": hit["chunk_id"]})
        finally:
            path.write_bytes(original)
        return no_pages, out_of_range, changed

    no_pages, out_of_range, changed = run(corpus["server"], scenario)
    assert "has no pages to show" in no_pages and "\n" not in no_pages.strip()
    assert "page 999 is not in" in out_of_range
    assert "has changed since it was indexed" in changed


APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
"""A client that renders MCP Apps says so in its capabilities."""


def test_a_client_with_apps_gets_the_view_and_the_hits_text_one_without_gets_image_and_text(
    corpus: dict[str, Any],
) -> None:
    answer = list(corpus["pdfs"])[7]

    async def scenario(client: Client) -> tuple[Any, Any, Any, Any]:
        hit = (await call(client, "search_narrow", {"query": answer, "k": 1, "lexical": True}))["hits"][0]
        tool = next(t for t in (await client.list_tools()).tools if t.name == "page_image")
        listed = [r.uri for r in (await client.list_resources()).resources]
        view = (await client.read_resource(VIEW_URI)).contents[0]
        result = await client.call_tool("page_image", {"chunk_id": hit["chunk_id"]})
        await call(client, "page_image", {"chunk_id": hit["chunk_id"]})  # the structured content fits the schema
        return hit, tool.meta, (listed, view), result

    with_apps = run(corpus["server"], scenario, extensions=[APPS])
    without = run(corpus["server"], scenario)
    for _, meta, (listed, view), result in (with_apps, without):
        assert meta == {"ui": {"resourceUri": VIEW_URI}}
        assert VIEW_URI in listed and view.mime_type == APP_MIME_TYPE and "ui/initialize" in view.text
        assert not result.is_error
        assert [c.type for c in result.content][:2] == ["text", "image"]
    hit, _, _, result = with_apps
    assert result.structured_content["text"] == hit["text"] and answer in result.structured_content["text"]
    citation = result.structured_content["citation"]
    assert citation.startswith(hit["doc_id"]) and f"p. {answer_boxes(corpus['pdfs'][answer][1], answer)[0]}" in citation
    _, _, _, plain = without
    assert "text" not in plain.structured_content and "citation" not in plain.structured_content


def test_the_view_shows_a_real_page_image_result_with_the_answer_marked(corpus: dict[str, Any]) -> None:
    """The server's own result, as a host passes it to the view: the page drawn, the answer's box among the marks."""
    answer = list(corpus["pdfs"])[21]

    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        hit = (await call(client, "search_narrow", {"query": answer, "k": 1, "lexical": True}))["hits"][0]
        arguments = {"chunk_id": hit["chunk_id"], "max_pixels": 40_000}
        result = await client.call_tool("page_image", arguments)
        return arguments, result.model_dump(mode="json", by_alias=True, exclude_none=True)

    arguments, result = run(corpus["server"], scenario, extensions=[APPS])
    seen = run_view(result, arguments)
    page, box = answer_boxes(corpus["pdfs"][answer][1], answer)
    frames = [c for c in seen["dom"]["pages"]["children"] if c["className"] == "page"]
    assert len(frames) == len(result["structuredContent"]["images"]) >= 1
    shown = result["structuredContent"]["images"]
    frame = frames[[i["page"] for i in shown].index(page)]
    image, *marks = frame["children"]
    assert image["attributes"]["src"].startswith("data:image/png;base64,iVBOR")
    placed = [[float(m["style"][k].rstrip("%")) / 100 for k in ("left", "top", "width", "height")] for m in marks]
    as_boxes = [[x, y, x + w, y + h] for x, y, w, h in placed]  # the region is the whole page: fractions match
    assert any(overlaps(b, box) for b in as_boxes)
    assert answer in seen["dom"]["text"]["text"]
    assert seen["dom"]["citation"]["text"] == result["structuredContent"]["citation"]


def test_a_hit_on_a_formula_has_its_region_outlined_and_a_hit_on_prose_none(tmp_path: Path) -> None:
    data, at = formula_page()
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "bounds.pdf").write_bytes(data)
    settings = Settings(store=tmp_path / "store", model="fake-hash-embedder", mid_tokens=64, semantic_min_tokens=8)
    embedder = FakeEmbedder(dimension=256)
    fake_index([folder], settings, embedder)
    server = build_server(settings, engine_factory=lambda _: fake_engine(settings, embedder))

    async def scenario(client: Client) -> list[tuple[dict[str, Any], Any]]:
        out = []
        for query in ("bound holds for every mill", "survey of the valley counted"):
            hit = (await call(client, "search_narrow", {"query": query, "k": 1, "lexical": True}))["hits"][0]
            result = await client.call_tool("page_image", {"chunk_id": hit["chunk_id"]})
            out.append((hit, result))
        return out

    (formula_hit, on_formula), (_, on_prose) = run(server, scenario)
    assert "√γ" in formula_hit["text"]
    regions = on_formula.structured_content["formulas"]
    assert all(region["page"] == 1 for region in regions)
    assert any(on_line(tuple(region["box"]), at["inline"]) for region in regions)
    # every region outlined is one the hit's marked text touches
    marked = [b["box"] for b in on_formula.structured_content["boxes"]]
    assert all(any(overlaps(region["box"], box) for box in marked) for region in regions)
    assert "formula region(s) outlined" in on_formula.content[0].text
    assert "formulas" not in on_prose.structured_content
