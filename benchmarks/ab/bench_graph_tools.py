"""The concept-graph tools over stdio, two versions side by side and the same work in process: an A/B in one run.

Each version runs as `granrag-mcp serve` with its own PYTHONPATH (A: `--baseline PATH`, a checkout of the code to
compare with; B: this checkout), both on the same store and open at the same time, called through the JSON-RPC
line client of `bench_stdio_ab.py` (no client-side validation of results counted). With `--core` the same
technique runs in this process on an `Engine` with one thread, its query embedded in the call. The variants are
called call by call in turn, the order rotating, so they see the same load. Every query and name pair is new to
every variant (no query cache hit); the names are concept pairs of the store's graph.

    .venv/bin/python benchmarks/ab/bench_graph_tools.py --store /tmp/squad-a-x2 --baseline /tmp/base-checkout --core
    .venv/bin/python benchmarks/ab/bench_graph_tools.py --smoke        # a tiny store and a few calls, nothing saved

Prints one JSON object and writes benchmarks/results/graph_tools.json (not with --smoke or --no-save).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.ab import bench_stdio_ab  # noqa: E402
from benchmarks.suite import (
    bench_graph,  # noqa: E402
    bench_tools,  # noqa: E402
)

CALLS = bench_graph.TOOL_CALLS


def name_pairs(store: Path, count: int) -> list[tuple[str, str]]:
    """Pairs of concept names of the store's graph, each pair distinct."""
    from granrag_mcp.evaluation.graph_questions import bridge_questions
    from granrag_mcp.store.graph import ConceptGraph
    from granrag_mcp.store.store import read_current

    graph = ConceptGraph.read(store / read_current(store).generation)
    if graph is None:
        raise SystemExit(f"the index at {store} has no concept graph")
    bridges = bridge_questions(graph, count, seed=1)
    return [(str(graph.keys[b.a]), str(graph.keys[b.b])) for b in bridges]


def core_calls(store: Path) -> tuple[Callable[[str, dict[str, Any]], None], Callable[[str, dict[str, Any]], None]]:
    """The technique under each tool, on an Engine in this process (one thread, as the server runs a call), and
    the embedding alone of a query like the tool's (the words differ, so that neither reads the other's cache)."""
    import faiss
    import torch

    from granrag_mcp.engine import Engine
    from granrag_mcp.retrieval import graph as techniques
    from granrag_mcp.settings import Settings

    torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)
    engine = Engine(Settings(store=store, log_level="WARNING"), load_reranker_now=False)

    def call(tool: str, a: dict[str, Any]) -> None:
        view = engine.view()
        if tool == "find_concepts":
            techniques.find_concepts(view, a["query"], 10)
        elif tool == "concept_neighbourhood":
            techniques.neighbourhood(view, a["concept"], a["depth"], 15, 1)
        elif tool == "concept_paths":
            techniques.strongest_paths(view, a["source"], a["target"], a["max_hops"], 3, 1)
        elif a.get("mode") == "passages":
            techniques.ppr_passages(view, a["query"], a["k"])
        else:
            techniques.communities(view, a["query"], 5, None)

    def embed(tool: str, a: dict[str, Any]) -> None:
        engine.embedder.embed([f"{a['query']} (alone)"])

    return call, embed


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = _common.machine()
    bench_tools.ensure_store(args.store, args.squad, args.copies)
    per_tool = args.rounds * (args.calls + args.warmup)
    pairs = name_pairs(args.store, per_tool * len(CALLS))
    here = str(_common.ROOT)
    variants = {"B": here} | ({"A": args.baseline} if args.baseline else {})
    clients = {name: bench_stdio_ab.LineClient(args.store, path) for name, path in variants.items()}
    callers: dict[str, Callable[[str, dict[str, Any]], Any]] = {}
    for name, client in clients.items():
        client.call("find_concepts", {"query": "warm up"})  # waits for the engine and the graph's lookups

        def checked(tool: str, arguments: dict[str, Any], c: bench_stdio_ab.LineClient = client) -> None:
            _, result = c.call(tool, arguments)
            if result.get("isError"):
                raise RuntimeError(f"{tool} {arguments}: {result}")

        callers[name] = checked
    if args.core:
        callers["core"], callers["query embedding"] = core_calls(args.store)
        callers["core"]("find_concepts", {"query": "warm up"})
    names = list(callers)
    times: dict[str, dict[str, list[float]]] = {name: {label: [] for label in CALLS} for name in names}
    loads = []
    for r in range(args.rounds):
        for slot, (label, make) in enumerate(CALLS.items()):
            for i in range(args.calls + args.warmup):
                a, b = pairs[(slot * args.rounds + r) * (args.calls + args.warmup) + i]
                tool, arguments = make(a, b)
                turn = (r + i) % len(names)
                for name in names[turn:] + names[:turn]:
                    if name == "query embedding" and "query" not in arguments:
                        continue
                    began = time.perf_counter()
                    callers[name](tool, arguments)
                    if i >= args.warmup:
                        times[name][label].append(time.perf_counter() - began)
        loads.append(_common.load_average()[0])
    for client in clients.values():
        client.close()
    latency = {
        name: {label: _common.latency_summary(v) for label, v in per.items() if v} for name, per in times.items()
    }
    return {
        "benchmark": "graph_tools",
        "machine": info,
        "git": _common.git_revision(),
        "variants": {"A": bench_stdio_ab.revision(args.baseline), "B": "this checkout"} if args.baseline else {},
        "store_chunks": bench_tools.store_chunks(args.store),
        "rounds": args.rounds,
        "calls_per_tool_and_round": args.calls,
        "client": "JSON-RPC lines written and read by the benchmark (no client-side validation of results); "
        "core: the technique in this process, query embedding included; query embedding: that alone",
        "latency": latency,
        "load_per_round": loads,
        "load_at_end": _common.load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.ab_arguments(parser)
    parser.add_argument("--core", action="store_true", help="also the same work in process, alternating")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=25, help="measured calls per tool, variant and round")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured calls at the start of each block")
    _common.result_arguments(parser, "graph_tools")
    parser.add_argument("--smoke", action="store_true", help="a tiny store, two rounds of two calls; nothing saved")
    args = parser.parse_args()
    _common.offline_env()
    if args.smoke:
        with _common.smoke_store(args):
            args.rounds, args.calls, args.warmup, args.core = 2, 2, 1, True
            _common.emit(run(args))
        return
    _common.conclude(args, run(args))


if __name__ == "__main__":
    main()
