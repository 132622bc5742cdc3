"""hrr_search latency with and without the candidate ranker, alternating question by question in one process.

    python benchmarks/suite/bench_candidate_ranker.py --squad ../shared/datasets/squad-v1.1-dev-a.json \
        --store /tmp/eval-store --questions 300 --out benchmarks/results/candidate_ranker_latency.json

The store must hold the SQuAD corpus. Each question is embedded once beforehand (as a warm server's model
would be the same in both arms), so the difference is the ranker's own work: reading the candidates' sentences,
stemming, features and the linear model.
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
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import faiss
    import numpy as np

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import CachedEmbedder
    from granrag_mcp.retrieval.hrr import hrr_search
    from granrag_mcp.settings import Settings

    faiss.omp_set_num_threads(1)
    settings = Settings(store=args.store)
    embedder = CachedEmbedder(make_embedder(settings))
    view = Engine(settings, embedder=embedder).view()
    questions = [q.question.strip() for q in sample_questions(load_squad(args.squad).questions, args.questions, 0)]
    embedder.embed(questions)
    for q in questions[:20]:  # warm-up: caches, stemmer, pages
        hrr_search(view, q, ranked=True)
        hrr_search(view, q, ranked=False)
    times: dict[str, list[float]] = {"with ranker": [], "without ranker": []}
    for n, q in enumerate(questions):
        arms = [("with ranker", True), ("without ranker", False)]
        for name, ranked in arms if n % 2 == 0 else arms[::-1]:
            began = time.perf_counter()
            hrr_search(view, q, ranked=ranked)
            times[name].append((time.perf_counter() - began) * 1000)
    result = {
        "questions": len(questions),
        "ranker": view.candidate_ranker.name if view.candidate_ranker else None,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "ms": {
            name: {
                "p50": round(float(np.percentile(v, 50)), 2),
                "p95": round(float(np.percentile(v, 95)), 2),
                "mean": round(float(np.mean(v)), 2),
            }
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
