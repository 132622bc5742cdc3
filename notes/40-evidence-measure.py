"""The figures of notes/40-evidence.md, on corpora the tests write (fake embedder, lexical search, real MCP client):
page_image boxes on the answer, section citations before and after the change, OCR quality and pages per second.
Run from the worktree root: PYTHONPATH=$PWD nice .venv/bin/python notes/40-evidence-measure.py"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import pypdfium2

from granrag_mcp.indexing.formats import pdf
from granrag_mcp.pages import ocr
from tests.pages.test_ocr import scanned
from tests.server import test_citations_across_sections as across
from tests.server.test_app import call, run
from tests.server.test_scanned_cited import ask, questions, serve
from tests.server.tools.test_evidence import answer_boxes, facts, overlaps, write_pdf


def page_image_rate(root: Path) -> None:
    folder = root / "evidence"
    folder.mkdir()
    cases, pdfs = facts(), {}
    for n in range(5):
        part = cases[n * 10 : (n + 1) * 10]
        data = write_pdf([s for s, _ in part], seed=n)
        (folder / f"minutes-{n}.pdf").write_bytes(data)
        pdfs.update({a: data for _, a in part})
    server, _ = serve(folder, root / "evidence-store")
    for tool in ("search_narrow", "search_broad", "hrr_search"):

        async def scenario(client, tool=tool):
            right = total = 0
            for answer, data in pdfs.items():
                arguments = {"query": answer, "k": 3} | ({} if tool == "hrr_search" else {"lexical": True})
                hit = next((h for h in (await call(client, tool, arguments))["hits"] if answer in h["text"]), None)
                if hit is None:
                    continue
                shown = await call(client, "page_image", {"chunk_id": hit["chunk_id"], "max_pixels": 20_000})
                page, box = answer_boxes(data, answer)
                total += 1
                right += any(b["page"] == page and overlaps(b["box"], box) for b in shown["boxes"])
            return right, total

        right, total = run(server, scenario)
        print(f"page_image {tool}: answer marked on its page for {right}/{total} answering hits")


def section_citations(root: Path) -> None:
    folder = root / "across"
    folder.mkdir()
    files, answers = across.make_corpus(random.Random(7))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    from granrag_mcp.settings import Settings
    from tests.fakes import FakeEmbedder
    from tests.helpers import fake_index
    from tests.server.test_app import SMALL_CHUNKS, fake_engine
    from granrag_mcp.server.app import build_server

    settings = Settings(store=root / "across-store", model="fake-hash-embedder", semantic_min_tokens=8, **SMALL_CHUNKS)
    embedder = FakeEmbedder(dimension=256)
    fake_index([folder], settings, embedder)
    server = build_server(settings, engine_factory=lambda _: fake_engine(settings, embedder))

    async def scenario(client):
        by_tool = {}
        for answer in answers:
            for tool, hits in (await across.answering(client, answer)).items():
                by_tool.setdefault(tool, []).extend((answer, h) for h in hits)
        return by_tool

    by_tool = run(server, scenario)
    for tool, hits in by_tool.items():
        new = sum(across.right(h, answers[a][1]) for a, h in hits)
        # before: the path of the section the text starts in, as the first of the listed sections (or the one cited)
        old = sum(((h.get("sections") or [h.get("section", [])])[0] == answers[a][1]) for a, h in hits)
        print(f"sections {tool}: right {new}/{len(hits)} now, {old}/{len(hits)} by the section it starts in")


def ocr_figures(root: Path) -> None:
    cases = questions()
    for kind in ("text", "scan"):
        (root / kind).mkdir()
    pdfs, pages = {}, 0
    for n in range(2):
        data = write_pdf([s for s, _, _ in cases[n * 6 : (n + 1) * 6]], seed=n)
        pdfs[f"minutes-{n}.pdf"] = data
        (root / "text" / f"minutes-{n}.pdf").write_bytes(data)
        (root / "scan" / f"minutes-{n}.pdf").write_bytes(scanned(data))
        pages += len(pypdfium2.PdfDocument(data))
    started = time.perf_counter()
    for path in sorted((root / "scan").iterdir()):
        pdf.extract(path, path.read_bytes())
    seconds = time.perf_counter() - started
    print(f"OCR: {pages} pages in {seconds:.1f} s = {pages / seconds:.2f} pages/s ({'+'.join(ocr.available_languages())})")
    for kind in ("text", "scan"):
        server, summary = serve(root / kind, root / f"{kind}-store")
        found = ask(server, cases, pdfs)
        print(
            f"{kind}: indexed {summary.added}/{len(pdfs)}, HR@5 {found['hit'] / len(cases):.3f}, pages cited right "
            f"{found['page']}/{found['hit']}, answer marked by page_image {found['marked']}/{found['hit']}"
        )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        page_image_rate(Path(folder))
        section_citations(Path(folder))
        ocr_figures(Path(folder))
