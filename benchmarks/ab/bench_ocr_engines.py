"""OCR engines side by side on the same scanned pages: Tesseract as the project runs it (`pages.ocr`, from the OS
packages) against engines whose models come in their wheels (RapidOCR), each engine in the Python that has it
installed (`--engine NAME=PYTHON`), so a candidate is tried from a venv of its own and never installed beside the
product.

The pages: English, SQuAD-A articles written as PDFs by the mixed-format corpus's writer and drawn at 150 dpi with no
text layer (as `bench_ocr` makes them), the truth each text PDF's own text layer; Chinese and Hindi, XQuAD-A contexts
drawn by Pillow (raqm shapes the Devanagari) at 11 pt on A4 pages at 150 dpi and saved as images only, the truth the
lines drawn. Every engine is given the same image of each page, drawn at the resolution the indexer gives OCR.

Per language and engine: character error rate (Levenshtein distance over the page text with whitespace removed,
divided by the truth's length: an engine that reads nothing scores 1.0), pages per second with one thread, the
model load seconds, the peak RSS of the engine's process (or of the Tesseract it starts); the languages run in turn, each engine on the language's pages before the next language, so a
change of load falls on every engine. An engine whose Python lacks it is reported as not installed.

    python benchmarks/ab/bench_ocr_engines.py --engine rapidocr-onnxruntime=/tmp/ocrcmp/bin/python \
        --engine rapidocr=/tmp/ocrcmp3/bin/python
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

LANGUAGES = ("en", "zh", "hi")
XQUAD = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "xquad-a"
FONTS = {  # Debian's fonts-wqy-microhei and fonts-lohit-deva
    "zh": Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"),
    "hi": Path("/usr/share/fonts/truetype/lohit-devanagari/Lohit-Devanagari.ttf"),
}
SCAN_DPI = 150
READ_DPI = 300  # `pages.ocr.DPI`, written here so an engine's own venv need not import the package
BODY_PT = 11
MARGIN_IN = 1.0
THREADS = "1"
"""Each engine on one thread: the index run reads pages in one worker per core, one page each."""


# --- the child: one engine reading a list of pages -------------------------------------------------------------


def tesseract_reader(language: str) -> Any:
    from granrag_mcp.pages import ocr

    languages = ocr.languages_for(language)
    return lambda image: ocr.text_of(ocr.read_image(image, languages))


def rapidocr_onnxruntime_reader(language: str) -> Any:
    import numpy as np
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)

    def read(image: Any) -> str:
        found, _ = engine(np.array(image.convert("RGB")))
        return "\n".join(text for _, text, _ in found or [])

    return read


def rapidocr_reader(language: str) -> Any:
    import numpy as np
    from rapidocr import RapidOCR

    threads = {"EngineConfig.onnxruntime.intra_op_num_threads": 1, "EngineConfig.onnxruntime.inter_op_num_threads": 1}
    engine = RapidOCR(params=threads)

    def read(image: Any) -> str:
        return "\n".join(engine(np.array(image.convert("RGB"))).txts or ())

    return read


READERS = {
    "tesseract": tesseract_reader,
    "rapidocr-onnxruntime": rapidocr_onnxruntime_reader,
    "rapidocr": rapidocr_reader,
}


def read_pages(engine: str, language: str, files: list[str]) -> dict[str, Any]:
    """Every page of the files read by one engine: the texts, the seconds reading took, the model load seconds."""
    import pypdfium2

    started = time.perf_counter()
    try:
        read = READERS[engine](language)
    except ImportError as error:
        return {"error": f"not installed ({error})"}
    loaded = time.perf_counter() - started
    texts, seconds = [], 0.0
    for name in files:
        document = pypdfium2.PdfDocument(name)
        try:
            for number in range(len(document)):
                image = document[number].render(scale=READ_DPI / 72).to_pil()
                begun = time.perf_counter()
                try:
                    texts.append(read(image))
                except Exception as error:  # noqa: BLE001 - an engine that fails a page scores it as unread
                    texts.append("")
                    print(f"{engine}: {name} page {number + 1}: {error}", file=sys.stderr)
                seconds += time.perf_counter() - begun
        finally:
            document.close()
    import resource

    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return {
        "texts": texts,
        "seconds": round(seconds, 2),
        "load_seconds": round(loaded, 2),
        "peak_rss_mb": peak // 1024,  # this process or the largest engine process it started (Tesseract's)
        "version": version(engine),
    }


def version(engine: str) -> str:
    """The engine's version: the package's, or Tesseract's own first line."""
    if engine == "tesseract":
        done = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, check=False)
        return (done.stdout or done.stderr).splitlines()[0] if (done.stdout or done.stderr) else "unknown"
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version(engine)
    except PackageNotFoundError:
        return "unknown"


# --- the parent: pages, truths, the engines in turn, the scores ---------------------------------------------------


def image_pdf(images: list[Any]) -> bytes:
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", save_all=True, append_images=images[1:], resolution=SCAN_DPI)
    return buffer.getvalue()


def english_pages(args: argparse.Namespace) -> tuple[bytes, list[str]]:
    """SQuAD-A articles as text PDFs drawn at 150 dpi (`bench_ocr.rasterized`), and each page's text layer."""
    import pypdfium2

    from benchmarks.corpora import make_mixed_corpus, squad_corpus
    from benchmarks.suite.bench_ocr import rasterized

    documents, _ = squad_corpus.load(args.squad)
    source = pypdfium2.PdfDocument.new()
    for doc in sorted(documents)[: args.articles]:
        paragraphs = documents[doc].split("\n\n")[: args.paragraphs or None]
        source.import_pages(
            pypdfium2.PdfDocument(make_mixed_corpus.pdf_bytes(make_mixed_corpus.title_of(doc), paragraphs))
        )
    keep = pypdfium2.PdfDocument.new()
    keep.import_pages(source, list(range(min(args.pages, len(source)))))
    buffer = io.BytesIO()
    keep.save(buffer)
    truths = [keep[n].get_textpage().get_text_bounded() for n in range(len(keep))]
    return rasterized(buffer.getvalue()), truths


def drawn_pages(language: str, pages: int) -> tuple[bytes, list[str]]:
    """XQuAD-A contexts drawn on A4 pages at 150 dpi, a blank line between paragraphs; the lines drawn, per page."""
    from PIL import Image, ImageDraw, ImageFont

    contexts: list[str] = []
    for article in json.loads((XQUAD / f"xquad-a.{language}.json").read_text(encoding="utf-8"))["data"]:
        contexts += [paragraph["context"] for paragraph in article["paragraphs"]]
    font = ImageFont.truetype(str(FONTS[language]), round(BODY_PT * SCAN_DPI / 72), layout_engine=ImageFont.Layout.RAQM)
    width, height = round(8.27 * SCAN_DPI), round(11.69 * SCAN_DPI)
    margin, step = round(MARGIN_IN * SCAN_DPI), round(BODY_PT * 1.5 * SCAN_DPI / 72)
    images: list[Any] = []
    truths: list[str] = []
    paragraphs = iter(contexts)
    while len(images) < pages:
        picture = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(picture)
        y, lines = margin, []
        for paragraph in paragraphs:
            for line in wrapped(paragraph, font, width - 2 * margin, by_character=language == "zh"):
                if y + step > height - margin:
                    break
                draw.text((margin, y), line, font=font, fill=0)
                lines.append(line)
                y += step
            y += step
            if y + 2 * step > height - margin:
                break
        if not lines:
            break
        images.append(picture.convert("RGB"))
        truths.append("\n".join(lines))
    return image_pdf(images), truths


def wrapped(text: str, font: Any, width: int, by_character: bool) -> list[str]:
    units = list(text) if by_character else text.split()
    joiner = "" if by_character else " "
    lines, line = [], ""
    for unit in units:
        candidate = f"{line}{joiner}{unit}" if line else unit
        if line and font.getlength(candidate) > width:
            lines.append(line)
            line = unit
        else:
            line = candidate
    return [*lines, line] if line else lines


def error_rate(truth: str, read: str) -> float:
    from rapidfuzz.distance import Levenshtein

    truth, read = "".join(truth.split()), "".join(read.split())
    return Levenshtein.distance(truth, read) / max(len(truth), 1)


def run_engine(python: str, engine: str, language: str, pdf: Path) -> dict[str, Any]:
    """One engine on one language's pages, in its own Python, one thread."""
    env = {
        **os.environ,
        "OMP_THREAD_LIMIT": THREADS,
        "OMP_NUM_THREADS": THREADS,
        "PYTHONPATH": str(Path(__file__).parents[2]),
    }
    done = subprocess.run(
        [python, __file__, "--read", engine, language, str(pdf)], capture_output=True, text=True, env=env, timeout=3600
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read", nargs=3, metavar=("ENGINE", "LANGUAGE", "PDF"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--engine",
        action="append",
        default=[],
        help=f"NAME=PYTHON: an engine of {', '.join(READERS)} and the Python it is installed in (tesseract: this one)",
    )
    parser.add_argument("--languages", default=",".join(LANGUAGES), help=f"comma-separated, of {', '.join(LANGUAGES)}")
    parser.add_argument("--pages", type=int, default=6, help="per language")
    parser.add_argument("--squad", type=Path, default=None, help="SQuAD-A file (default: the benchmarks')")
    parser.add_argument("--articles", type=int, default=2)
    parser.add_argument("--paragraphs", type=int, default=0, help="of each article (0: all)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    if args.read:
        print(json.dumps(read_pages(args.read[0], args.read[1], [args.read[2]])))
        return

    from benchmarks import _common
    from benchmarks.corpora import squad_corpus

    _common.offline_env()
    args.squad = args.squad or squad_corpus.DEFAULT_SQUAD
    engines = {"tesseract": sys.executable} | dict(item.split("=", 1) for item in args.engine)
    out: dict[str, Any] = {"command": " ".join(sys.argv[1:]), "load_average_start": _common.load_average()}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for language in args.languages.split(","):
            scan, truths = english_pages(args) if language == "en" else drawn_pages(language, args.pages)
            pdf = Path(folder) / f"{language}.pdf"
            pdf.write_bytes(scan)
            chars = sum(len("".join(t.split())) for t in truths)
            results[language] = {"pages": len(truths), "characters": chars}
            for engine, python in engines.items():
                read = run_engine(python, engine, language, pdf)
                if "texts" in read:
                    rates = [error_rate(t, r) for t, r in zip(truths, read["texts"])]
                    read = {
                        "cer": round(sum(rates) / len(rates), 4),
                        "cer_worst_page": round(max(rates), 4),
                        "pages_per_second": round(len(truths) / read["seconds"], 3) if read["seconds"] else None,
                        "load_seconds": read["load_seconds"],
                        "peak_rss_mb": read["peak_rss_mb"],
                        "version": read["version"],
                    }
                results[language][engine] = read
    out["languages"] = results
    out["load_average_end"] = _common.load_average()
    out["machine"] = _common.machine()
    _common.finish("ocr_engines", out, save=not args.no_save)


if __name__ == "__main__":
    main()
