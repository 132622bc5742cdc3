"""MCP tool latency over a real stdio session, and cold start, against `granrag-mcp serve --store <SQuAD-A>`.

A real MCP client (the SDK's `Client` over `stdio_client`) starts the server as a subprocess and calls every
tool sequentially with SQuAD questions as queries; follow-up tools (expand_window, get_parent, get_chunks,
rerank) take chunk ids returned by earlier searches. Latency is the client-side round trip of `call_tool`
(JSON-RPC over pipes, argument validation, retrieval, result packing and serialisation). A few warm-up calls
per tool are not counted. Cold start is measured in fresh server processes: process spawn to `initialize`
answered, and to the first `search_narrow` answered.

With --core, the same workloads also run in this process directly on the retrieval core (`Engine.view()`),
without MCP, so the protocol and packing overhead can be told apart from the retrieval time.

    .venv/bin/python benchmarks/suite/bench_tools.py --store /tmp/squad-a-store        # indexes it first if empty
    .venv/bin/python benchmarks/suite/bench_tools.py --store /tmp/squad-a-store --calls 200 --core

Prints one JSON object and writes benchmarks/results/tools.json.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import squad_corpus  # noqa: E402

HEAVY = ("hrr_search", "rerank")  # seconds per call with the embedding reranker: fewer calls (--heavy-calls)
TOOLS = (
    "search_narrow",
    "search_broad",
    "search_fused",
    "hrr_search",
    "expand_window",
    "get_parent",
    "get_chunks",
    "rerank",
    "list_documents",
)
WARMUP = 5


def granrag_command() -> str:
    found = Path(sys.executable).with_name("granrag-mcp")
    return str(found) if found.exists() else (shutil.which("granrag-mcp") or "granrag-mcp")


def ensure_store(store: Path, squad: Path, copies: int, **settings: Any) -> dict[str, Any] | None:
    """Index the corpus into `store` (with these settings on top of the defaults) unless it holds an index."""
    from granrag_mcp.store.store import read_current

    if read_current(store) is not None:
        return None
    from granrag_mcp.engine import run_index
    from granrag_mcp.settings import Settings

    documents, _ = squad_corpus.load(squad)
    documents = squad_corpus.with_reordered_copies(documents, copies)
    with tempfile.TemporaryDirectory(prefix="granrag-bench-corpus-") as tmp:
        squad_corpus.write(documents, Path(tmp))
        print(f"[bench_tools] indexing the SQuAD-A corpus into {store} ...", file=sys.stderr)
        summary = run_index([Path(tmp)], Settings(store=store, log_level="WARNING", **settings), quiet=True)
    return {"indexed": True, "seconds": summary.seconds}


def store_chunks(store: Path) -> dict[str, int]:
    """Chunks per level in the store's current generation."""
    import sqlite3

    from granrag_mcp.store.store import read_current

    folder = store / read_current(store).generation
    with sqlite3.connect(f"file:{folder / 'catalog.sqlite'}?mode=ro", uri=True) as db:
        counts = dict(db.execute("SELECT level, COUNT(*) FROM chunks GROUP BY level"))
    return {**counts, "total": sum(counts.values())}


SERVER_THREADS: int | None = None  # --server-threads: OMP_NUM_THREADS for the server (torch and FAISS)


def server_params(store: Path):
    from mcp.client.stdio import StdioServerParameters

    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "GRANRAG_LOG_LEVEL": "WARNING",
    }
    for name in ("PATH", "HOME", "PYTHONPATH", "GRANRAG_RERANKER", "GRANRAG_CROSS_ENCODER"):
        if name in os.environ:
            env[name] = os.environ[name]
    if SERVER_THREADS is not None:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(SERVER_THREADS)
    return StdioServerParameters(command=granrag_command(), args=["serve", "--store", str(store)], env=env)


class ToolError(RuntimeError):
    pass


async def call(client, name: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    result = await client.call_tool(name, arguments)
    seconds = time.perf_counter() - began
    if result.is_error:
        raise ToolError(f"{name}({arguments}) failed: {result.content}")
    return seconds, result.structured_content or {}


def workloads(questions: list[str], calls: int, heavy_calls: int, rng: random.Random):
    """Per tool, a function (pool of ids) -> list of argument dicts; ids come from the search phase.

    The first WARMUP entries (one for heavy tools) are warm-up calls, not measured. Each tool that takes a query
    gets its own slice of the questions, so no measured call finds its query vector in the server's query cache.
    """
    block = calls + WARMUP

    def qs(n: int, slot: int) -> list[str]:
        return [questions[(slot * block + i) % len(questions)] for i in range(n)]

    return {
        "search_narrow": lambda ids: [{"query": q} for q in qs(calls + WARMUP, 0)],
        "search_broad": lambda ids: [{"query": q} for q in qs(calls + WARMUP, 1)],
        "search_fused": lambda ids: [{"query": q} for q in qs(calls + WARMUP, 2)],
        "hrr_search": lambda ids: [{"query": q} for q in qs(heavy_calls + 1, 3)],
        "expand_window": lambda ids: [
            {"chunk_id": rng.choice(ids["narrow"] + ids["mid"])} for _ in range(calls + WARMUP)
        ],
        "get_parent": lambda ids: [{"chunk_ids": rng.sample(ids["narrow"], 3)} for _ in range(calls + WARMUP)],
        "get_chunks": lambda ids: [
            {"chunk_ids": rng.sample(ids["narrow"] + ids["mid"], 5)} for _ in range(calls + WARMUP)
        ],
        "rerank": lambda ids: [
            {"query": q, "chunk_ids": ids["mid_lists"][(i - 1) % len(ids["mid_lists"])], "top_n": 5}
            for i, q in enumerate(qs(heavy_calls + 1, 4))
        ],
        "list_documents": lambda ids: [{"limit": 50, "offset": rng.randrange(0, 20)} for _ in range(calls + WARMUP)],
    }


async def collect_ids(client, questions: list[str]) -> dict[str, list]:
    """Chunk ids from earlier searches: narrow hits, their mid parents, and lists of 20 mid chunks per question."""
    ids: dict[str, list] = {"narrow": [], "mid": [], "mid_lists": []}
    for q in questions[-40:]:  # not among the measured queries (see `workloads`)
        _, narrow = await call(client, "search_narrow", {"query": q, "k": 10})
        ids["narrow"] += [h["chunk_id"] for h in narrow["hits"]]
        ids["mid"] += [h["parent_id"] for h in narrow["hits"] if h.get("parent_id")]
        _, mids = await call(client, "search_narrow", {"query": q, "k": 20, "level": "mid", "max_tokens": 100000})
        ids["mid_lists"].append([h["chunk_id"] for h in mids["hits"]])
    ids["narrow"] = list(dict.fromkeys(ids["narrow"]))
    ids["mid"] = list(dict.fromkeys(ids["mid"]))
    return ids


async def session_latency(
    store: Path, questions: list[str], calls: int, heavy_calls: int, seed: int, tools: tuple[str, ...] = TOOLS
) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    rng = random.Random(seed)
    out: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(server_params(store), errlog=errlog), mode="legacy") as client:
            await call(client, "search_narrow", {"query": questions[0]})  # waits for the engine to load
            ids = await collect_ids(client, questions)
            out["id_pool"] = {
                "narrow": len(ids["narrow"]),
                "mid": len(ids["mid"]),
                "mid_lists": len(ids["mid_lists"]),
                "mids_per_rerank": statistics.mean(len(x) for x in ids["mid_lists"]),
            }
            plans = workloads(questions, calls, heavy_calls, rng)
            for tool in tools:
                arguments = plans[tool](ids)
                warmup = 1 if tool in HEAVY else WARMUP
                for a in arguments[:warmup]:
                    await call(client, tool, a)
                times = []
                sizes = []
                for a in arguments[warmup:]:
                    seconds, content = await call(client, tool, a)
                    times.append(seconds)
                    sizes.append(content.get("tokens_used", 0))
                out[tool] = {**_common.latency_summary(times), "mean_tokens_returned": round(statistics.mean(sizes), 1)}
                if tool in HEAVY:  # per call, in order: rerank's mid lists repeat after 40 calls (cache-warm)
                    out[tool]["times_ms"] = [round(t * 1000, 1) for t in times]
                print(
                    f"[bench_tools] {tool}: p50 {out[tool]['p50_ms']} ms, p95 {out[tool]['p95_ms']} ms", file=sys.stderr
                )
    return out


async def cold_start(store: Path, question: str) -> dict[str, float]:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    with open(os.devnull, "w") as errlog:
        began = time.perf_counter()
        async with Client(stdio_client(server_params(store), errlog=errlog), mode="legacy") as client:
            initialized = time.perf_counter()
            await call(client, "search_narrow", {"query": question})
            searched = time.perf_counter()
    return {"initialize_s": initialized - began, "first_search_narrow_s": searched - began}


def core_latency(
    store: Path, questions: list[str], calls: int, heavy_calls: int, seed: int, tools: tuple[str, ...] = TOOLS
) -> dict[str, Any]:
    """The same kinds of calls straight on the retrieval core, in this process (no MCP, no packing)."""
    from granrag_mcp.engine import Engine
    from granrag_mcp.retrieval.hrr import hrr_search
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.parents import find_parents
    from granrag_mcp.retrieval.rerank import rerank
    from granrag_mcp.retrieval.rrf import search_rrf
    from granrag_mcp.retrieval.window import expand_window
    from granrag_mcp.settings import Settings

    if SERVER_THREADS is not None:
        import faiss
        import torch

        torch.set_num_threads(SERVER_THREADS)
        faiss.omp_set_num_threads(SERVER_THREADS)
    engine = Engine(Settings(store=store, log_level="WARNING"))
    rng = random.Random(seed)
    view = engine.view()
    narrow_ids, mid_lists = [], []
    for q in questions[-40:]:
        hits = search_level(view, q, "narrow", 10)
        narrow_ids += [h.chunk.public_id for h in hits]
        mid_lists.append([h.chunk.public_id for h in search_level(view, q, "mid", 20)])
    narrow_ids = list(dict.fromkeys(narrow_ids))
    block = calls + WARMUP

    def slot(n: int) -> list[str]:  # a slice of questions per tool: no measured query is in the query cache
        return [questions[(n * block + i) % len(questions)] for i in range(calls)]

    qs = slot(5)
    narrow_pairs = [rng.sample(narrow_ids, 3) for _ in qs]
    plans = {
        "search_narrow": [(lambda q=q: search_level(engine.view(), q, "narrow", 10)) for q in slot(0)],
        "search_broad": [(lambda q=q: search_level(engine.view(), q, "broad", 5)) for q in slot(1)],
        "search_fused": [(lambda q=q: search_rrf(engine.view(), q, 10, level="mid")) for q in slot(2)],
        "hrr_search": [(lambda q=q: hrr_search(engine.view(), q, 5, 50, 20, 20)) for q in slot(3)[:heavy_calls]],
        "expand_window": [(lambda i=rng.choice(narrow_ids): expand_window(engine.view(), i)) for _ in qs],
        "get_parent": [(lambda i=ids: find_parents(engine.view(), i)) for ids in narrow_pairs],
        "get_chunks": [(lambda i=rng.sample(narrow_ids, 5): engine.view().get_chunks(i)) for _ in qs],
        "rerank": [
            (lambda q=q, i=mid_lists[n % len(mid_lists)]: rerank(engine.view(), q, i, 5, "auto"))
            for n, q in enumerate(slot(4)[:heavy_calls])
        ],
        "list_documents": [(lambda: engine.view().list_documents(None, 50, 0)) for _ in qs],
    }
    out: dict[str, Any] = {"query_embedding": None}
    times = []
    for q in qs:
        began = time.perf_counter()
        engine.embedder.embed([q])
        times.append(time.perf_counter() - began)
    out["query_embedding"] = _common.latency_summary(times)
    for tool, fns in plans.items():
        if tool not in tools:
            continue
        warmup = 1 if tool in HEAVY else WARMUP
        for fn in fns[:warmup]:
            fn()
        times = []
        for fn in fns[warmup:]:  # not the warm-up calls again: their queries would come from the query cache
            began = time.perf_counter()
            fn()
            times.append(time.perf_counter() - began)
        out[tool] = _common.latency_summary(times)
    out["reranker"] = engine.reranker.name if engine.reranker else None
    return out


def thread_ab(store: Path, questions: list[str], rounds: int = 4, per_round: int = 50) -> dict[str, Any]:
    """Query embedding + narrow FAISS search with 1 and 2 torch/FAISS threads, alternating rounds in one process,
    so both see the same load."""
    import faiss
    import torch

    from granrag_mcp.engine import Engine
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.settings import Settings

    engine = Engine(Settings(store=store, log_level="WARNING"), load_reranker_now=False)
    view = engine.view()
    times: dict[int, list[float]] = {1: [], 2: []}
    for number in range(rounds):
        for threads in (1, 2) if number % 2 == 0 else (2, 1):
            torch.set_num_threads(threads)
            faiss.omp_set_num_threads(threads)
            for q in questions[number * per_round : (number + 1) * per_round]:
                began = time.perf_counter()
                search_level(view, q, "narrow", 10)
                times[threads].append(time.perf_counter() - began)
    return {f"{t}_thread": _common.latency_summary(v) for t, v in times.items()} | {
        "what": "in-process search_level(level narrow, k=10): query embedding + FAISS + catalog, alternating rounds of "
        f"{per_round} queries with 1 and 2 threads ({rounds} rounds each)"
    }


def startup_breakdown_child(store: Path, question: str) -> None:
    """In a fresh process: where the server's start-up time goes, step by step (what the server does, in order)."""
    import json

    steps: dict[str, float] = {}
    t = time.perf_counter()

    def step(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        steps[name] = round(now - t, 3)
        t = now

    import granrag_mcp.server.app  # noqa: F401  (mcp, pydantic, faiss, numpy, the retrieval core)

    step("import granrag_mcp.server.app")
    from granrag_mcp.server.app import build_server, check_store
    from granrag_mcp.settings import Settings

    settings = Settings(store=store, log_level="WARNING")
    check_store(settings)
    build_server(settings)
    step("check_store + build_server (initialize can be answered after this)")
    from granrag_mcp.tokens import get_tokenizer

    get_tokenizer(settings.tokenizer)
    step("tiktoken encoding + token byte lengths")
    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.store.manifest import identity_for

    embedder = make_embedder(settings)
    step("embedding model (imports torch; loads MiniLM)")
    from granrag_mcp.rerankers import load_reranker

    reranker = load_reranker(settings.reranker, embedder, settings.cross_encoder)
    step(f"reranker ({reranker.name})")
    from granrag_mcp.store.live import LiveStore

    live = LiveStore(settings.store, identity_for(settings, embedder.dimension))
    step("open store (checksums, FAISS, BM25, SQLite)")
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.view import View

    search_level(View(live.snapshot(), embedder, reranker), question, "narrow", 10)
    step("first search_narrow on the core")
    search_level(View(live.snapshot(), embedder, reranker), question + " again", "narrow", 10)
    step("second search_narrow on the core")
    print(json.dumps(steps))


def startup_breakdown(store: Path, question: str, repeats: int) -> dict[str, Any]:
    import json
    import subprocess

    runs = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, __file__, "--breakdown-child", str(store), "--breakdown-question", question],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        )
        if done.returncode != 0:
            return {"error": done.stderr[-2000:]}
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"runs": repeats, "median_seconds": {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--store",
        type=Path,
        default=Path(tempfile.gettempdir()) / "granrag-bench-squad-a-x2",
        help="SQuAD-A store (indexed first when it holds no index)",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=2,
        help="when indexing: each article this many times, the copies with their paragraphs "
        "reordered (default 2: 11.5k chunks, above the 10k of the target)",
    )
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--calls", type=int, default=200, help="measured calls per tool (default 200)")
    parser.add_argument(
        "--heavy-calls",
        type=int,
        default=30,
        help="measured calls of rerank and hrr_search (default 30: seconds each with the embedding reranker)",
    )
    parser.add_argument("--cold-starts", type=int, default=5, help="fresh server starts (default 5)")
    parser.add_argument("--core", action="store_true", help="also time the retrieval core in-process")
    parser.add_argument("--seed", type=int, default=0)
    _common.result_arguments(parser, "tools")
    parser.add_argument(
        "--smoke", action="store_true", help="a store of two articles, a few calls per tool, --core; nothing saved"
    )
    parser.add_argument(
        "--server-threads",
        type=int,
        help="OMP_NUM_THREADS for the server (torch and FAISS threads); default: their own default",
    )
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated tools to time (default all)")
    parser.add_argument(
        "--thread-ab-only",
        action="store_true",
        help="only the 1-vs-2-thread search comparison in-process; merged into tools.json",
    )
    parser.add_argument(
        "--breakdown-only",
        action="store_true",
        help="only the in-process start-up breakdown (3 fresh processes); merged into tools.json",
    )
    parser.add_argument("--breakdown-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--breakdown-question", help=argparse.SUPPRESS)
    args = parser.parse_args()
    _common.offline_env()
    global SERVER_THREADS
    SERVER_THREADS = args.server_threads
    if args.server_threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(args.server_threads)  # the breakdown children inherit it
    if args.breakdown_child:
        startup_breakdown_child(args.breakdown_child, args.breakdown_question)
        return
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="granrag-bench-smoke-") as tmp:
            args.store, args.copies, args.calls, args.heavy_calls, args.cold_starts = Path(tmp) / "store", 1, 3, 1, 1
            args.squad, args.core, args.no_save = squad_corpus.small_copy(args.squad, Path(tmp)), True, True
            run(args)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    import anyio

    info = _common.machine()
    indexing = ensure_store(args.store, args.squad, args.copies)
    _, questions = squad_corpus.load(args.squad)
    needed = 6 * (max(args.calls, args.heavy_calls) + WARMUP) + 40  # a slice per query tool (see `workloads`)
    chosen = [q.question for q in squad_corpus.sample(questions, max(needed, 200), args.seed)]
    random.Random(args.seed).shuffle(chosen)

    if args.thread_ab_only:
        import json

        target = _common.RESULTS / f"{args.name}.json"
        ab = thread_ab(args.store, chosen)
        ab |= {"load_at_start": info["load_at_start"], "load_at_end": _common.load_average()}
        if target.exists() and not args.no_save:
            data = json.loads(target.read_text(encoding="utf-8"))
            data["thread_ab"] = ab
            target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        _common.emit(ab)
        return
    if args.breakdown_only:
        import json

        target = _common.RESULTS / f"{args.name}.json"
        breakdown = startup_breakdown(args.store, chosen[0], 3)
        if target.exists() and not args.no_save:
            data = json.loads(target.read_text(encoding="utf-8"))
            data["startup_breakdown"] = {
                **breakdown,
                "load_at_start": info["load_at_start"],
                "load_at_end": _common.load_average(),
            }
            target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        _common.emit(breakdown)
        return
    starts = []
    for number in range(args.cold_starts):
        starts.append(anyio.run(cold_start, args.store, chosen[number]))
        print(
            f"[bench_tools] cold start {number + 1}: initialize {starts[-1]['initialize_s']:.2f} s, first search "
            f"{starts[-1]['first_search_narrow_s']:.2f} s",
            file=sys.stderr,
        )
    cold = {
        "runs": [{k: round(v, 3) for k, v in s.items()} for s in starts],
        "initialize_median_s": round(statistics.median(s["initialize_s"] for s in starts), 3),
        "first_search_narrow_median_s": round(statistics.median(s["first_search_narrow_s"] for s in starts), 3),
    }
    tools = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    latency = anyio.run(session_latency, args.store, chosen, args.calls, args.heavy_calls, args.seed, tools)
    result: dict[str, Any] = {
        "benchmark": "tools",
        "machine": info,
        "git": _common.git_revision(),
        "store": str(args.store),
        "store_chunks": store_chunks(args.store),
        "indexing": indexing,
        "server_threads": args.server_threads,
        "calls_per_tool": args.calls,
        "calls_rerank_and_hrr_search": args.heavy_calls,
        "warmup_calls_per_tool": WARMUP,
        "queries": f"{len(chosen)} SQuAD-A questions (seeded sample, seed {args.seed})",
        "cold_start": cold,
        "mcp_stdio": latency,
    }
    if args.core:
        result["core_in_process"] = core_latency(args.store, chosen, args.calls, args.heavy_calls, args.seed, tools)
        result["startup_breakdown"] = startup_breakdown(args.store, chosen[0], 1 if args.smoke else 3)
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
