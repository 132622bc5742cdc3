"""The page as evidence: page_image's marks on the answer, section citations of hits that span sections (beside the
old rule: the section the hit starts in), and OCR (scanned PDFs at 150 dpi against the same PDFs with text: HR@5,
pages cited, pages per second). Corpora written at run time by the tests' own writers (reportlab PDFs, Word and
Markdown files); the fake embedder with lexical search answers, through the real MCP client.

    python benchmarks/suite/bench_evidence.py                      # all three parts, results/evidence.json
    python benchmarks/suite/bench_evidence.py --parts sections     # one part
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

PARTS = ("page_image", "sections", "ocr")


def page_image_rate(root: Path, out: dict[str, Any]) -> None:
    from tests.server.test_app import call, run
    from tests.server.test_scanned_cited import serve
    from tests.server.tools.test_evidence import answer_boxes, facts, overlaps, write_pdf

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
        out.setdefault("page_image", {})[tool] = {"marked": right, "answering": total}


def section_citations(root: Path, out: dict[str, Any]) -> None:
    from tests.server import test_citations_across_sections as across
    from tests.server.test_app import run

    folder = root / "across"
    folder.mkdir()
    files, answers = across.make_corpus(random.Random(7))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    from granrag_mcp.server.app import build_server
    from granrag_mcp.settings import Settings
    from tests.fakes import FakeEmbedder
    from tests.helpers import fake_index
    from tests.server.test_app import SMALL_CHUNKS, fake_engine

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
        out.setdefault("sections", {})[tool] = {"right": new, "by_start": old, "answering": len(hits)}


def ocr_figures(root: Path, out: dict[str, Any]) -> None:
    import pypdfium2

    from granrag_mcp.indexing.formats import pdf
    from granrag_mcp.pages import ocr
    from tests.pages.test_ocr import scanned
    from tests.server.test_scanned_cited import ask, questions, serve
    from tests.server.tools.test_evidence import write_pdf

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
    out["ocr"] = {
        "pages": pages,
        "seconds": round(seconds, 2),
        "pages_per_second": round(pages / seconds, 3),
        "languages": ocr.available_languages(),
    }
    for kind in ("text", "scan"):
        server, summary = serve(root / kind, root / f"{kind}-store")
        found = ask(server, cases, pdfs)
        out["ocr"][kind] = {
            "indexed": summary.added,
            "files": len(pdfs),
            "hr_at_5": round(found["hit"] / len(cases), 3),
            "pages_cited_right": found["page"],
            "marked": found["marked"],
            "answering": found["hit"],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    _common.offline_env()
    out: dict[str, Any] = {"load_average_start": _common.load_average()}
    steps = {"page_image": page_image_rate, "sections": section_citations, "ocr": ocr_figures}
    with tempfile.TemporaryDirectory() as folder:
        for part in args.parts.split(","):
            steps[part](Path(folder), out)
    out["load_average_end"] = _common.load_average()
    out["machine"] = _common.machine()
    _common.finish("evidence", out, save=not args.no_save)


if __name__ == "__main__":
    main()
