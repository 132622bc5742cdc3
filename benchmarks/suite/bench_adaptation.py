"""The adaptation's cost: its own time on a store (what it adds to every index run), and search latency with the
adapted weights against the fixed defaults, alternating question by question in one process.

    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR \
        --questions 200 --out benchmarks/results/adaptation.json
    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR --adapt-only

The store must hold the set's corpus. Each question is embedded once beforehand, so the arms differ only in the
weights, list depths and RRF constants.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--adapt-only", action="store_true", help="time the adaptation alone and print its seconds")
    args = parser.parse_args()

    import faiss
    import numpy as np

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import CachedEmbedder
    from granrag_mcp.rerankers import load_reranker
    from granrag_mcp.retrieval.hrr import hrr_search
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.ranking.adapt import adapt
    from granrag_mcp.retrieval.rrf import search_rrf
    from granrag_mcp.retrieval.view import View
    from granrag_mcp.settings import Settings

    faiss.omp_set_num_threads(1)
    settings = Settings(store=args.store)
    embedder = CachedEmbedder(make_embedder(settings))
    engine = Engine(settings, embedder=embedder, reranker=load_reranker("embedding", embedder))
    snapshot = engine.view().snapshot
    ranker = engine.candidate_rankers.for_snapshot(snapshot, use_adaptation=False)
    fixed = View(snapshot, embedder, engine.reranker, candidate_ranker=ranker)
    began = time.perf_counter()
    adaptation = adapt(fixed)
    adapt_seconds = time.perf_counter() - began
    if args.adapt_only:
        print(json.dumps({"adapt_seconds": round(adapt_seconds, 2), "loadavg": Path("/proc/loadavg").read_text()[:14]}))
        return 0
    adapted = View(
        snapshot,
        embedder,
        engine.reranker,
        candidate_ranker=engine.candidate_rankers.for_snapshot(snapshot, adaptation=adaptation),
        adaptation=adaptation,
    )
    questions = [q.question.strip() for q in sample_questions(load_squad(args.squad).questions, args.questions, 0)]
    embedder.embed(questions)
    searches = {
        "search_fused (mid)": lambda view, q: search_rrf(view, q, 10),
        "search_narrow (mid)": lambda view, q: search_level(view, q, "mid", 10, lexical=None),
        "hrr_search": lambda view, q: hrr_search(view, q, 5),
    }
    for q in questions[:10]:  # warm-up: caches, stemmer, pages
        for run in searches.values():
            run(fixed, q), run(adapted, q)
    times: dict[str, list[float]] = {f"{s}, {arm}": [] for s in searches for arm in ("fixed", "adapted")}
    for n, q in enumerate(questions):
        for search, run in searches.items():
            arms = [("fixed", fixed), ("adapted", adapted)]
            for arm, view in arms if n % 2 == 0 else arms[::-1]:
                began = time.perf_counter()
                run(view, q)
                times[f"{search}, {arm}"].append((time.perf_counter() - began) * 1000)
    result = {
        "questions": len(questions),
        "store_counts": dict(snapshot.manifest.counts),
        "adapt_seconds": round(adapt_seconds, 2),
        "pseudo_queries": adaptation.pseudo_queries,
        "shares": {k: v["share"] for k, v in adaptation.measured.items() if isinstance(v, dict) and "share" in v},
        "rrf_k": dict(adaptation.rrf_ks),
        "dense_depths": {fusion: max(depths.values()) for fusion, depths in adaptation.depths.items() if depths},
        "ranker_dense_scale": adaptation.ranker_dense_scale,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "ms": {
            name: {"p50": round(float(np.percentile(v, 50)), 2), "p95": round(float(np.percentile(v, 95)), 2)}
            for name, v in times.items()
        },
        "note": "the question's embedding is computed beforehand in both arms",
    }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
