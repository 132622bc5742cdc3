"""Concept graph: evaluation on bridge and overview questions, tool latency, and build cost as the corpus grows.

    python benchmarks/suite/bench_graph.py eval --store STORE            # bridge/overview table (graph_questions)
    python benchmarks/suite/bench_graph.py latency --store STORE [--baseline REF]  # p50/p95 of the graph techniques and tools
    python benchmarks/suite/bench_graph.py scale --sentences 20000 40000 # build time and peak memory, synthetic corpus

`scale` builds the graph alone (concept extraction, matching, edges, Leiden, reports) over a synthetic catalog: sentences
drawn from a Zipf vocabulary of multi-word terms, with the fake embedder's vectors; it reports seconds and the peak
resident memory of a child process per size, and a linear projection to one million sentences when the sizes stop
short of it.

Longer than most benchmarks because its three commands share the store, the graph techniques and the results folder.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402

# label: (tool, arguments) from a pair of concept names. The query words are unlike those of the in-process part, so
# that each is embedded in the call (the embedder caches queries).
TOOL_CALLS: dict[str, Callable[[str, str], tuple[str, dict[str, Any]]]] = {
    "find_concepts": lambda a, b: ("find_concepts", {"query": f"the {a}"}),
    "concept_neighbourhood": lambda a, b: ("concept_neighbourhood", {"concept": a, "depth": 2}),
    "concept_paths": lambda a, b: ("concept_paths", {"source": a, "target": b, "max_hops": 4}),
    "graph_search communities": lambda a, b: ("graph_search", {"query": f"What are the main themes of {a}?"}),
    "graph_search passages": lambda a, b: (
        "graph_search",
        {"query": f"How does {a} relate to {b}?", "mode": "passages", "k": 10},
    ),
}


def cmd_eval(args: argparse.Namespace) -> dict:
    """The bridge and overview table of `granrag_mcp.evaluation.graph_questions` on a store; with `--protocol`, also
    the protocol's bridge questions (`evaluation/bridge_protocol.py`) asked through the MCP tools."""
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.graph_questions import evaluate, graph_table
    from granrag_mcp.settings import Settings

    settings = Settings(store=args.store)
    engine = Engine(settings, load_reranker_now=False)
    result = evaluate(engine.view(), engine.tokenizer, args.questions, args.seed)
    if args.protocol:
        from granrag_mcp.evaluation.bridge_tools import independent_bridges, run_bridges
        from granrag_mcp.server.app import build_server

        questions, coverage = independent_bridges(engine.view(), args.questions, args.seed)
        bridge = run_bridges(build_server(settings, lambda _: engine), questions, engine.tokenizer)
        result["independent"] = {"questions": len(questions), "coverage": coverage, "bridge": bridge}
        print(graph_table(result), file=sys.stderr)
    return result


# The modules under the graph techniques whose query-time work a baseline brings along (those it lacks: the current ones).
_UNDER_TECHNIQUES = {
    "granrag_mcp.pagerank": "granrag_mcp/pagerank.py",
    "granrag_mcp.retrieval.graph_vectors": "granrag_mcp/retrieval/graph_vectors.py",
}


def _source_at(ref: str, relative: str) -> str | None:
    shown = subprocess.run(["git", "show", f"{ref}:{relative}"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def _exec_module(name: str, source: str, label: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, label, "exec"), module.__dict__)  # noqa: S102 -- the project's own code
    return module


def _module_at(ref: str, relative: str = "granrag_mcp/retrieval/graph.py") -> types.ModuleType:
    """The graph techniques as they were at git `ref`, with that commit's PageRank and vector searches, loaded
    beside the current ones for an A/B in one process: its imports of those modules see the ref's copies while
    it loads, and the current ones are put back after."""
    current = {name: sys.modules.get(name) for name in _UNDER_TECHNIQUES}
    try:
        for name, path in _UNDER_TECHNIQUES.items():
            source = _source_at(ref, path)
            if source is not None:
                sys.modules[name] = _exec_module(f"{name}_at_{ref}", source, f"{ref}:{path}")
        source = _source_at(ref, relative)
        if source is None:
            raise SystemExit(f"{ref} has no {relative}")
        return _exec_module(f"graph_at_{ref}", source, f"{ref}:{relative}")
    finally:
        for name, module in current.items():
            if module is not None:
                sys.modules[name] = module


def _technique_calls(techniques: types.ModuleType) -> dict[str, Callable[..., object]]:
    return {
        "find_concepts": lambda view, a, b: techniques.find_concepts(view, a, 10),
        "concept_neighbourhood (depth 2, 15 nodes)": lambda view, a, b: techniques.neighbourhood(view, a, 2, 15, 1),
        "concept_paths (4 hops, 3 paths)": lambda view, a, b: techniques.strongest_paths(view, a, b, 4, 3, 1),
        "graph_search communities": lambda view, a, b: techniques.communities(view, f"main themes of {a}", 5, None),
        "graph_search passages": lambda view, a, b: techniques.ppr_passages(view, f"How is {a} connected to {b}?", 10),
    }


def _tool_latency(store: Path, names: list[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """The four graph tools through the MCP SDK's in-memory client (validation, packing, output schema, and the
    client's own validation of each result against it), p50/p95."""
    import anyio
    from mcp.client import Client

    from granrag_mcp.engine import Engine
    from granrag_mcp.server.app import build_server
    from granrag_mcp.settings import Settings

    settings = Settings(store=store, log_level="WARNING")
    server = build_server(settings, engine_factory=lambda s: Engine(s, load_reranker_now=False))
    out: dict[str, dict[str, float]] = {}

    async def main() -> None:
        async with Client(server) as client:
            await client.call_tool("find_concepts", {"query": "warm up"})
            for label, make in TOOL_CALLS.items():
                seconds = []
                for a, b in names:
                    name, arguments = make(a, b)
                    start = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    seconds.append(time.perf_counter() - start)
                    if result.is_error:
                        raise RuntimeError(f"{name} {arguments}: {result.content}")
                out[label] = _percentiles(seconds)

    anyio.run(main)
    return out


def _percentiles(seconds: list[float]) -> dict[str, float]:
    seconds = sorted(seconds)
    return {"p50_ms": 1000 * statistics.median(seconds), "p95_ms": 1000 * seconds[int(0.95 * (len(seconds) - 1))]}


class _Remembered:
    """The engine's embedder with every query vector kept (its own cache keeps 256), so that the timed calls of
    either version read the same stored vectors."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.vectors: dict[str, Any] = {}

    def embed(self, texts: list[str], **options: Any) -> Any:
        import numpy as np

        missing = [t for t in texts if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.embed(missing)))
        return np.stack([self.vectors[t] for t in texts])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def cmd_latency(args: argparse.Namespace) -> dict:
    """Each technique in process with a fresh view per call, as a tool call gets one, its query embedded before (the
    embedding is timed apart, on other queries); with --baseline REF the techniques of that commit run alternately
    with the current ones, call by call. Then the tools through the MCP client, each query embedded in the call."""
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.graph_questions import bridge_questions
    from granrag_mcp.retrieval import graph as current
    from granrag_mcp.retrieval.view import View
    from granrag_mcp.settings import Settings

    engine = Engine(Settings(store=args.store), load_reranker_now=False)
    vectors = _Remembered(engine.embedder)

    def fresh_view() -> View:
        return View(engine.live.snapshot(), vectors)  # type: ignore[arg-type]

    graph, _ = current.graph_of(fresh_view())
    bridges = bridge_questions(graph, args.calls, seed=1)
    names = [(str(graph.keys[b.a]), str(graph.keys[b.b])) for b in bridges]
    versions = {"current": current}
    if args.baseline:
        versions[f"baseline {args.baseline}"] = _module_at(args.baseline)
    calls = {version: _technique_calls(module) for version, module in versions.items()}
    embed = []
    for a, b in names:
        start = time.perf_counter()
        engine.embedder.embed([f"Explain {a} and {b}."])
        embed.append(time.perf_counter() - start)
    for table in calls.values():  # warm: the first use builds the query-time structures and embeds the queries
        for call in table.values():
            for a, b in names:
                call(fresh_view(), a, b)
    seconds: dict[str, dict[str, list[float]]] = {v: {name: [] for name in calls[v]} for v in calls}
    cpu: dict[str, dict[str, list[float]]] = {v: {name: [] for name in calls[v]} for v in calls}
    for name in calls["current"]:
        for a, b in names:
            for version, table in calls.items():  # alternating, so both see the same load
                view = fresh_view()
                start, start_cpu = time.perf_counter(), time.thread_time()
                table[name](view, a, b)
                seconds[version][name].append(time.perf_counter() - start)
                cpu[version][name].append(time.thread_time() - start_cpu)
    return {
        "store_chunks": dict(engine.live.snapshot().manifest.counts),
        "calls": len(names),
        "concepts": len(graph),
        "edges": graph.n_edges,
        "communities": graph.n_clusters,
        "query_embedding": _percentiles(embed),
        "techniques_in_process": {
            version: {name: _percentiles(values) for name, values in table.items()}
            for version, table in seconds.items()
        },
        "techniques_in_process_cpu": {  # the calling thread's CPU time, which the load inflates far less
            version: {name: _percentiles(values) for name, values in table.items()} for version, table in cpu.items()
        },
        "tools_in_memory_client": _tool_latency(args.store, names),
    }


def _synthetic(n_sentences: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)

    def word(n: int) -> str:  # letters only: the concept filter drops tokens with digits
        letters = ""
        while True:
            n, rest = divmod(n, 20)
            letters += "bcdfghjklmnprstvwxz"[rest % 19] + "aeiou"[n % 5]
            if n == 0:
                return letters

    heads = [word(n + 400) for n in range(max(500, n_sentences // 10))]
    fillers = "the of a is was in with by for on that as from and".split()
    # Cumulative weights once: `choices` would otherwise sum the whole Zipf table on every call (1e11 steps at 1M).
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(heads))))
    out = []
    for _ in range(n_sentences):
        chosen = rng.choices(heads, cum_weights=cumulative, k=rng.randint(2, 6))
        words = []
        for term in chosen:
            words += [rng.choice(fillers), term.capitalize(), word(len(term) * 7 + ord(term[0]))]
        out.append(" ".join(words) + ".")
    return out


def _scale_child(n_sentences: int) -> None:
    """Runs in its own process, so that its peak memory is the graph build's own."""
    import numpy as np

    from granrag_mcp.indexing.graph import write_generation_graph
    from granrag_mcp.records import Chunk
    from granrag_mcp.store.catalog import Catalog, DocumentInfo
    from tests.fakes import FakeEmbedder

    sentences = _synthetic(n_sentences)
    per_doc = 2000
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        catalog = Catalog.open_writable(folder / "catalog.sqlite")
        next_id, texts = 1, {}
        for number, first in enumerate(range(0, n_sentences, per_doc)):
            doc = f"doc{number}.txt"
            part = sentences[first : first + per_doc]
            text = " ".join(part)
            texts[doc] = text
            broad, mid = next_id, next_id + 1
            chunks = [
                Chunk(broad, doc, "broad", 0, 0, len(text), 1, None, text),
                Chunk(mid, doc, "mid", 0, 0, len(text), 1, broad, text),
            ]
            position = 0
            for seq, sentence in enumerate(part):
                chunks.append(
                    Chunk(mid + 1 + seq, doc, "narrow", seq, position, position + len(sentence), 1, mid, sentence)
                )
                position += len(sentence) + 1
            next_id = mid + 2 + len(part)
            catalog.insert_document(DocumentInfo(doc, "x", doc, len(text), 1), text, chunks)
        catalog.commit()
        embedder = FakeEmbedder(dimension=384)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the corpus and catalog alone

        def vectors(ids: np.ndarray) -> np.ndarray:
            return embedder.embed([f"s{i}" for i in ids.tolist()])

        start = time.perf_counter()
        graph = write_generation_graph(folder, None, catalog, texts, vectors, embedder.embed, 384)
        seconds = time.perf_counter() - start
        size = sum(p.stat().st_size for p in folder.iterdir() if p.name in ("graph.npz", "doc_concepts.json"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "sentences": n_sentences,
                "seconds": seconds,
                "peak_rss_mb": peak,
                "peak_rss_before_graph_mb": before,
                "concepts": len(graph),
                "edges": graph.n_edges,
                "communities": graph.n_clusters,
                "bytes_on_disk": size,
            }
        )
    )


def cmd_scale(args: argparse.Namespace) -> dict:
    rows = []
    for n in args.sentences:
        done = subprocess.run([sys.executable, __file__, "_child", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(rows[-1], file=sys.stderr)
    if len(rows) < 2 or rows[-1]["sentences"] >= 1_000_000:
        return {"rows": rows, "method": "measured; synthetic sentences, fake embedder vectors"}
    # Linear fit through the two largest sizes, projected to a million sentences.
    a, b = rows[-2], rows[-1]
    per = lambda key: (b[key] - a[key]) / (b["sentences"] - a["sentences"])  # noqa: E731
    projection = {key: b[key] + per(key) * (1_000_000 - b["sentences"]) for key in ("seconds", "peak_rss_mb")}
    return {
        "rows": rows,
        "projected_1m_sentences": projection,
        "method": "linear through the two largest sizes; synthetic sentences, fake embedder vectors",
    }


def main() -> None:
    # One OpenMP/BLAS thread per call, as `granrag-mcp serve` sets before its libraries load (see app.run_server).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if sys.argv[1:2] == ["_child"]:
        _scale_child(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("eval", "latency"):
        sub = commands.add_parser(name)
        sub.add_argument("--store", type=Path, required=True)
        sub.add_argument("--questions", type=int, default=200)
        sub.add_argument("--calls", type=int, default=100)
        sub.add_argument("--baseline", metavar="REF", help="latency: also time the techniques of this git commit")
        sub.add_argument("--seed", type=int, default=0, help="eval: which bridge questions are drawn")
        sub.add_argument("--protocol", action="store_true", help="eval: also the protocol's bridges, through the tools")
    scale = commands.add_parser("scale")
    scale.add_argument("--sentences", type=int, nargs="+", default=[10_000, 20_000, 40_000])
    args = parser.parse_args()
    result = {"eval": cmd_eval, "latency": cmd_latency, "scale": cmd_scale}[args.command](args)
    result["machine"] = _common.machine()
    _common.finish(f"graph_{args.command}", result)


if __name__ == "__main__":
    main()
