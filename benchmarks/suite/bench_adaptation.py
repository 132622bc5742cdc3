"""The adaptation's cost: its own time on a store (what it adds to every index run), and search latency with the
adapted weights against the fixed defaults, alternating question by question in one process.

    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR \
        --questions 200
    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR --adapt-only

The store must hold the set's corpus. Each question is embedded once beforehand, so the arms differ only in the
weights, list depths and RRF constants.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.qa_arguments(parser, questions=200)
    _common.result_arguments(parser, "adaptation")
    parser.add_argument("--adapt-only", action="store_true", help="time the adaptation alone and print its seconds")
    args = parser.parse_args()

    from granrag_mcp.indexing.adapt import adapt
    from granrag_mcp.retrieval.hrr import hrr_search
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.rrf import search_rrf
    from granrag_mcp.retrieval.view import View

    engine, embedder, questions = _common.warm_engine(args, reranker="embedding")
    snapshot = engine.view().snapshot
    ranker = engine.candidate_rankers.for_snapshot(snapshot, use_adaptation=False)
    fixed = View(snapshot, embedder, engine.reranker, candidate_ranker=ranker)
    began = time.perf_counter()
    adaptation = adapt(fixed)
    adapt_seconds = time.perf_counter() - began
    if args.adapt_only:
        print(json.dumps({"adapt_seconds": round(adapt_seconds, 2), "load": _common.load_average()}))
        return 0
    adapted = View(
        snapshot,
        embedder,
        engine.reranker,
        candidate_ranker=engine.candidate_rankers.for_snapshot(snapshot, adaptation=adaptation),
        adaptation=adaptation,
    )
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
            for arm, view in _common.in_turn([("fixed", fixed), ("adapted", adapted)], n):
                began = time.perf_counter()
                run(view, q)
                times[f"{search}, {arm}"].append(time.perf_counter() - began)
    result = {
        "machine": _common.machine(),
        "questions": len(questions),
        "store_counts": dict(snapshot.manifest.counts),
        "adapt_seconds": round(adapt_seconds, 2),
        "pseudo_queries": adaptation.pseudo_queries,
        "shares": {k: v["share"] for k, v in adaptation.measured.items() if isinstance(v, dict) and "share" in v},
        "rrf_k": dict(adaptation.rrf_ks),
        "dense_depths": {fusion: max(depths.values()) for fusion, depths in adaptation.depths.items() if depths},
        "ranker_dense_scale": adaptation.ranker_dense_scale,
        "latency": {name: _common.latency_summary(v) for name, v in times.items()},
        "note": "the question's embedding is computed beforehand in both arms",
    }
    _common.conclude(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
