"""Document filters: what filtering inside the search costs and what it returns, against cutting down an
unfiltered list.

On a store of SQuAD-A articles (real bundled model), for sampled questions, narrow search with k=10:
- `none`: no filter; `inside`: doc_ids=[one document], applied inside the search (FAISS id selector);
  `cut_down`: the unfiltered top 10 with the other documents' hits dropped (what the filter must not do);
- hits returned and answer recall (a hit overlapping the answer span) when the filter is the question's own
  document, and hits returned when it is another document;
- latency of the three, alternating per question.

    python benchmarks/suite/bench_filters.py --articles 6 --questions 200
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import emit, git_revision, latency_summary, load_average, machine, offline_env, save_result
from benchmarks.corpora.squad_corpus import DEFAULT_SQUAD, load, sample, write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", type=Path, default=DEFAULT_SQUAD)
    parser.add_argument("--articles", type=int, default=6)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    offline_env()

    from granrag_mcp.engine import Engine, run_index
    from granrag_mcp.retrieval.filters import DocFilter
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.settings import Settings

    documents, questions = load(args.squad)
    kept = sorted(documents)[: args.articles]
    documents = {d: documents[d] for d in kept}
    questions = sample([q for q in questions if q.doc_id in documents], args.questions)
    rng = random.Random(1)
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        write(documents, Path(tmp) / "corpus")
        settings = Settings(store=Path(tmp) / "store")
        started = time.perf_counter()
        run_index([Path(tmp) / "corpus"], settings, quiet=True)
        index_seconds = time.perf_counter() - started
        engine = Engine(settings, load_reranker_now=False)
        view = engine.view()
        seconds: dict[str, list[float]] = {"none": [], "inside": [], "cut_down": []}
        own = {"inside": {"hits": 0, "found": 0}, "cut_down": {"hits": 0, "found": 0}, "none": {"hits": 0, "found": 0}}
        other = {"inside": 0, "cut_down": 0}

        def found(hits, q) -> bool:
            return any(
                h.chunk.doc_id == q.doc_id and h.chunk.start < q.answer_end and q.answer_start < h.chunk.end
                for h in hits
            )

        for q in questions:
            another = rng.choice([d for d in kept if d != q.doc_id])
            for target, tally in ((q.doc_id, "own"), (another, "other")):
                filtered = view.filtered(DocFilter.of([target]))
                order = ["none", "inside", "cut_down"]
                rng.shuffle(order)  # alternate which runs first: the page cache and the CPU treat them alike
                results = {}
                for name in order:
                    begin = time.perf_counter()
                    if name == "none":
                        hits = search_level(view, q.question, "narrow", args.k)
                    elif name == "inside":
                        hits = search_level(filtered, q.question, "narrow", args.k)
                    else:
                        hits = [h for h in search_level(view, q.question, "narrow", args.k) if h.chunk.doc_id == target]
                    seconds[name].append(time.perf_counter() - begin)
                    results[name] = hits
                if tally == "own":
                    for name, hits in results.items():
                        own[name]["hits"] += len(hits)
                        own[name]["found"] += found(hits, q)
                else:
                    other["inside"] += len(results["inside"])
                    other["cut_down"] += len(results["cut_down"])
        n = len(questions)
        data = {
            "benchmark": "filters",
            "command": f"python benchmarks/suite/bench_filters.py --articles {args.articles} --questions {args.questions}",
            "revision": git_revision(),
            "machine": machine(),
            "load_at_start": load_start,
            "articles": args.articles,
            "questions": n,
            "k": args.k,
            "index_seconds": round(index_seconds, 1),
            "chunks": view.snapshot.manifest.counts,
            "filter_is_the_questions_document": {
                name: {"mean_hits": round(v["hits"] / n, 2), "answer_recall": round(v["found"] / n, 4)}
                for name, v in own.items()
            },
            "filter_is_another_document": {name: {"mean_hits": round(v / n, 2)} for name, v in other.items()},
            "latency_ms": {name: latency_summary(values) for name, values in seconds.items()},
        }
    emit(data)
    save_result("filters", data)


if __name__ == "__main__":
    main()
