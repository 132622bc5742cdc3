"""What a search tool's call costs the MCP layer around the retrieval, in process, two versions side by side.

Two pieces every search pays for, timed as CPU time of the calling thread (median of the calls), which a loaded
shared machine inflates far less than wall time:

- `memory`: the session memory's `similar` and `record` of one search, with the memory full (256 queries of
  384-dimensional vectors, 10 chunk ids each);
- `hits`: the hit models of a search_fused result built from the core's chunks and fused lists (`Hit.of`);
- `dump`: the structured content of a search_fused result (10 mid hits of about 1,800 characters, four fused
  lists each, a section and pages), `model_dump(mode="json")` as the tool returns it, and its text rendering;
- `check`: the SDK's check of that answer against the result model the tool declares (`convert_result` of the
  SDK's metadata for a tool wrapped as the server wraps its tools), which runs on the event loop for every call.

Each version runs in its own process (`--baseline PATH`: a checkout of the code to compare with, on its
PYTHONPATH; B: this checkout), the two alternating round by round, so both see the same load.

    .venv/bin/python benchmarks/ab/bench_result_building.py --baseline /tmp/base-checkout --rounds 6
    .venv/bin/python benchmarks/ab/bench_result_building.py --smoke      # a few calls, nothing saved

Prints one JSON object and writes benchmarks/results/result_building.json (not with --smoke or --no-save).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

DIMENSION = 384
CAPACITY = 256


def cpu_median_us(work: Callable[[int], Any], calls: int) -> float:
    for i in range(min(20, calls)):
        work(i)
    spent = []
    for i in range(calls):
        began = time.thread_time()
        work(i)
        spent.append(time.thread_time() - began)
    return statistics.median(spent) * 1e6


def fused_result() -> Any:
    """A search_fused-sized result, built from the result models of the version on the path."""
    from granrag_mcp.server.schemas.results import Hit, PreviousQuery, SessionSearchResult, Source

    words = "the bridge was completed in 1931 by an engineer who had studied the river for a decade".split()
    hits = []
    for n in range(10):
        text = " ".join(words[(n + i) % len(words)] for i in range(320))
        hits.append(
            Hit(
                chunk_id=f"mid:{100 + n}",
                doc_id=f"articles/doc-{n % 3}.txt",
                level="mid",
                seq=n,
                start=2000 * n,
                end=2000 * n + len(text),
                score=0.05 - n / 1000,
                text=text,
                parent_id=f"broad:{n // 2}",
                token_count=330,
                sources={
                    name: Source(rank=n + 1, score=0.8 - n / 50, fused=0.01)
                    for name in ("broad_dense", "broad_lexical", "narrow_dense", "narrow_lexical")
                },
                pages=[n + 1, n + 2],
                section=["History", "Construction"],
            )
        )
    similar = [PreviousQuery(query="when was the bridge built", similarity=0.95, chunk_ids=["mid:100"], generation=1)]
    return SessionSearchResult(
        generation=1, tokens_used=3300, omitted=0, hits=hits, similar_previous=similar, weights={"rrf": 1.0}
    )


def hits_of(result: Any) -> Callable[[int], Any]:
    """`Hit.of` for the hits of `result`, from chunks and fused lists as the retrieval core hands them over."""
    from granrag_mcp.records import Chunk
    from granrag_mcp.retrieval.citations import Citation
    from granrag_mcp.retrieval.fusion import Contribution
    from granrag_mcp.server.schemas.results import Hit

    parents = {h.chunk_id: int(h.parent_id.split(":")[1]) for h in result.hits}
    given = [
        (
            Chunk(
                int(h.chunk_id.split(":")[1]),
                h.doc_id,
                "mid",
                h.seq,
                h.start,
                h.end,
                h.token_count,
                parents[h.chunk_id],
                h.text,
            ),
            h.score,
            {name: Contribution(s.rank, s.score, s.fused) for name, s in (h.sources or {}).items()},
            Citation((h.pages[0], h.pages[1]) if h.pages else None, tuple(h.section)),
        )
        for h in result.hits
    ]
    return lambda _: [Hit.of(chunk, score, sources, citation=citation) for chunk, score, sources, citation in given]


def worker(calls: int) -> dict[str, float]:
    """The medians of this process's version of the code (the one on its path)."""
    import numpy as np

    from granrag_mcp.server.schemas.results import render
    from granrag_mcp.server.session.memory import SessionMemory

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(CAPACITY + calls + 20, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memory = SessionMemory(CAPACITY)
    for i in range(CAPACITY):
        memory.record(f"q{i}", vectors[i], [f"narrow:{10 * i + j}" for j in range(10)], 1)

    def search(i: int) -> None:
        n = CAPACITY + i
        memory.similar(vectors[n], 0.92)
        memory.record(f"q{n}", vectors[n], [f"narrow:{10 * n + j}" for j in range(10)], 1)

    result = fused_result()
    return {
        "memory_us": cpu_median_us(search, calls),
        "hits_us": cpu_median_us(hits_of(result), calls),
        "dump_us": cpu_median_us(lambda _: result.model_dump(mode="json"), calls),
        "render_us": cpu_median_us(lambda _: render(result), calls),
        "check_us": cpu_median_us(answer_check(result), calls),
    }


def answer_check(result: Any) -> Callable[[int], Any]:
    """The SDK's check of a search tool's answer, for the output the version's tool wrapper declares."""
    from mcp.server.mcpserver.utilities.func_metadata import func_metadata

    from granrag_mcp.server.schemas.results import SessionSearchResult
    from granrag_mcp.server.tools.presenting import presented

    def search() -> Any:
        return result

    search.__annotations__["return"] = SessionSearchResult  # a local name: given as the class, not its name
    tool = presented(search)
    metadata = func_metadata(tool, structured_output=True)
    answer = tool()
    return lambda _: metadata.convert_result(answer)


def run_variant(pythonpath: str, calls: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": pythonpath}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--calls", str(calls)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout)


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = _common.machine()
    variants = {"B": str(_common.ROOT)} | ({"A": args.baseline} if args.baseline else {})
    per_round: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    loads = []
    for r in range(args.rounds):
        for name in sorted(variants) if r % 2 == 0 else sorted(variants, reverse=True):
            per_round[name].append(run_variant(variants[name], args.calls))
        loads.append(_common.load_average()[0])
    medians = {
        name: {key: round(statistics.median(run[key] for run in runs), 1) for key in runs[0]}
        for name, runs in per_round.items()
    }
    return {
        "benchmark": "result_building",
        "machine": info,
        "git": _common.git_revision(),
        "variants": {"B": "this checkout"} | ({"A": "the baseline checkout"} if args.baseline else {}),
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "cpu_us_median_of_rounds": medians,
        "per_round": per_round,
        "load_per_round": loads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="PYTHONPATH of the version to compare with (a checkout's root)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per piece, variant and round")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    _common.result_arguments(parser, "result_building")
    parser.add_argument("--smoke", action="store_true", help="two rounds of a few calls; nothing saved")
    args = parser.parse_args()
    if args.worker:
        # the version under test before this checkout, which the line at the top put first
        sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        print(json.dumps(worker(args.calls)))
        return
    if args.smoke:
        args.rounds, args.calls, args.baseline = 2, 5, args.baseline or str(_common.ROOT)
        _common.emit(run(args))
        return
    _common.conclude(args, run(args))


if __name__ == "__main__":
    main()
