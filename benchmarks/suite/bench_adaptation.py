"""The adaptation's cost: its own time on a store (what it adds to every index run), and search latency with the
adapted weights against the fixed defaults, alternating question by question in one process.

    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR \
        --questions 200
    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR --adapt-only
    python benchmarks/suite/bench_adaptation.py --squad ../shared/datasets/covidqa-a.json --store STORE_DIR \
        --seeds 0,1,2,3,4 --questions 841

With `--seeds` the store is adapted once per seed of the pseudo-queries' draw, and for each the choices (shares,
RRF constants, dense depths, fallbacks, ranker factor) and the adapted strategies' eval cells (RRF and Level,
HR@5 and MRR@5 at broad and mid, as `granrag-mcp eval` scores them) are reported with their spread across seeds:
how much of a change in those cells the draw alone makes.

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
    parser.add_argument("--seeds", help="comma-separated seeds of the pseudo-queries' draw: the spread of the choices")
    args = parser.parse_args()
    if args.seeds:
        return seed_spread(args, [int(seed) for seed in args.seeds.split(",")])

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


def seed_spread(args, seeds: list[int]) -> int:
    """The adaptation once per seed, its choices and the eval cells of the strategies it sets."""
    import numpy as np

    from granrag_mcp.embedding.queries import embed_queries
    from granrag_mcp.evaluation.metrics import first_hit_rank, summarise
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import EVAL_LEVELS, NEEDED, StrategyRunner
    from granrag_mcp.indexing.adapt import adapt
    from granrag_mcp.retrieval.view import View

    engine, embedder, _ = _common.warm_engine(argparse.Namespace(**{**vars(args), "questions": 1}))
    questions = sample_questions(load_squad(args.squad).questions, args.questions, 0)
    texts = [q.question.strip() for q in questions]
    vectors = embed_queries(embedder, texts)
    snapshot = engine.view().snapshot
    fixed = View(snapshot, embedder, None, candidate_ranker=None)
    strategies = ["RRF", "Level"]
    runs: dict[str, dict] = {}
    for seed in seeds:
        began = time.perf_counter()
        adaptation = adapt(fixed, seed=seed)
        seconds = time.perf_counter() - began
        view = View(snapshot, embedder, None, candidate_ranker=None, adaptation=adaptation)
        runner = StrategyRunner(view, strategies)
        ranks: dict[str, dict[str, list]] = {s: {level: [] for level in EVAL_LEVELS} for s in strategies}
        for q, text, vector in zip(questions, texts, vectors):
            for name, ranking in runner.run(text, vector).items():
                for level in EVAL_LEVELS:
                    ranks[name][level].append(
                        first_hit_rank(runner.spans(ranking[level][:NEEDED]), q.doc_id, q.answer_start)
                    )
        cells = {
            f"{name} {level} {metric}": round(summarise(values)[metric], 4)
            for name, levels in ranks.items()
            for level, values in levels.items()
            for metric in ("HR@5", "MRR@5")
        }
        measured = adaptation.measured
        runs[str(seed)] = {
            "adapt_seconds": round(seconds, 2),
            "shares": {k: v["share"] for k, v in measured.items() if isinstance(v, dict) and "share" in v},
            "fallbacks": {k: v["fallback"] for k, v in measured.items() if isinstance(v, dict) and v.get("fallback")},
            "rrf_k": dict(adaptation.rrf_ks),
            "dense_depths": {f: max(d.values()) for f, d in adaptation.depths.items() if d},
            "ranker_dense_scale": adaptation.ranker_dense_scale,
            "pseudo_query_mrr": {
                k: {m: v[m] for m in ("mix_mrr", "alone_mrr", "mrr_by_rrf_k", "dense_mrr", "lexical_mrr") if m in v}
                for k, v in measured.items()
                if isinstance(v, dict) and k.startswith(("rrf", "level_narrow"))
            },
            "weights": {k: dict(v) for k, v in adaptation.fusions.items()},
            "cells": cells,
        }
        print(json.dumps({"seed": seed, **{k: v for k, v in runs[str(seed)].items() if k != "weights"}}), flush=True)
    spread = {}
    for cell in next(iter(runs.values()))["cells"]:
        values = np.array([run["cells"][cell] for run in runs.values()])
        spread[cell] = {
            "mean": round(float(values.mean()), 4),
            "sd": round(float(values.std(ddof=1)), 4) if len(values) > 1 else 0.0,
            "range": round(float(values.max() - values.min()), 4),
        }
    result = {
        "machine": _common.machine(),
        "questions": len(questions),
        "store_counts": dict(snapshot.manifest.counts),
        "seeds": runs,
        "spread": spread,
        "load_at_end": _common.load_average(),
    }
    _common.conclude(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
