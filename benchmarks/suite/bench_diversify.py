"""Diversified results on a corpus with near-duplicates, and what diversification and the query memory cost.

The corpus is the first ARTICLES SQuAD-A articles plus a lightly edited copy of COPIED of them (every seventh
sentence dropped, a few words changed), indexed with the bundled model. For sampled questions of the copied
articles, each of none / mmr / kmeans returns k mid chunks; reported per method:

- hr: share of questions whose own answer lies in a returned chunk;
- distinct_answers: answers of the article's questions that the k chunks hold, counted once however many copies
  hold them (how much different material the k hits carry), mean per question;
- redundant_share: share of returned chunks whose stored vector has cosine >= 0.95 with a better-ranked one.

Latency: the whole search path of a tool (technique, diversify, session memory) per call, p50 and p95 over the
same queries, the variants alternating in one run.

  python benchmarks/suite/bench_diversify.py [--articles 8] [--copied 4] [--questions 200] [--k 5]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import latency_summary, load_average, machine, offline_env, save_result  # noqa: E402
from benchmarks.corpora.squad_corpus import load, write  # noqa: E402

EDITS = {" the ": " this ", " was ": " had been ", " and ": " as well as ", " large ": " big "}


def lightly_edited(text: str, seed: int) -> str:
    rng = random.Random(seed)
    sentences = re.split(r"(?<=[.!?]) ", text)
    kept = [s for i, s in enumerate(sentences) if i % 7 != 3]
    out = " ".join(kept)
    for old, new in EDITS.items():
        if rng.random() < 0.7:
            out = out.replace(old, new, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=8)
    parser.add_argument("--copied", type=int, default=4)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store", type=Path, help="reuse this store (built when missing)")
    args = parser.parse_args()
    offline_env()

    import numpy as np

    from granrag_mcp.engine import Engine, run_index
    from granrag_mcp.retrieval.diversify import candidate_depth, diversify, stored_vectors
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.server.session.memory import SessionMemory
    from granrag_mcp.settings import Settings

    documents, questions = load()
    chosen = list(documents)[: args.articles]
    corpus = {doc_id: documents[doc_id] for doc_id in chosen}
    copied = chosen[: args.copied]
    for n, doc_id in enumerate(copied):
        corpus[f"{Path(doc_id).stem} (edited copy){Path(doc_id).suffix}"] = lightly_edited(documents[doc_id], n)

    work = Path(tempfile.mkdtemp(prefix="bench-diversify-"))
    store = args.store or work / "store"
    settings = Settings(store=store)
    if not (store / "CURRENT").exists():
        run_index(write(corpus, work / "corpus"), settings, quiet=True)
    engine = Engine(settings)
    pool = [q for q in questions if q.doc_id in copied]
    sample = [pool[i] for i in sorted(random.Random(0).sample(range(len(pool)), min(args.questions, len(pool))))]
    answers_of = {
        doc_id: {documents[doc_id][q.answer_start : q.answer_end].lower() for q in questions if q.doc_id == doc_id}
        for doc_id in copied
    }

    methods = ("none", "mmr", "kmeans")
    quality = {m: {"hr": 0, "distinct_answers": 0.0, "redundant": 0, "returned": 0} for m in methods}
    for q in sample:
        view = engine.view()
        candidates = search_level(view, q.question, "mid", candidate_depth(args.k, "mmr"))
        answer = documents[q.doc_id][q.answer_start : q.answer_end].lower()
        for method in methods:
            hits = diversify(view, [type(c)(c.chunk, c.score) for c in candidates], args.k, method)
            texts = [h.chunk.text.lower() for h in hits]
            vectors = stored_vectors(view, hits)
            stats = quality[method]
            stats["hr"] += any(answer in t for t in texts)
            stats["distinct_answers"] += sum(1 for a in answers_of[q.doc_id] if any(a in t for t in texts))
            stats["redundant"] += sum(1 for i in range(1, len(hits)) if (vectors[:i] @ vectors[i]).max() >= 0.95)
            stats["returned"] += len(hits)
    results = {
        m: {
            "hr": round(s["hr"] / len(sample), 4),
            "distinct_answers": round(s["distinct_answers"] / len(sample), 3),
            "redundant_share": round(s["redundant"] / max(s["returned"], 1), 4),
            "hits_per_query": round(s["returned"] / len(sample), 2),
        }
        for m, s in quality.items()
    }

    # Latency: each part a search tool adds, timed alone and alternating over the same queries (the query vector is
    # cached by the embedder, as it is for the tool's own second use of it): the deeper candidate search that
    # diversify and exclude_seen need, diversify itself, and the session memory at its full 256 queries.
    memory = SessionMemory()
    warm = engine.view()
    for q in sample[:256] + sample[: max(0, 256 - len(sample))]:
        memory.record(
            q.question + " (earlier)",
            warm.query_vector(q.question + " (earlier)"),
            [f"narrow:{i}" for i in range(args.k)],
            1,
        )
    times: dict[str, list[float]] = {n: [] for n in ("search_k", "search_pool", "mmr", "kmeans", "memory")}
    for _ in range(args.repeats):
        for q in sample:
            view = engine.view()
            view.query_vector(q.question)
            start = time.perf_counter()
            search_level(view, q.question, "narrow", args.k)
            times["search_k"].append(time.perf_counter() - start)
            start = time.perf_counter()
            pool = search_level(view, q.question, "narrow", candidate_depth(args.k, "mmr"))
            times["search_pool"].append(time.perf_counter() - start)
            for method in ("mmr", "kmeans"):
                copies = [type(c)(c.chunk, c.score) for c in pool]
                start = time.perf_counter()
                diversify(view, copies, args.k, method)
                times[method].append(time.perf_counter() - start)
            start = time.perf_counter()
            kept, _ = memory.unseen(pool)
            vector = view.query_vector(q.question)
            memory.similar(vector, 0.92)
            memory.record(q.question, vector, [h.chunk.public_id for h in kept[: args.k]], view.snapshot.generation)
            times["memory"].append(time.perf_counter() - start)
    latency = {name: latency_summary(values) for name, values in times.items()}
    data = {
        "benchmark": "diversify",
        "command": "python benchmarks/suite/bench_diversify.py " + " ".join(sys.argv[1:]),
        "corpus": {"articles": args.articles, "edited_copies": args.copied, "documents": len(corpus)},
        "questions": len(sample),
        "k": args.k,
        "level": "mid",
        "quality": results,
        "latency_narrow_ms": latency,
        "memory_queries": len(memory),
        "added_p50_ms": {
            "deeper_search": round(latency["search_pool"]["p50_ms"] - latency["search_k"]["p50_ms"], 3),
            "mmr": latency["mmr"]["p50_ms"],
            "kmeans": latency["kmeans"]["p50_ms"],
            "memory": latency["memory"]["p50_ms"],
        },
        "load_average_end": load_average(),
        "machine": machine(),
    }
    print(save_result("diversify", data))
    import json

    print(json.dumps({"quality": results, "latency": latency, "added_p50_ms": data["added_p50_ms"]}, indent=1))
    del np


if __name__ == "__main__":
    main()
