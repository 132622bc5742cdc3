"""Extraction throughput per format, and the library choices behind two of them, on SQuAD-A articles written as
real files (reportlab, python-docx, python-pptx, openpyxl, stdlib writers for the rest).

Per format: source MB per second and, for paged formats, pages per second, through the registry's extractor
(median of interleaved rounds). Then PDF text by pypdfium2 (speed, and word-sequence similarity to the source
text), pdfplumber's table finder per page, and HTML by the html.parser extractor on ordinary pages and on pages of
unclosed tags (the hostile input). Usage:

    .venv/bin/python benchmarks/suite/bench_formats.py [--articles 12] [--rounds 3]

Prints one JSON object and writes benchmarks/results/formats.json (--smoke: two articles, one round, no file).
"""

from __future__ import annotations

import argparse
import difflib
import html as html_escape
import io
import json
import statistics
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common
from benchmarks.corpora import make_mixed_corpus, squad_corpus
from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.formats import html as html_format


def pptx_bytes(title: str, paragraphs: list[str]) -> bytes:
    import pptx

    deck = pptx.Presentation()
    for name, group in make_mixed_corpus.parts(paragraphs):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"{title}: {name}"
        slide.placeholders[1].text = "\n".join(group)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def xlsx_bytes(title: str, paragraphs: list[str]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = title[:31].replace("/", " ")
    sheet.append(["number", "paragraph"])
    for number, paragraph in enumerate(paragraphs):
        sheet.append([number, paragraph])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def csv_bytes(title: str, paragraphs: list[str]) -> bytes:
    import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["number", "paragraph"])
    writer.writerows(enumerate(paragraphs))
    return buffer.getvalue().encode("utf-8")


def html_bytes(title: str, paragraphs: list[str]) -> bytes:
    body = "".join(
        f"<h2>{name}</h2>" + "".join(f"<p>{html_escape.escape(p)}</p>" for p in group)
        for name, group in make_mixed_corpus.parts(paragraphs)
    )
    return f"<html><head><title>{html_escape.escape(title)}</title></head><body>{body}</body></html>".encode()


def epub_bytes(title: str, paragraphs: list[str]) -> bytes:
    container = (
        '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="content.opf"/></rootfiles></container>'
    )
    chapters = make_mixed_corpus.parts(paragraphs)
    manifest = "".join(
        f'<item id="c{n}" href="c{n}.xhtml" media-type="application/xhtml+xml"/>' for n in range(len(chapters))
    )
    spine = "".join(f'<itemref idref="c{n}"/>' for n in range(len(chapters)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("META-INF/container.xml", container)
        archive.writestr(
            "content.opf",
            f'<package xmlns="http://www.idpf.org/2007/opf"><manifest>{manifest}</manifest>'
            f"<spine>{spine}</spine></package>",
        )
        for n, (name, group) in enumerate(chapters):
            archive.writestr(f"c{n}.xhtml", html_bytes(name, group))
    return buffer.getvalue()


def ipynb_bytes(title: str, paragraphs: list[str]) -> bytes:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": f"# {title}"}]
    cells += [{"cell_type": "markdown", "metadata": {}, "source": p} for p in paragraphs]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


WRITERS: dict[str, Callable[[str, list[str]], bytes]] = {
    ".txt": lambda title, paragraphs: "\n\n".join(paragraphs).encode(),
    ".md": make_mixed_corpus.markdown_bytes,
    ".pdf": make_mixed_corpus.pdf_bytes,
    ".html": html_bytes,
    ".docx": make_mixed_corpus.docx_bytes,
    ".pptx": pptx_bytes,
    ".xlsx": xlsx_bytes,
    ".csv": csv_bytes,
    ".epub": epub_bytes,
    ".ipynb": ipynb_bytes,
}


def timed(function: Callable[..., object], *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    value = function(*args)
    return time.perf_counter() - start, value


def similarity(expected: str, found: str) -> float:
    return difflib.SequenceMatcher(None, expected.split(), found.split(), autojunk=False).ratio()


def throughput(files: dict[str, list[tuple[str, bytes]]], rounds: int) -> dict[str, dict[str, float]]:
    seconds: dict[str, list[float]] = {suffix: [] for suffix in files}
    pages: dict[str, int] = {}
    for suffix, items in files.items():  # a warm-up call each: importing a format's library is not extraction
        EXTRACTORS[suffix](Path(items[0][0]), items[0][1])
    for _ in range(rounds):
        for suffix, items in files.items():  # interleaved: every format once per round
            total = 0.0
            count = 0
            for name, data in items:
                elapsed, extracted = timed(EXTRACTORS[suffix], Path(name), data)
                total += elapsed
                count += len(extracted.page_starts)  # type: ignore[attr-defined]
            seconds[suffix].append(total)
            pages[suffix] = count
    out = {}
    for suffix, times in seconds.items():
        median = statistics.median(times)
        megabytes = sum(len(data) for _, data in files[suffix]) / 2**20
        row = {"files": len(files[suffix]), "MB": round(megabytes, 3), "MB_per_s": round(megabytes / median, 2)}
        if pages[suffix]:
            row |= {"pages": pages[suffix], "pages_per_s": round(pages[suffix] / median, 1)}
        out[suffix] = row
    return out


def pdf_libraries(pdfs: list[tuple[str, bytes]], rounds: int) -> dict[str, dict[str, float]]:
    import pypdfium2

    def by_pdfium(data: bytes) -> list[str]:
        document = pypdfium2.PdfDocument(data)
        try:
            return [document[n].get_textpage().get_text_bounded() for n in range(len(document))]
        finally:
            document.close()

    out = {}
    readers = {"pypdfium2": by_pdfium}
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(rounds):
        for name, reader in readers.items():
            times[name].append(sum(timed(reader, data)[0] for _, data in pdfs))
    pages = sum(len(by_pdfium(data)) for _, data in pdfs)
    for name, reader in readers.items():
        quality = statistics.mean(similarity(source, "\n".join(reader(data))) for source, data in pdfs)
        out[name] = {
            "pages_per_s": round(pages / statistics.median(times[name]), 1),
            "word_similarity": round(quality, 4),
        }
    import pdfplumber

    elapsed, _ = timed(lambda: [len(p.find_tables()) for _, d in pdfs for p in pdfplumber.open(io.BytesIO(d)).pages])
    out["pdfplumber_find_tables"] = {"pages_per_s": round(pages / elapsed, 1)}
    return out


HOSTILE_TAGS = 300_000
"""The hostile page's full size, as bench_hostile_inputs.py indexes it."""


def html_extractors(pages: list[tuple[str, bytes]], rounds: int, deep_tags: tuple[int, ...]) -> dict[str, object]:
    candidates = {"html.parser": html_format.markup_text}
    markups = [data.decode() for _, data in pages]
    for function in candidates.values():
        function(markups[0])  # warm-up: imports
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            times[name].append(sum(timed(function, m)[0] for m in markups))
    megabytes = sum(len(m) for m in markups) / 2**20
    out: dict[str, object] = {}
    for name, function in candidates.items():
        texts = [function(m) for m in markups]
        quality = statistics.mean(similarity(source, t.text) for (source, _), t in zip(pages, texts))
        deep = {}
        for tags in deep_tags:
            markup = "<div><span>x " * tags
            elapsed, _ = timed(function, markup)
            deep[f"{tags}_unclosed_tag_pairs_s"] = round(elapsed, 2)
        out[name] = {
            "MB_per_s": round(megabytes / statistics.median(times[name]), 2),
            "word_similarity_to_source": round(quality, 4),
            "sections": sum(len(t.sections) for t in texts),
            **deep,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="two articles, one round, nothing saved")
    args = parser.parse_args()
    _common.offline_env()
    articles, rounds = (2, 1) if args.smoke else (args.articles, args.rounds)
    documents, _ = squad_corpus.load()
    chosen = sorted(documents.items())[:articles]
    files = {
        suffix: [(f"{Path(doc_id).stem}{suffix}", write(make_mixed_corpus.title_of(doc_id), text.split("\n\n")))
                 for doc_id, text in chosen]
        for suffix, write in WRITERS.items()
    }  # fmt: skip
    sources = [text for _, text in chosen]
    result = {
        "revision": _common.git_revision(),
        "machine": _common.machine(),
        "articles": articles,
        "rounds": rounds,
        "throughput": throughput(files, rounds),
        "pdf_text": pdf_libraries(list(zip(sources, [d for _, d in files[".pdf"]])), rounds),
        "html": html_extractors(
            list(zip(sources, [d for _, d in files[".html"]])),
            rounds,
            (2_000,) if args.smoke else (5_000, 10_000, 20_000, HOSTILE_TAGS),
        ),
    }
    if not args.smoke:
        _common.save_result("formats", result)
    _common.emit(result)


if __name__ == "__main__":
    main()
