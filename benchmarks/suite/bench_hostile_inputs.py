"""Peak memory of `granrag-mcp index` (the real model, default limits) on inputs that once drove it to gigabytes:
one 500 MB text file, one 4 MB file of a million tiny sentences, 100,000 small files and a 4.2 MB HTML file of
300,000 unclosed tags.

Every case indexes into one store that already holds a small corpus; after each, `status` and `search` must
still answer and the corpus must still be there (nothing lost, the store servable). Peak RSS is the child's own
high-water mark (its VmHWM, read by the child as it exits: `ru_maxrss` from wait4 can carry this parent's peak
through fork); a watch kills a run that passes `--kill-gib`, so a regression cannot hurt the machine. Usage:

    .venv/bin/python benchmarks/suite/bench_hostile_inputs.py [--cases big_file tiny_sentences many_files html_unclosed]

`--cases at_sentence_cap` adds one document of exactly 100,000 sentences, the most the default limits let in, and
`--cases files_at_cap` 200,000 small files, the most one run takes (`GRANRAG_MAX_FILES`). `--cases documents` runs
the hostile documents at full size: zip bombs (a DOCX or PPTX image part, an XLSX theme, an EPUB container that
unpack to 1.5 GiB), a 480 MiB EPUB chapter, 3 million empty DOCX paragraphs, a sheet declaring A1:XFD1048576, a
24 MB generated Python module and 5 MB of `x=[1,1,...]`, `<a b='` 60,000 times, a hidden list of 300,000 unclosed
items, a PDF bookmark of 150,000 words over a page of 360,000, and a sheet whose every row is 16,384 cells wide
(stopped by the worker's time limit). `worker_peak_rss_mib` is the most an extraction worker held when the watch looked (every 0.2 s).
Prints one JSON object and writes benchmarks/results/hostile_inputs.json (the cases run replace their figures).
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

BASE_TEXT = "The lighthouse keeper logged every ship that passed the northern cape. " * 30


def write_big_file(folder: Path, megabytes: int = 500) -> Path:
    folder.mkdir(parents=True)
    line = b"A very large file repeats this line about harbour cranes and tides again and again.\n"
    block = line * (1024 * 1024 // len(line) + 1)
    with open(folder / "big.txt", "wb") as out:
        for _ in range(megabytes):
            out.write(block[: 1024 * 1024])
    return folder


def write_tiny_sentences(folder: Path, count: int = 1_000_000) -> Path:
    folder.mkdir(parents=True)
    (folder / "tiny.txt").write_text("Go. " * count, encoding="utf-8")
    return folder


def write_many_files(folder: Path, count: int = 100_000) -> Path:
    for number in range(count):
        sub = folder / f"part{number // 1000:03d}"
        if number % 1000 == 0:
            sub.mkdir(parents=True)
        (sub / f"note{number:06d}.md").write_text(
            f"Note {number} records that crate {number * 7 % 9973} left dock {number % 40}.\n", encoding="utf-8"
        )
    return folder


def write_sentence_cap(folder: Path, count: int = 100_000) -> Path:
    """One document of exactly the default GRANRAG_MAX_SENTENCES: the largest one document the limits let in."""
    folder.mkdir(parents=True)
    sentences = (f"Note {n} records that crate {n * 7 % 9973} left dock {n % 40}." for n in range(count))
    (folder / "capped.txt").write_text(" ".join(sentences) + "\n", encoding="utf-8")
    return folder


def write_unclosed_html(folder: Path, count: int = 300_000) -> Path:
    """A 4.2 MB HTML file of 300,000 nested tags that are never closed: the tree the parser must hold is deep."""
    folder.mkdir(parents=True)
    (folder / "unclosed.html").write_text("<html><body>" + "<div><span>ab " * count, encoding="utf-8")
    return folder


GIB = 1024**3


def _office(kind: str) -> bytes:
    """A small valid DOCX, PPTX or XLSX, as its library writes it."""
    buffer = io.BytesIO()
    if kind == "docx":
        import docx

        document = docx.Document()
        document.add_paragraph("The crane report of the northern harbour.")
        document.save(buffer)
    elif kind == "pptx":
        import pptx

        deck = pptx.Presentation()
        deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Harbour cranes"
        deck.save(buffer)
    else:
        import openpyxl

        workbook = openpyxl.Workbook()
        workbook.active.append(["Crane", "Lifts"])
        workbook.active.append(["North", 40])
        workbook.save(buffer)
    return buffer.getvalue()


def _zip_with(target: Path, data: bytes, name: str, size: int, chunk: bytes = b"\0" * (1024 * 1024)) -> None:
    """`data` (a zip) written to `target` with member `name` replaced by (or added as) `size` bytes of `chunk`,
    streamed: a part that unpacks to gigabytes from a file of a megabyte or two."""
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename != name:
                out.writestr(info.filename, source.read(info))
        with out.open(name, "w", force_zip64=True) as member:
            for _ in range(size // len(chunk)):
                member.write(chunk)


def write_office_bomb(folder: Path, kind: str, member: str) -> Path:
    folder.mkdir(parents=True)
    _zip_with(folder / f"bomb.{kind}", _office(kind), member, 3 * GIB // 2)
    return folder


def _epub(container: bytes | None = None, chapter: bytes = b"<html><body><p>One chapter.</p></body></html>") -> dict:
    return {
        "mimetype": b"application/epub+zip",
        "META-INF/container.xml": container
        or b'<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        b'<rootfile full-path="content.opf"/></rootfiles></container>',
        "content.opf": b'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf"><manifest>'
        b'<item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c"/>'
        b"</spine></package>",
        "c.xhtml": chapter,
    }


def _write_epub(target: Path, parts: dict, big: str, size: int, chunk: bytes) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in parts.items():
            archive.writestr(name, body)
    _zip_with(target, buffer.getvalue(), big, size, chunk)


def write_epub_container_bomb(folder: Path) -> Path:
    """An EPUB whose META-INF/container.xml unpacks to 1.5 GiB (of blanks before its root element)."""
    folder.mkdir(parents=True)
    _write_epub(folder / "container.epub", _epub(), "META-INF/container.xml", 3 * GIB // 2, b" " * (1024 * 1024))
    return folder


def write_epub_big_chapter(folder: Path) -> Path:
    """An EPUB with one 480 MiB chapter: under the old 512 MiB e-book cap, 3.6 GB and 190 s to the sentence cap."""
    folder.mkdir(parents=True)
    paragraph = b"<p>The keeper counted the ships again before the tide.</p>\n"
    chunk = paragraph * (1024 * 1024 // len(paragraph) + 1)
    _write_epub(folder / "chapter.epub", _epub(), "c.xhtml", 480 * 1024 * 1024, chunk[: 1024 * 1024])
    return folder


def write_docx_empty_paragraphs(folder: Path, count: int = 3_000_000) -> Path:
    """A DOCX of 3 million empty paragraphs (about half a megabyte): 3.0 GB and 107 s in python-docx."""
    folder.mkdir(parents=True)
    data = _office("docx")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "word/document.xml":
                body = body.replace(b"<w:body>", b"<w:body>" + b"<w:p/>" * count)
            target.writestr(info.filename, body)
    (folder / "empty.docx").write_bytes(out.getvalue())
    return folder


def write_xlsx_dimensions(folder: Path) -> Path:
    """A 1.6 KB sheet declaring A1:XFD1048576 with one far cell: every row padded to 16,384 cells (18 minutes)."""
    import openpyxl

    folder.mkdir(parents=True)
    workbook = openpyxl.Workbook()
    workbook.active.append(["Crane", "Lifts"])
    workbook.active["XFD1048576"] = "far"
    buffer = io.BytesIO()
    workbook.save(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                start = body.index(b"<dimension ref=")
                body = body[:start] + b'<dimension ref="A1:XFD1048576"/>' + body[body.index(b"/>", start) + 2 :]
            target.writestr(info.filename, body)
    (folder / "wide.xlsx").write_bytes(out.getvalue())
    return folder


def write_python_module(folder: Path, megabytes: int = 24) -> Path:
    """A generated Python module of 24 MB (a table of rows and a few functions): 2.7 GB in ast.parse."""
    folder.mkdir(parents=True)
    rows = "".join(f"    ({n}, 'crane {n}', {n * 7 % 9973}, {n % 40}),\n" for n in range(megabytes * 1024 * 1024 // 36))
    (folder / "generated.py").write_text(f"def lookup(key):\n    return TABLE[key]\n\n\nTABLE = [\n{rows}]\n")
    return folder


def write_python_list(folder: Path) -> Path:
    """5 MB of `x=[1,1,...]`: 2.4 GB in ast.parse."""
    folder.mkdir(parents=True)
    (folder / "ones.py").write_text("x=[" + "1," * (5 * 1024 * 1024 // 2) + "1]\n")
    return folder


def write_html_attributes(folder: Path, count: int = 60_000) -> Path:
    """`<a b='` repeated: html.parser took 173 s on 40,000."""
    folder.mkdir(parents=True)
    (folder / "quotes.html").write_text("<html><body><p>Harbour notes.</p>" + "<a b='" * count, encoding="utf-8")
    return folder


def write_html_hidden_list(folder: Path, count: int = 300_000) -> Path:
    """`<ul hidden>` and 300,000 unclosed items: the hidden element's stack was scanned at every end tag."""
    folder.mkdir(parents=True)
    markup = "<html><body><ul hidden>" + "<li><a href=#>x</a>" * count + "</ul><p>The visible harbour notes.</p>"
    (folder / "hidden.html").write_text(markup, encoding="utf-8")
    return folder


def write_pdf_bookmark(folder: Path, page_words: int = 360_000, title_words: int = 150_000) -> Path:
    """One page of 360,000 words and a bookmark titled with 150,000 of them: the section finder's pattern was tried
    at every position (about 15 minutes)."""
    from reportlab.pdfgen import canvas

    folder.mkdir(parents=True)
    words_per_line = 100
    lines = page_words // words_per_line
    sheet = canvas.Canvas(str(folder / "bookmark.pdf"), pagesize=(1_000, lines * 3 + 20))
    text = sheet.beginText(5, lines * 3 + 10)
    text.setFont("Helvetica", 2)
    text.setLeading(3)
    for _ in range(lines):
        text.textLine(" ".join(["tide"] * words_per_line))
    sheet.drawText(text)
    sheet.bookmarkPage("long")
    sheet.addOutlineEntry(" ".join(["tide"] * (title_words - 1) + ["ebb"]), "long", level=0)
    sheet.showPage()
    sheet.save()
    return folder


def write_xlsx_wide_rows(folder: Path, rows: int = 4000) -> Path:
    """A sheet whose every row holds a cell in column XFD: each row really is 16,384 cells wide, so reading it
    takes minutes; the worker's time limit (GRANRAG_EXTRACT_TIMEOUT) stops it."""
    import openpyxl

    folder.mkdir(parents=True)
    workbook = openpyxl.Workbook()
    for row in range(1, rows + 1):
        workbook.active.cell(row, 1, f"row {row}")
        workbook.active.cell(row, 16384, "far")
    workbook.save(folder / "rows.xlsx")
    (folder / "note.md").write_text("The tide table for the harbour.\n", encoding="utf-8")
    return folder


CASES = {
    "big_file": write_big_file,
    "tiny_sentences": write_tiny_sentences,
    "many_files": write_many_files,
    "html_unclosed": write_unclosed_html,
    "at_sentence_cap": write_sentence_cap,
    "files_at_cap": lambda folder: write_many_files(folder, 200_000),
    "docx_image_bomb": lambda folder: write_office_bomb(folder, "docx", "word/media/image1.png"),
    "pptx_image_bomb": lambda folder: write_office_bomb(folder, "pptx", "ppt/media/image1.png"),
    "xlsx_theme_bomb": lambda folder: write_office_bomb(folder, "xlsx", "xl/theme/theme1.xml"),
    "epub_container_bomb": write_epub_container_bomb,
    "epub_big_chapter": write_epub_big_chapter,
    "docx_empty_paragraphs": write_docx_empty_paragraphs,
    "xlsx_dimensions": write_xlsx_dimensions,
    "python_module": write_python_module,
    "python_list": write_python_list,
    "html_attributes": write_html_attributes,
    "html_hidden_list": write_html_hidden_list,
    "pdf_bookmark": write_pdf_bookmark,
    "xlsx_wide_rows": write_xlsx_wide_rows,
}
DOCUMENT_CASES = [name for name in CASES if list(CASES).index(name) >= list(CASES).index("docx_image_bomb")]
"""The hostile documents: `--cases documents` runs them all."""
CASE_ENV = {"xlsx_wide_rows": {"GRANRAG_EXTRACT_TIMEOUT": "5"}}
"""Settings a case runs with: the wide sheet shows the time limit at work without waiting the default 120 s."""

# Runs the CLI and, as it exits, writes its own peak (`_common.memory`'s VmHWM, MiB) to the file named first on its
# command line.
CHILD = (
    "import atexit, sys\n"
    "from pathlib import Path\n"
    f"sys.path.insert(0, {str(_common.ROOT)!r})\n"
    "from benchmarks._common import memory\n"
    "out = Path(sys.argv.pop(1))\n"
    "import resource\n"
    "atexit.register(lambda: out.write_text(f\"{memory()['peak_mib']} "
    '{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f}"))\n'
    "from granrag_mcp.cli import main\n"
    "sys.exit(main())\n"
)


def cli(hwm_file: Path, *args: str) -> list[str]:
    """The `granrag-mcp` command line, run through CHILD so that it reports its own peak."""
    return [sys.executable, "-c", CHILD, str(hwm_file), *args]


def _rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        return int(next(line.split()[1] for line in status if line.startswith("VmRSS:")))
    except (OSError, StopIteration):
        return 0


def _children(pid: int) -> list[int]:
    """The run's extraction workers: the watch counts their memory with the run's."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run_watched(args: list[str], env: dict[str, str], kill_bytes: int, limit_s: float) -> dict[str, Any]:
    """Run the CLI through `cli`; its own peak RSS (VmHWM), and whether the watch had to kill it."""
    hwm_file = Path(args[3])
    hwm_file.unlink(missing_ok=True)
    peak_kb = worker_peak_kb = 0
    began = time.monotonic()
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = ""
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        workers_kb = [_rss_kb(pid) for pid in _children(process.pid)]
        worker_peak_kb = max([worker_peak_kb, *workers_kb])
        rss_kb = _rss_kb(process.pid) + sum(workers_kb)
        peak_kb = max(peak_kb, rss_kb)
        if not killed and (rss_kb * 1024 > kill_bytes or time.monotonic() - began > limit_s):
            killed = "memory" if rss_kb * 1024 > kill_bytes else "time"
            process.send_signal(signal.SIGKILL)
        time.sleep(0.2)
    process.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    return {
        "exit_code": process.returncode,
        "killed_by_watch": killed or None,
        "seconds": round(time.monotonic() - began, 1),
        # A killed child writes nothing: the highest VmRSS the watch saw stands in for its peak.
        "peak_rss_mib": float(hwm_file.read_text().split()[0]) if hwm_file.exists() else round(peak_kb / 1024, 1),
        # The extraction workers: the most resident memory the watch saw one hold, and their ru_maxrss (an upper
        # bound: on Linux a spawned child's count starts from its parent's size at the fork before its exec).
        "worker_peak_rss_mib": round(worker_peak_kb / 1024, 1),
        "children_ru_maxrss_mib": float(hwm_file.read_text().split()[1]) if hwm_file.exists() else None,
        "ru_maxrss_mib": round(usage.ru_maxrss / 1024, 1),
        "stdout": stdout,
        "warnings": [line for line in stderr.splitlines() if "WARNING" in line or "error" in line][:5],
    }


def servable(command: str, env: dict[str, str], store: Path) -> dict[str, Any]:
    status = subprocess.run([command, "status", "--store", str(store)], env=env, capture_output=True, text=True)
    search = subprocess.run(
        [command, "search", "lighthouse keeper northern cape", "--store", str(store), "-k", "3", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    found = json.loads(search.stdout) if search.returncode == 0 else {}
    hits = found.get("hits", found) if isinstance(found, dict) else found
    return {
        "status_ok": status.returncode == 0,
        "search_ok": search.returncode == 0,
        "base_corpus_found": "base/keeper.md" in search.stdout or "keeper.md" in search.stdout,
        "hits": len(hits) if isinstance(hits, list) else None,
    }


COPIES = 10
"""Copies of each article the throughput run writes (as .txt and as .html): enough files that the start of a worker
is a share, not the whole."""


def throughput(rounds: int) -> dict[str, Any]:
    """Small documents (the SQuAD-A articles as .txt and as .html) extracted three ways over the same files, rounds
    alternating: `extract_text` in this process (as before the workers), and through the extraction pool with one
    and two workers (the workers' start counted), and through one pool started before the rounds."""
    import squad_corpus

    from granrag_mcp.errors import ExtractionError
    from granrag_mcp.indexing.discovery import discover
    from granrag_mcp.indexing.extract import extract_text
    from granrag_mcp.indexing.extract_pool import ExtractionPool
    from granrag_mcp.settings import LimitSettings

    documents, _ = squad_corpus.load()
    with tempfile.TemporaryDirectory(prefix="granrag-throughput-") as temp:
        folder = Path(temp)
        for copy in range(COPIES):
            for number, text in enumerate(documents.values()):
                (folder / f"doc{copy}-{number:04d}.txt").write_text(text, encoding="utf-8")
                paragraphs = "".join(f"<p>{html.escape(p)}</p>\n" for p in text.split("\n\n"))
                page = f"<html><body>{paragraphs}</body></html>"
                (folder / f"doc{copy}-{number:04d}.html").write_text(page, encoding="utf-8")
        sources = discover([folder]).files

        def in_process() -> int:
            total = 0
            for source in sources:
                try:
                    total += len(extract_text(source).text)
                except ExtractionError:
                    pass
            return total

        def pooled(workers: int) -> int:
            with ExtractionPool(LimitSettings(extract_workers=workers)) as pool:
                return sum(len(r.text) for r in pool.extract(sources) if not isinstance(r, ExtractionError))

        warm = ExtractionPool(LimitSettings())  # started once: what each document costs past the start

        def reused() -> int:
            return sum(len(r.text) for r in warm.extract(sources) if not isinstance(r, ExtractionError))

        ways = {
            "in_process": in_process,
            "pool_1_worker": lambda: pooled(1),
            "pool_2_workers": lambda: pooled(2),
            "pool_1_worker_started": reused,
        }
        seconds: dict[str, list[float]] = {name: [] for name in ways}
        characters: dict[str, int] = {}
        load = _common.load_average()
        for _ in range(rounds):
            for name, way in ways.items():
                began = time.perf_counter()
                characters[name] = way()
                seconds[name].append(time.perf_counter() - began)
        warm.close()
    return {
        "files": len(sources),
        "load_before_after": [load, _common.load_average()],
        "ways": {
            name: {
                "median_s": round(statistics.median(times), 3),
                "files_per_s": round(len(sources) / statistics.median(times), 1),
                "characters": characters[name],
            }
            for name, times in seconds.items()
        },
    }


# Extracts every supported file of a folder in this one process, as a worker does, and prints per file its seconds
# and outcome, then the process's own peak (VmHWM, MiB).
EXTRACT_CHILD = (
    "import json, sys, time\n"
    f"sys.path.insert(0, {str(_common.BENCH_DIR)!r})\n"
    "from pathlib import Path\n"
    "from _common import memory\n"
    "from granrag_mcp.errors import ExtractionError\n"
    "from granrag_mcp.indexing.discovery import discover\n"
    "from granrag_mcp.indexing.extract import extract_text\n"
    "from granrag_mcp.settings import Settings\n"
    "files = []\n"
    "for source in discover([Path(sys.argv[1])]).files:\n"
    "    began = time.perf_counter()\n"
    "    try:\n"
    "        outcome = f'{len(extract_text(source, Settings().limits).text):,} characters'\n"
    "    except ExtractionError as error:\n"
    "        outcome = error.reason\n"
    "    files.append({'file': source.doc_id, 'seconds': round(time.perf_counter() - began, 2), 'outcome': outcome})\n"
    "print(json.dumps({'files': files, 'peak_rss_mib': memory()['peak_mib']}))\n"
)


def extract_only(folder: Path, env: dict[str, str], limit_s: float) -> dict[str, Any]:
    """The reading alone, in a process of its own: what a worker holds and takes for each file of a case."""
    began = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", EXTRACT_CHILD, str(folder)], env=env, capture_output=True, text=True, timeout=limit_s
        )
    except subprocess.TimeoutExpired:
        return {"killed_at_s": limit_s}
    result = (
        json.loads(done.stdout)
        if done.returncode == 0
        else {"exit_code": done.returncode, "stderr": done.stderr[-300:]}
    )
    return {**result, "seconds": round(time.monotonic() - began, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=[*sorted(CASES), "documents"], default=list(CASES)[:4])
    parser.add_argument("--kill-gib", type=float, default=6.0)
    parser.add_argument("--limit-s", type=float, default=1800.0)
    parser.add_argument(
        "--extract-only",
        action="store_true",
        help="each case's files extracted in a process of their own (the worker's share), not indexed",
    )
    parser.add_argument(
        "--throughput", type=int, metavar="ROUNDS", help="only: small documents in this process against the pool"
    )
    args = parser.parse_args()
    if args.throughput:
        _common.offline_env()
        result = {"machine": _common.machine(), "throughput": throughput(args.throughput)}
        _common.save_result("extract_pool_throughput", result)
        _common.emit(result)
        return
    args.cases = [case for name in args.cases for case in (DOCUMENT_CASES if name == "documents" else [name])]
    _common.offline_env()
    command = shutil.which("granrag-mcp", path=str(Path(sys.executable).parent)) or "granrag-mcp"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRANRAG_")}
    results: dict[str, Any] = {"machine": _common.machine(), "cases": {}}
    with tempfile.TemporaryDirectory(prefix="granrag-hostile-") as temp:
        root, store = Path(temp), Path(temp) / "store"
        base = root / "base"
        base.mkdir()
        (base / "keeper.md").write_text(BASE_TEXT, encoding="utf-8")
        hwm = root / "child-vmhwm"
        if not args.extract_only:
            first = run_watched(cli(hwm, "index", str(base), "--store", str(store), "--quiet"), env, 1 << 40, 600)
            results["base"] = {"exit_code": first["exit_code"], "peak_rss_mib": first["peak_rss_mib"]}
        for name in args.cases:
            source = CASES[name](root / name)
            size = _common.dir_size(source)
            load_before = _common.load_average()
            if args.extract_only:
                run = extract_only(source, {**env, **CASE_ENV.get(name, {})}, args.limit_s)
                run["input_mib"] = round(size / 1024**2, 1)
                run["load_before_after"] = [load_before, _common.load_average()]
                results["cases"][name] = run
                shutil.rmtree(source)
                _common.emit({name: run})
                continue
            run = run_watched(
                cli(hwm, "index", str(source), "--store", str(store), "--quiet"),
                {**env, **CASE_ENV.get(name, {})},
                int(args.kill_gib * 1024**3),
                args.limit_s,
            )
            run["input_mib"] = round(size / 1024**2, 1)
            run["load_before_after"] = [load_before, _common.load_average()]
            run["after"] = servable(command, env, store)
            results["cases"][name] = run
            shutil.rmtree(source)
            _common.emit({name: run})
    name = "hostile_extract" if args.extract_only else "hostile_inputs"
    previous = _common.RESULTS / f"{name}.json"
    if previous.exists():  # a run of some cases keeps the figures of the others
        kept = json.loads(previous.read_text(encoding="utf-8")).get("cases", {})
        results["cases"] = {**kept, **results["cases"]}
    _common.save_result(name, results)
    _common.emit(results)


if __name__ == "__main__":
    main()
