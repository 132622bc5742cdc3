"""Scanned PDFs against the same PDFs with text: SQuAD-A articles written as PDFs by the mixed-format corpus's
writer (`make_mixed_corpus.pdf_bytes`, reportlab), each also drawn at 150 dpi and saved as images only (pypdfium2
renders, Pillow writes; no text layer). Both folders are indexed by `run_index` with the bundled model and no flag,
the scans read by OCR in the run's extraction workers; the same questions are asked of both stores.

Per store: files indexed, HR@5 of the default search (weighted RRF at mid, k=5: a hit of the answer's document
whose text holds the answer, whitespace aside), pages cited right for the first such hit (the truth is the page
pypdf, not the indexer, finds the answer on in the text PDF). For the scans: pages, the run's extraction seconds
and pages per second with `--workers` extraction workers, and the peak RSS of the index run and of its largest
child (an extraction worker or a Tesseract it started), each index run in a process of its own.

`--long-pages N` adds one scanned PDF of N pages (the corpus's pages over again, bilevel at 150 dpi as a document
scanner writes them, to stay under GRANRAG_MAX_FILE_BYTES) indexed alone with the fake embedder: the memory of a
long scan read page by page, and its pages per second.

    python benchmarks/suite/bench_ocr.py                              # 4 articles, results/ocr.json
    python benchmarks/suite/bench_ocr.py --parts long --long-pages 500
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import multiprocessing
import random
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import make_mixed_corpus, squad_corpus  # noqa: E402

PARTS = ("quality", "long")
K = 5
SCAN_DPI = 150


def rasterized(data: bytes, dpi: int = SCAN_DPI, mode: str = "RGB") -> bytes:
    """The PDF's pages drawn at `dpi` and saved as a PDF of images (`mode` "1": bilevel), with no text layer."""
    import pypdfium2

    document = pypdfium2.PdfDocument(data)
    try:
        images = [document[i].render(scale=dpi / 72).to_pil().convert(mode) for i in range(len(document))]
    finally:
        document.close()
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", save_all=True, append_images=images[1:], resolution=dpi)
    return buffer.getvalue()


def index_measured(folder: Path, store: Path, workers: int, fake: bool) -> dict[str, Any]:
    """An index run of `folder` in this (child) process: its summary's figures and the peak RSS of this process and
    of its largest child."""
    from granrag_mcp.engine import run_index
    from granrag_mcp.settings import Settings

    settings = Settings(store=store, graph=False, extract_workers=workers)
    embedder = None
    if fake:
        from tests.fakes import FakeEmbedder

        settings = settings.model_copy(update={"model": "fake-hash-embedder"})
        embedder = FakeEmbedder(dimension=256)
    started = time.perf_counter()
    summary = run_index([folder], settings, quiet=True, embedder=embedder)
    return {
        "indexed": summary.added,
        "failed": summary.failed,
        "seconds": round(time.perf_counter() - started, 2),
        "extract_seconds": round(summary.seconds.get("extract", 0.0), 2),
        "peak_rss_mb_run": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "peak_rss_mb_largest_child": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
    }


def in_child(folder: Path, store: Path, workers: int, fake: bool = False) -> dict[str, Any]:
    """`index_measured` in a fresh process, so its peak RSS is the run's alone."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(index_measured, folder, store, workers, fake).result()


def squashed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def ask(store: Path, documents: dict[str, str], questions: list[Any], pdfs: dict[str, bytes]) -> dict[str, Any]:
    """HR@K and pages cited right over the questions, on one store."""
    from benchmarks.suite.bench_citations import pdf_pages, truth_page
    from granrag_mcp.engine import Engine
    from granrag_mcp.retrieval.citations import cite_chunks
    from granrag_mcp.retrieval.rrf import search_rrf
    from granrag_mcp.settings import Settings

    view = Engine(Settings(store=store), load_reranker_now=False).view()
    truth = {name: pdf_pages(data) for name, data in pdfs.items()}
    hit = cited = 0
    for q in questions:
        name = f"{Path(q.doc_id).stem}.pdf"
        answer = squashed(documents[q.doc_id][q.answer_start : q.answer_end])
        hits = [h.chunk for h in search_rrf(view, q.question, K, level="mid")]
        holder = next((c for c in hits if c.doc_id == name and answer in squashed(c.text)), None)
        if holder is None:
            continue
        hit += 1
        pages = cite_chunks(view, [holder])[holder.id].pages
        page = truth_page(truth[name], documents, q)
        cited += int(page is not None and pages is not None and pages[0] <= page <= pages[1])
    return {
        "questions": len(questions),
        f"hr_at_{K}": round(hit / len(questions), 3) if questions else None,
        "answering": hit,
        "pages_cited_right": cited,
        "page_citation": round(cited / hit, 3) if hit else None,
    }


def corpus(args: argparse.Namespace) -> tuple[dict[str, str], list[Any], dict[str, bytes]]:
    """The first `--articles` articles (their first `--paragraphs` paragraphs) as text PDFs, and a sample of the
    questions whose answer lies in the kept paragraphs."""
    documents, questions = squad_corpus.load(args.squad)
    chosen = sorted(documents)[: args.articles]
    kept = {doc: "\n\n".join(documents[doc].split("\n\n")[: args.paragraphs or None]) for doc in chosen}
    pdfs = {
        f"{Path(doc).stem}.pdf": make_mixed_corpus.pdf_bytes(make_mixed_corpus.title_of(doc), text.split("\n\n"))
        for doc, text in kept.items()
    }
    inside = [q for q in questions if q.doc_id in kept and q.answer_end <= len(kept[q.doc_id])]
    sample = random.Random(0).sample(inside, min(args.questions, len(inside)))
    return kept, sample, pdfs


def quality(root: Path, args: argparse.Namespace, out: dict[str, Any]) -> None:
    import pypdfium2

    from granrag_mcp.pages import ocr

    documents, questions, pdfs = corpus(args)
    pages = 0
    for kind in ("text", "scan"):
        (root / kind).mkdir()
    for name, data in pdfs.items():
        (root / "text" / name).write_bytes(data)
        (root / "scan" / name).write_bytes(rasterized(data))
        pages += len(pypdfium2.PdfDocument(data))
    result: dict[str, Any] = {"files": len(pdfs), "pages": pages, "languages": ocr.available_languages()}
    for kind in ("text", "scan"):  # the text PDFs first: the scans' run is the slower one, not warmed by it
        run = in_child(root / kind, root / f"{kind}-store", args.workers)
        result[kind] = run | ask(root / f"{kind}-store", documents, questions, pdfs)
    scan = result["scan"]
    scan["pages_per_second"] = round(pages / scan["extract_seconds"], 3) if scan["extract_seconds"] else None
    result["hr_gap"] = round(result["text"][f"hr_at_{K}"] - scan[f"hr_at_{K}"], 3)
    out["quality"] = result


def long_scan(root: Path, args: argparse.Namespace, out: dict[str, Any]) -> None:
    """One scanned PDF of `--long-pages` pages, indexed alone with the fake embedder."""
    import pypdfium2

    _, _, pdfs = corpus(args)
    source = pypdfium2.PdfDocument.new()
    for data in pdfs.values():
        source.import_pages(pypdfium2.PdfDocument(data))
    pattern = [n % len(source) for n in range(args.long_pages)]
    long = pypdfium2.PdfDocument.new()
    long.import_pages(source, pattern)
    buffer = io.BytesIO()
    long.save(buffer)
    folder = root / "long"
    folder.mkdir()
    scan = rasterized(buffer.getvalue(), mode="1")
    (folder / "long-scan.pdf").write_bytes(scan)
    run = in_child(folder, root / "long-store", 1, fake=True)
    run["pages"] = args.long_pages
    run["file_mb"] = round(len(scan) / 2**20, 1)
    run["pages_per_second"] = round(args.long_pages / run["extract_seconds"], 3) if run["extract_seconds"] else None
    out["long"] = run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--articles", type=int, default=4)
    parser.add_argument("--paragraphs", type=int, default=0, help="of each article (0: all)")
    parser.add_argument("--questions", type=int, default=200, help="sampled (seed 0) from the kept paragraphs")
    parser.add_argument("--workers", type=int, default=2, help="extraction workers of the index runs")
    parser.add_argument("--parts", default="quality", help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--long-pages", type=int, default=500)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    _common.offline_env()
    from granrag_mcp.pages import ocr

    if (missing := ocr.missing()) is not None:
        print(missing, file=sys.stderr)
        return
    out: dict[str, Any] = {"command": " ".join(sys.argv[1:]), "load_average_start": _common.load_average()}
    steps = {"quality": quality, "long": long_scan}
    with tempfile.TemporaryDirectory() as folder:
        for part in args.parts.split(","):
            steps[part](Path(folder), args, out)
    out["load_average_end"] = _common.load_average()
    out["machine"] = _common.machine()
    _common.finish("ocr", out, save=not args.no_save)


if __name__ == "__main__":
    main()
