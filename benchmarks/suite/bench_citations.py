"""Citation accuracy on the mixed-format corpus: does the hit that holds the answer cite a page or section that
holds it?

The truth comes from outside the indexer: a Markdown or Word article's section is the heading the corpus builder
put above the answer's paragraph (its title, then "Part k"), and a PDF's page is the page pypdf (not the
indexer's pypdfium2) finds the answer on. For each sampled question the default `search_fused` (weighted RRF,
mid level, k=5) runs; the first hit whose span holds the answer is cited through the store's outline and checked.
A question whose answer no hit holds counts as a miss of retrieval, not of citation. Usage:

    .venv/bin/python benchmarks/suite/bench_citations.py OUT [--sample 600]

OUT is the folder of make_mixed_corpus.py with OUT/store-mixed indexed from OUT/mixed (`granrag-mcp index OUT/mixed
--store OUT/store-mixed --no-graph`); where either is missing, this script makes it first.
"""

from __future__ import annotations

import argparse
import bisect
import io
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import load_average, save_result
from benchmarks.corpora import make_mixed_corpus, squad_corpus

K = 5


def truth_sections(documents: dict[str, str], question: squad_corpus.BenchQuestion) -> list[str]:
    """The heading path the builder wrote above the answer's paragraph."""
    paragraph = documents[question.doc_id].count("\n\n", 0, question.answer_start)
    return [
        make_mixed_corpus.title_of(question.doc_id),
        f"Part {paragraph // make_mixed_corpus.PARAGRAPHS_PER_PART + 1}",
    ]


def pdf_pages(data: bytes) -> tuple[str, list[int]]:
    """The PDF's text as pypdf reads it, pages joined by a blank line, and where each page starts."""
    from pypdf import PdfReader

    starts, parts, at = [], [], 0
    for page in PdfReader(io.BytesIO(data)).pages:
        text = page.extract_text() or ""
        starts.append(at)
        parts.append(text)
        at += len(text) + 2
    return "\n\n".join(parts), starts


def truth_page(pdf: tuple[str, list[int]], documents: dict[str, str], q: squad_corpus.BenchQuestion) -> int | None:
    text, starts = pdf
    span = make_mixed_corpus.locate(text, documents[q.doc_id], q.answer_start, q.answer_end)
    return None if span is None else bisect.bisect_right(starts, span[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder make_mixed_corpus.py wrote, with OUT/store-mixed indexed")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--sample", type=int, default=600, help="questions sampled (seed 0)")
    parser.add_argument("--no-save", action="store_true", help="print only; do not write results/citations.json")
    args = parser.parse_args()

    from granrag_mcp.engine import Engine, run_index
    from granrag_mcp.retrieval.citations import cite_chunks
    from granrag_mcp.retrieval.rrf import search_rrf
    from granrag_mcp.settings import Settings

    if not (args.out / "formats.json").exists():
        make_mixed_corpus.make(args.out, args.squad)
    if not (args.out / "store-mixed").exists():
        run_index([args.out / "mixed"], Settings(store=args.out / "store-mixed", graph=False))
    documents, questions = squad_corpus.load(args.squad)
    formats = json.loads((args.out / "formats.json").read_text(encoding="utf-8"))
    located = {}
    with (args.out / "qa-mixed.jsonl").open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            located[row["id"]] = (row["doc_id"], row["answer_start"], row["answer_end"])
    by_id = {q.qid: q for q in questions if q.qid in located}
    sample = random.Random(0).sample(sorted(by_id), min(args.sample, len(by_id)))
    pdfs: dict[str, tuple[str, list[int]]] = {}

    view = Engine(Settings(store=args.out / "store-mixed"), load_reranker_now=False).view()
    tally: dict[str, dict[str, int]] = {}
    for qid in sample:
        q = by_id[qid]
        name, start, end = located[qid]
        kind = formats[name]
        if kind == "txt":
            continue
        counts = tally.setdefault(kind, {"questions": 0, "answer in a hit": 0, "cited right": 0})
        counts["questions"] += 1
        hits = [h.chunk for h in search_rrf(view, q.question, K, level="mid")]
        holder = next((c for c in hits if c.doc_id == name and c.start <= start and end <= c.end), None)
        if holder is None:
            continue
        counts["answer in a hit"] += 1
        citation = cite_chunks(view, [holder])[holder.id]
        if kind == "pdf":
            if name not in pdfs:
                pdfs[name] = pdf_pages((args.out / "mixed" / name).read_bytes())
            page = truth_page(pdfs[name], documents, q)
            right = page is not None and citation.pages is not None and citation.pages[0] <= page <= citation.pages[1]
        else:
            right = list(citation.section) == truth_sections(documents, q)
        counts["cited right"] += int(right)
    accuracy = {
        kind: round(c["cited right"] / c["answer in a hit"], 4) if c["answer in a hit"] else None
        for kind, c in sorted(tally.items())
    }
    cited = sum(c["answer in a hit"] for c in tally.values())
    result = {
        "command": f"benchmarks/suite/bench_citations.py OUT --sample {args.sample}",
        "search": f"search_fused (rrf, mid, k={K})",
        "counts": tally,
        "citation accuracy": accuracy,
        "citation accuracy, all": round(sum(c["cited right"] for c in tally.values()) / cited, 4) if cited else None,
    }
    result["load"] = load_average()
    print(json.dumps(result, indent=2))
    if not args.no_save:
        save_result("citations", result)


if __name__ == "__main__":
    main()
