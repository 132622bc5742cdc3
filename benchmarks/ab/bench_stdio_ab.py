"""Two versions of the server over stdio, side by side, against the same work in process: an A/B in one run.

Each version runs as `granrag-mcp serve` with its own PYTHONPATH (A: `--baseline PATH`, a checkout of the code to
compare with; B: this checkout), both on the same store and open at the same time. A client that writes and reads
JSON-RPC lines itself (so no client-side validation of the results is counted) calls each tool, call by call in
turn on A, B and the in-process core (`--core`: the same retrieval functions on an `Engine` in this process,
query embedding included), so the three see the same load. Cold starts alternate too: process spawn to
`initialize` answered, and to the first `search_narrow` answered.
`--variant NAME=CHECKOUT` serves more versions in the same turns (the pieces of a change, each measured against
the others in one run); `--floor` adds a one-tool server on the MCP SDK alone, called in turn too (`sdk_floor`:
what any call over stdio costs on this SDK, whatever the server does).
Beside each p50, the CPU time per call (`cpu_ms_per_call`: every thread of a server's process, the calling
thread of the core), which a loaded shared machine inflates far less than it does the wall time, and a server's
main thread alone (`loop_cpu_ms_per_call`: the event loop, where the SDK dispatches, checks and serialises each
call while the search itself runs in a worker thread).

    .venv/bin/python benchmarks/ab/bench_stdio_ab.py --store /tmp/squad-a-x2 --baseline /tmp/base-checkout --core
    .venv/bin/python benchmarks/ab/bench_stdio_ab.py --a-env ONEDNN_MAX_CPU_ISA=AVX2 --a-env ATEN_CPU_CAPABILITY=avx2 \
        --a-env FAISS_OPT_LEVEL=avx2 --core --name stdio_fp32   # A: the fp32 path of a CPU without AVX-512
    .venv/bin/python benchmarks/ab/bench_stdio_ab.py --baseline /tmp/main --variant core_only=/tmp/piece1 --core --floor
    .venv/bin/python benchmarks/ab/bench_stdio_ab.py --smoke        # a tiny store and a few calls, nothing saved

Prints one JSON object and writes benchmarks/results/stdio_ab.json (not with --smoke or --no-save).
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
from benchmarks.corpora import squad_corpus  # noqa: E402
from benchmarks.suite import bench_tools  # noqa: E402

SEARCHES = ("search_narrow", "search_broad", "search_fused")
FLOOR_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("floor")
@server.tool()
def add(a: int, b: int) -> int:
    return a + b
server.run("stdio")
"""  # the MCP SDK alone, one tool: the start-up no server on this SDK can go below
FLOOR = "sdk_floor"
RANKED = ("hrr_search",)  # a search with a reranker: not under the 3 ms target, measured to see it unchanged
CONTEXT = ("expand_window", "get_parent", "get_chunks", "list_documents")


class LineClient:
    """An MCP client over the server's stdio that writes and reads the JSON-RPC lines itself."""

    def __init__(
        self, store: Path, pythonpath: str, extra_env: dict[str, str] | None = None, floor: bool = False
    ) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OMP_NUM_THREADS")}
        env |= {"PYTHONPATH": pythonpath, "HF_HUB_OFFLINE": "1", "GRANRAG_LOG_LEVEL": "WARNING"} | (extra_env or {})
        env["TOKENIZERS_PARALLELISM"] = "false"
        self.began = time.perf_counter()
        command = [sys.executable, "-c", FLOOR_SERVER] if floor else [bench_tools.granrag_command(), "serve"]
        self.process = subprocess.Popen(
            command + ([] if floor else ["--store", str(store)]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 0
        self.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self.initialized_s = time.perf_counter() - self.began
        self.initialize_cpu_s = cpu_seconds(self.process.pid)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        answer = json.loads(self.process.stdout.readline())
        if "result" not in answer or answer["result"].get("isError"):
            raise RuntimeError(f"{method} {params} failed: {answer}")
        return answer["result"]

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        began = time.perf_counter()
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        return time.perf_counter() - began, result.get("structuredContent") or {}

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def revision(folder: str) -> str:
    """The commit a checkout is at (not its path, which names this machine)."""
    done = subprocess.run(["git", "-C", folder, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return f"the checkout of {done.stdout.strip()}" if done.returncode == 0 else "a tree without its git history"


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """CPU time (user and system) a process (or one of its threads) has used so far: the start-up cost that the
    load does not inflate."""
    try:
        stat = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
        fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def core_calls(store: Path) -> Callable[[str, dict[str, Any]], None]:
    """The same work as each tool, on the retrieval core in this process."""
    import faiss
    import torch

    from granrag_mcp.engine import Engine
    from granrag_mcp.retrieval.hrr import hrr_search
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.parents import find_parents
    from granrag_mcp.retrieval.rrf import search_rrf
    from granrag_mcp.retrieval.window import expand_window
    from granrag_mcp.settings import Settings

    torch.set_num_threads(1)  # as the server runs its calls (see app.run_server)
    faiss.omp_set_num_threads(1)
    engine = Engine(Settings(store=store, log_level="WARNING"))
    work: dict[str, Callable[[dict[str, Any]], Any]] = {
        # lexical=None as the tools pass it: the store's adapted fusion of the dense and BM25 lists
        "search_narrow": lambda a: search_level(engine.view(), a["query"], "narrow", 10, lexical=None),
        "search_broad": lambda a: search_level(engine.view(), a["query"], "broad", 5, lexical=None),
        "search_fused": lambda a: search_rrf(engine.view(), a["query"], 10, level="mid"),
        "hrr_search": lambda a: hrr_search(engine.view(), a["query"], 5),
        "expand_window": lambda a: expand_window(engine.view(), a["chunk_id"]),
        "get_parent": lambda a: find_parents(engine.view(), a["chunk_ids"]),
        "get_chunks": lambda a: engine.view().get_chunks(a["chunk_ids"]),
        "list_documents": lambda a: engine.view().list_documents(None, a["limit"], a["offset"]),
    }
    return lambda tool, arguments: work[tool](arguments)


def plan(questions: list[str], ids: list[str], tools: tuple[str, ...], rounds: int, calls: int) -> dict[str, list]:
    """Per tool and round, the argument dicts: every search query is new to every server (no query cache hit)."""
    out: dict[str, list] = {}
    for slot, tool in enumerate(tools):
        per_round = []
        for r in range(rounds):
            chunk = []
            for i in range(calls):
                n = (slot * rounds + r) * calls + i
                if tool in SEARCHES + RANKED:
                    chunk.append({"query": questions[n % len(questions)]})
                elif tool == "expand_window":
                    chunk.append({"chunk_id": ids[n % len(ids)]})
                elif tool in ("get_parent", "get_chunks"):
                    chunk.append({"chunk_ids": [ids[(n + j) % len(ids)] for j in range(3)]})
                else:
                    chunk.append({"limit": 50, "offset": n % 20})
            per_round.append(chunk)
        out[tool] = per_round
    return out


def measure(
    args: argparse.Namespace, variants: dict[str, str], envs: dict[str, dict[str, str]], questions: list[str]
) -> tuple[dict[str, Any], dict[str, Any], list[float]]:
    """Latency per tool: the servers (and the core) called in turn, call by call."""
    clients = {name: LineClient(args.store, path, envs.get(name)) for name, path in variants.items()}
    for client in clients.values():
        client.call("search_narrow", {"query": questions[-100]})  # waits for the engine to load
    if args.floor:  # the SDK alone answering a one-line tool, in turn with the others: the floor of any call
        clients[FLOOR] = LineClient(args.store, str(_common.ROOT), floor=True)
    _, first = clients["B"].call("search_narrow", {"query": questions[-101], "k": 20})
    ids = [h["chunk_id"] for h in first["hits"]]
    callers: dict[str, Callable[[str, dict[str, Any]], Any]] = {
        name: (lambda tool, a, c=client: c.call(tool, a)) for name, client in clients.items() if name != FLOOR
    }
    if FLOOR in clients:
        callers[FLOOR] = lambda tool, a, c=clients[FLOOR]: c.call("add", {"a": 1, "b": 2})
    if args.core:
        callers["core"] = core_calls(args.store)
    tools = tuple(args.tools) if args.tools else SEARCHES + RANKED + CONTEXT
    work = plan(questions, ids, tools, args.rounds, args.calls + args.warmup)
    times: dict[str, dict[str, list[float]]] = {name: {t: [] for t in tools} for name in callers}
    # CPU seconds per call, every thread of a server's process, the core's calling thread: unlike the wall time,
    # it hardly grows with the load of a shared machine, so it shows what a change saves where the load hides it
    cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(tools, 0.0) for name in callers}
    # the server's main thread alone: its event loop, where the SDK dispatches, checks and serialises every call
    # (the searches run in worker threads), the per-call layer that a change to it moves
    loop_cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(tools, 0.0) for name in clients}
    names = list(callers)
    loads = []
    for r in range(args.rounds):
        for tool in tools:
            before = {name: cpu_seconds(client.process.pid) for name, client in clients.items()}
            before_loop = {name: cpu_seconds(c.process.pid, c.process.pid) for name, c in clients.items()}
            for i, arguments in enumerate(work[tool][r]):  # call by call, in turn, each first as often as last
                turn = (r + i) % len(names)
                for name in names[turn:] + names[:turn]:
                    began, began_cpu = time.perf_counter(), time.thread_time()
                    callers[name](tool, arguments)
                    if i >= args.warmup:
                        times[name][tool].append(time.perf_counter() - began)
                    if name not in clients:
                        cpu[name][tool] += time.thread_time() - began_cpu
            for name, client in clients.items():
                cpu[name][tool] += cpu_seconds(client.process.pid) - before[name]
                loop_cpu[name][tool] += cpu_seconds(client.process.pid, client.process.pid) - before_loop[name]
        loads.append(_common.load_average()[0])
    for client in clients.values():
        client.close()
    latency = {name: {t: _common.latency_summary(v) for t, v in per.items()} for name, per in times.items()}
    for name, per in cpu.items():
        for tool, seconds in per.items():
            calls = sum(len(chunk) for chunk in work[tool])
            latency[name][tool]["cpu_ms_per_call"] = round(seconds / calls * 1000, 3)
            if name in loop_cpu:
                latency[name][tool]["loop_cpu_ms_per_call"] = round(loop_cpu[name][tool] / calls * 1000, 3)
    gap: dict[str, Any] = {}
    if args.core:
        for name in (c for c in clients if c != FLOOR):
            gap[name] = {t: round(latency[name][t]["p50_ms"] - latency["core"][t]["p50_ms"], 2) for t in tools}
            gap[f"{name}_cpu"] = {
                t: round(latency[name][t]["cpu_ms_per_call"] - latency["core"][t]["cpu_ms_per_call"], 2) for t in tools
            }
    return latency, gap, loads


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = _common.machine()
    bench_tools.ensure_store(args.store, args.squad, args.copies)
    _, all_questions = squad_corpus.load(args.squad)
    questions = [q.question for q in squad_corpus.sample(all_questions, None, args.seed)]
    here = str(_common.ROOT)
    variants = {"B": here} | ({"A": args.baseline or here} if args.baseline or args.a_env else {})
    variants |= dict(pair.split("=", 1) for pair in args.variant)  # more checkouts, each called in turn too
    envs = {"A": dict(pair.split("=", 1) for pair in args.a_env)}
    cold: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for number in range(args.cold_starts):
        for name in sorted(variants) if number % 2 == 0 else sorted(variants, reverse=True):
            client = LineClient(args.store, variants[name], envs.get(name))
            client.call("search_narrow", {"query": questions[-1 - number]})
            cold[name].append(
                {
                    "initialize_s": client.initialized_s,
                    "initialize_cpu_s": client.initialize_cpu_s,
                    "first_search_narrow_s": time.perf_counter() - client.began,
                }
            )
            client.close()
        if args.floor:  # in turn with the servers' starts, so it sees the same load
            floor = LineClient(args.store, here, floor=True)
            cold.setdefault("sdk_floor", []).append(
                {"initialize_s": floor.initialized_s, "initialize_cpu_s": floor.initialize_cpu_s}
            )
            floor.close()
    latency, gap, loads = measure(args, variants, envs, questions) if args.rounds else ({}, {}, [])
    return {
        "benchmark": "stdio_ab",
        "machine": info,
        "git": _common.git_revision(),
        "variants": (
            {"A": f"{revision(args.baseline) if args.baseline else 'this checkout'} with {args.a_env}"}
            if "A" in variants
            else {}
        )
        | ({"B": "this checkout"} if len(variants) > 1 else {})
        | {name: revision(path) for name, path in variants.items() if name not in ("A", "B")},
        "store_chunks": bench_tools.store_chunks(args.store),
        "rounds": args.rounds,
        "calls_per_tool_and_round": args.calls,
        "client": "JSON-RPC lines written and read by the benchmark (no client-side validation of results)",
        "cold_start": {
            name: {
                "runs": [{k: round(v, 3) for k, v in s.items()} for s in starts],
                "initialize_median_s": round(statistics.median(s["initialize_s"] for s in starts), 3),
                "initialize_cpu_median_s": round(statistics.median(s["initialize_cpu_s"] for s in starts), 3),
                "first_search_narrow_median_s": (
                    round(statistics.median(s["first_search_narrow_s"] for s in starts), 3)
                    if "first_search_narrow_s" in starts[0]
                    else None
                ),
            }
            for name, starts in cold.items()
            if starts
        },
        "latency": latency,
        "p50_minus_core_ms": gap,  # "A", "B": wall p50; "A_cpu", "B_cpu": CPU per call
        "load_per_round": loads,
        "load_at_end": _common.load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.ab_arguments(parser)
    parser.add_argument(
        "--a-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment of server A only (repeatable); without --baseline, A is this checkout with it",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=CHECKOUT",
        help="one more version to serve, called in turn with A and B (repeatable): each piece of a change in one run",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also a one-tool server on the MCP SDK alone: its cold starts, and its calls in turn with the others "
        f"(`{FLOOR}`: the floor of a call over stdio)",
    )
    parser.add_argument("--core", action="store_true", help="also the same work in process, alternating")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=20, help="measured calls per tool, variant and round")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured calls at the start of each block")
    parser.add_argument("--cold-starts", type=int, default=5, help="fresh starts per variant (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tools", nargs="+", choices=SEARCHES + RANKED + CONTEXT, help="only these tools (default: every one)"
    )
    _common.result_arguments(parser, "stdio_ab")
    parser.add_argument("--smoke", action="store_true", help="a tiny store, two rounds of two calls; nothing saved")
    args = parser.parse_args()
    _common.offline_env()
    if args.smoke:
        with _common.smoke_store(args):
            args.rounds, args.calls, args.warmup, args.cold_starts = 2, 2, 1, 0
            _common.emit(run(args))
        return
    _common.conclude(args, run(args))


if __name__ == "__main__":
    main()
