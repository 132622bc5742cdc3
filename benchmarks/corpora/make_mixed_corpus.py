"""A corpus of real files from SQuAD-A, to measure retrieval per format against the same articles as plain text.

The articles are dealt round-robin into PDF (reportlab: several pages, the title as a heading line), Word
(python-docx: the title as Heading 1, a Heading 2 every four paragraphs), Markdown (the same headings) and .txt;
each is also written as .txt into a second folder. Answers are located in the text the indexer extracts from
each file (the answer with the words before it, whitespace-tolerant), so the QA files point at real offsets;
a question whose answer cannot be found in its file (a glyph the PDF font lacks) is left out of both files and
counted. Usage (the output folder must be outside the project):

    .venv/bin/python benchmarks/corpora/make_mixed_corpus.py OUT [--squad FILE]
    granrag-mcp index OUT/mixed --store OUT/store-mixed --no-graph
    granrag-mcp index OUT/txt --store OUT/store-txt --no-graph
    granrag-mcp eval --qa OUT/qa-mixed.jsonl --store OUT/store-mixed --out OUT/eval-mixed --skip-graph --sample 1200
    granrag-mcp eval --qa OUT/qa-txt.jsonl --store OUT/store-txt --out OUT/eval-txt --skip-graph --sample 1200
    .venv/bin/python benchmarks/corpora/make_mixed_corpus.py OUT --report   # HR@5 per format, from per_query.jsonl

Writes OUT/mixed/, OUT/txt/, OUT/qa-mixed.jsonl, OUT/qa-txt.jsonl and OUT/formats.json (doc id -> format).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks.corpora import squad_corpus
from granrag_mcp.indexing.formats import EXTRACTORS

FORMATS = ("pdf", "docx", "md", "txt")
PARAGRAPHS_PER_PART = 4
CONTEXT_CHARS = 40  # the words before an answer that pin it to its occurrence
ROOT = Path(__file__).resolve().parents[2]


def title_of(doc_id: str) -> str:
    return Path(doc_id).stem.replace("_", " ")


def parts(paragraphs: list[str]) -> list[tuple[str, list[str]]]:
    return [
        (f"Part {n // PARAGRAPHS_PER_PART + 1}", paragraphs[n : n + PARAGRAPHS_PER_PART])
        for n in range(0, len(paragraphs), PARAGRAPHS_PER_PART)
    ]


def pdf_bytes(title: str, paragraphs: list[str]) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    pdfmetrics.registerFont(TTFont("Vera", "Vera.ttf"))  # shipped with reportlab; covers more than Helvetica
    styles = getSampleStyleSheet()
    body, heading = styles["BodyText"], styles["Heading1"]
    body.fontName = heading.fontName = "Vera"
    escape = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    flow = [Paragraph(title, heading)] + [Paragraph("".join(escape.get(c, c) for c in p), body) for p in paragraphs]
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4).build(flow)
    return buffer.getvalue()


def docx_bytes(title: str, paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(title, level=1)
    for name, group in parts(paragraphs):
        document.add_heading(name, level=2)
        for paragraph in group:
            document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def markdown_bytes(title: str, paragraphs: list[str]) -> bytes:
    blocks = [f"# {title}"]
    for name, group in parts(paragraphs):
        blocks += [f"## {name}", *group]
    return "\n\n".join(blocks).encode("utf-8")


WRITERS = {"pdf": pdf_bytes, "docx": docx_bytes, "md": markdown_bytes}


def flexible(text: str) -> str:
    return r"\s+".join(re.escape(word) for word in text.split())


def locate(extracted: str, original: str, start: int, end: int) -> tuple[int, int] | None:
    """Where the answer original[start:end] is in the extracted text: found with the words before it in its
    paragraph, else its occurrence nearest to the same relative position."""
    answer = original[start:end]
    if not answer.strip():
        return None
    paragraph_start = original.rfind("\n\n", 0, start) + 2 if "\n\n" in original[:start] else 0
    context = original[max(paragraph_start, start - CONTEXT_CHARS) : start]
    context = (
        context[context.find(" ") + 1 :] if " " in context and start - CONTEXT_CHARS > paragraph_start else context
    )
    pattern = re.compile(f"{flexible(context)}(\\s*)({flexible(answer)})" if context.strip() else flexible(answer))
    found = [m.span(2) if context.strip() else m.span() for m in pattern.finditer(extracted)]
    if not found:
        found = [m.span() for m in re.finditer(flexible(answer), extracted)]
    if not found:
        return None
    expected = start / max(1, len(original)) * len(extracted)
    return min(found, key=lambda span: abs(span[0] - expected))


def make(out: Path, squad: Path) -> dict[str, object]:
    if out.resolve().is_relative_to(ROOT):
        raise SystemExit(f"write the corpus outside the project, not into {out}")
    documents, questions = squad_corpus.load(squad)
    (out / "mixed").mkdir(parents=True, exist_ok=True)
    (out / "txt").mkdir(parents=True, exist_ok=True)
    formats: dict[str, str] = {}
    mixed_text: dict[str, tuple[str, str]] = {}  # original doc id -> (mixed doc id, its extracted text)
    for number, (doc_id, text) in enumerate(sorted(documents.items())):
        kind = FORMATS[number % len(FORMATS)]
        stem = Path(doc_id).stem
        paragraphs = text.split("\n\n")
        data = WRITERS[kind](title_of(doc_id), paragraphs) if kind in WRITERS else text.encode("utf-8")
        name = f"{stem}.{kind}"
        (out / "mixed" / name).write_bytes(data)
        (out / "txt" / doc_id).write_text(text, encoding="utf-8")
        mixed_text[doc_id] = (name, EXTRACTORS[f".{kind}"](Path(name), data).text)
        formats[name] = formats[doc_id] = kind
    lost = 0
    with (
        (out / "qa-mixed.jsonl").open("w", encoding="utf-8") as mixed,
        (out / "qa-txt.jsonl").open("w", encoding="utf-8") as plain,
    ):
        for q in questions:
            name, extracted = mixed_text[q.doc_id]
            span = locate(extracted, documents[q.doc_id], q.answer_start, q.answer_end)
            if span is None:
                lost += 1
                continue
            row = {"id": q.qid, "question": q.question}
            mixed.write(json.dumps({**row, "doc_id": name, "answer_start": span[0], "answer_end": span[1]}) + "\n")
            plain.write(
                json.dumps({**row, "doc_id": q.doc_id, "answer_start": q.answer_start, "answer_end": q.answer_end})
                + "\n"
            )
    (out / "formats.json").write_text(json.dumps(formats, indent=1), encoding="utf-8")
    kept = len(questions) - lost
    return {"documents": len(documents), "questions": kept, "answers_not_found": lost}


def report(out: Path, k: int = 5) -> dict[str, object]:
    """HR@k per format and strategy/level, on the mixed store and on the .txt store for the same questions, from
    eval's per_query.jsonl; `gap` is mixed minus .txt."""
    formats = json.loads((out / "formats.json").read_text(encoding="utf-8"))
    tables: dict[str, dict[str, dict[str, float]]] = {}
    for corpus in ("mixed", "txt"):
        counts: dict[str, dict[str, list[int]]] = {}
        with (out / f"eval-{corpus}" / "per_query.jsonl").open(encoding="utf-8") as rows:
            for line in rows:
                row = json.loads(line)
                for strategy, levels in row["strategies"].items():
                    for level, entry in levels.items():
                        for kind in (formats[row["doc_id"]], "all"):
                            tally = counts.setdefault(f"{strategy} {level}", {}).setdefault(kind, [0, 0])
                            tally[0] += int(entry["rank"] is not None and entry["rank"] <= k)
                            tally[1] += 1
        tables[corpus] = {
            key: {kind: round(hits / total, 4) for kind, (hits, total) in sorted(kinds.items())}
            for key, kinds in sorted(counts.items())
        }
    questions = {kind: n for kind, (_, n) in next(iter(counts.values())).items()}
    gap = {
        key: {kind: round(value - tables["txt"][key][kind], 4) for kind, value in kinds.items()}
        for key, kinds in tables["mixed"].items()
    }
    return {f"HR@{k} mixed": tables["mixed"], f"HR@{k} txt": tables["txt"], "gap": gap, "questions": questions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the corpus into (outside the project)")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--report", action="store_true", help="read OUT/eval-*/per_query.jsonl: HR@5 per format")
    args = parser.parse_args()
    print(json.dumps(report(args.out) if args.report else make(args.out, args.squad), indent=2))


if __name__ == "__main__":
    main()
