"""hrr_search latency with and without the candidate ranker, alternating question by question in one process.

    python benchmarks/suite/bench_candidate_ranker.py --squad ../shared/datasets/squad-v1.1-dev-a.json \
        --store /tmp/eval-store --questions 300

The store must hold the SQuAD corpus. Each question is embedded once beforehand (as a warm server's model
would be the same in both arms), so the difference is the ranker's own work: reading the candidates' sentences,
stemming, features and the linear model.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.qa_arguments(parser, questions=300)
    _common.result_arguments(parser, "candidate_ranker_latency")
    args = parser.parse_args()

    from granrag_mcp.retrieval.hrr import hrr_search

    engine, _, questions = _common.warm_engine(args)
    view = engine.view()
    for q in questions[:20]:  # warm-up: caches, stemmer, pages
        hrr_search(view, q, ranked=True)
        hrr_search(view, q, ranked=False)
    times: dict[str, list[float]] = {"with ranker": [], "without ranker": []}
    for n, q in enumerate(questions):
        for name, ranked in _common.in_turn([("with ranker", True), ("without ranker", False)], n):
            began = time.perf_counter()
            hrr_search(view, q, ranked=ranked)
            times[name].append(time.perf_counter() - began)
    result = {
        "machine": _common.machine(),
        "questions": len(questions),
        "ranker": view.candidate_ranker.name if view.candidate_ranker else None,
        "hrr_search": {name: _common.latency_summary(v) for name, v in times.items()},
        "note": "the question's embedding is computed beforehand in both arms",
    }
    _common.conclude(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
