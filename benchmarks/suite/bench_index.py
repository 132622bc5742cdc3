"""Indexing throughput on the SQuAD-A corpus: tokens per second overall and per stage, peak RSS, store size.

Each vector mode is indexed into a fresh store by a child process, so its peak RSS (the child's own VmHWM, not
ru_maxrss, which can carry this parent's peak through fork) is the indexing run alone (imports and model load
included, nothing of this parent). Usage:

    .venv/bin/python benchmarks/suite/bench_index.py                      # mean, truncate, windows
    .venv/bin/python benchmarks/suite/bench_index.py --modes mean --keep-store /tmp/squad-a-store
    .venv/bin/python benchmarks/suite/bench_index.py --modes mean --baseline /tmp/base-checkout --rounds 2 \
        --precisions bf16,fp32 --name index_ab     # A/B: a baseline checkout and this one, alternating

In an A/B the fp32 runs hold torch, oneDNN and FAISS to AVX2 (the Makefile's AVX2_ONLY), the path of a CPU
without bf16.

Prints one JSON object and writes benchmarks/results/index.json (or `--name`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import squad_corpus  # noqa: E402

STAGES = ("hash", "extract", "sentences", "chunk", "embed", "index", "graph", "adapt", "commit")


def _rss_now_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(corpus: Path, store: Path, mode: str) -> None:
    """Runs in the child process: one index run, its measurements as one JSON line on stdout."""
    _common.offline_env()
    began = time.perf_counter()
    from granrag_mcp.engine import run_index
    from granrag_mcp.settings import Settings

    settings = Settings(store=store, vector_mode=mode, log_level="WARNING")
    imported = time.perf_counter()
    rss_before = _rss_now_mib()
    summary = run_index([corpus], settings, quiet=True)
    wall = time.perf_counter() - imported
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the adaptation's child process, where it ran one
    from granrag_mcp.embedding.embedder import resolve_precision

    print(
        json.dumps(
            {
                "precision": resolve_precision(settings.precision),
                "import_seconds": imported - began,
                "run_index_seconds": wall,
                "seconds": summary.seconds,
                # wall and CPU seconds by stage, as the index run reports them (a checkout from before has none)
                "stage_table": summary.stage_table() if hasattr(summary, "stage_table") else None,
                "corpus_tokens": summary.corpus_tokens,
                "documents": summary.added,
                "new_chunks": summary.new_chunks,
                "rss_before_index_mib": rss_before,
                "peak_rss_mib": _common.memory()["peak_mib"],
                "cpu_user_seconds": usage.ru_utime,
                "cpu_system_seconds": usage.ru_stime,
                "cpu_children_seconds": children.ru_utime + children.ru_stime,
            }
        )
    )


def run_mode(corpus: Path, store: Path, mode: str, code: Path | None = None, env: dict[str, str] | None = None) -> dict:
    """One index run in a child process; `code`: the checkout whose granrag_mcp it imports (default: this one)."""
    cmd = [sys.executable, __file__, "--child", "--corpus", str(corpus), "--store", str(store), "--mode", mode]
    child_env = {**os.environ, **(env or {})}
    if code is not None:
        child_env["PYTHONPATH"] = str(code)
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=child_env)
    process_seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"index run ({mode}) failed:\n{done.stderr[-4000:]}")
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    tokens = raw["corpus_tokens"]
    stages = {name: raw["seconds"].get(name, 0.0) for name in STAGES}
    staged = sum(stages.values())
    generation = next(p for p in store.iterdir() if p.name.startswith("gen-"))
    return {
        "mode": mode,
        "precision": raw["precision"],
        "corpus_tokens": tokens,
        "documents": raw["documents"],
        "chunks": raw["new_chunks"],
        "process_seconds": round(process_seconds, 2),
        "run_index_seconds": round(raw["run_index_seconds"], 2),
        "model_load_and_other_seconds": round(raw["run_index_seconds"] - staged, 2),
        "tokens_per_second": round(tokens / raw["run_index_seconds"]),
        "tokens_per_second_process": round(tokens / process_seconds),
        "stages": {
            name: {
                "seconds": round(s, 3),
                "tokens_per_second": round(tokens / s) if s > 0 else None,
                "share": round(s / raw["run_index_seconds"], 3),
            }
            for name, s in stages.items()
        },
        "peak_rss_mib": round(raw["peak_rss_mib"], 1),
        "rss_before_index_mib": round(raw["rss_before_index_mib"], 1),
        "cpu_seconds": round(raw["cpu_user_seconds"] + raw["cpu_system_seconds"] + raw["cpu_children_seconds"], 1),
        "cpu_children_seconds": round(raw["cpu_children_seconds"], 1),
        # each stage's CPU seconds as the run reports them (children included), so an A/B shows where CPU moved
        "stage_cpu_seconds": {row["stage"]: row["cpu_s"] for row in raw["stage_table"] or []},
        "store_bytes": _common.dir_size(store),
        "store_files": {p.name: p.stat().st_size for p in sorted(generation.iterdir()) if p.is_file()},
    }


def ab_runs(args: argparse.Namespace, corpus: Path, tmp: Path) -> list[dict]:
    """Each round runs A (the baseline checkout) then B (this one) for every mode and precision, alternating, so
    both see the same load; fp32 runs are held to AVX2."""
    runs = []
    for number in range(args.rounds):
        for precision in [p.strip() for p in args.precisions.split(",") if p.strip()]:
            env = {"GRANRAG_PRECISION": precision, **(_common.AVX2_ONLY if precision == "fp32" else {})}
            for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
                for variant, code in (("A", args.baseline), ("B", _common.ROOT)):
                    store = tmp / f"store-{number}-{precision}-{mode}-{variant}"
                    run = {"variant": variant, "round": number, **run_mode(corpus, store, mode, code, env)}
                    run["load_after"] = _common.load_average()
                    runs.append(run)
                    print(f"[bench_index] {variant} {precision} {mode}: {run['run_index_seconds']} s", file=sys.stderr)
                    shutil.rmtree(store)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default="mean,truncate,windows", help="comma-separated vector modes")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument(
        "--keep-store",
        type=Path,
        metavar="DIR",
        help="keep the store of the first mode here (it must not exist yet); others are removed",
    )
    parser.add_argument("--baseline", type=Path, help="A/B: the root of a checkout to alternate with this one")
    parser.add_argument("--rounds", type=int, default=1, help="A/B: rounds, each runs A then B (default 1)")
    parser.add_argument("--precisions", default="auto", help="A/B: comma-separated GRANRAG_PRECISION values")
    _common.result_arguments(parser, "index")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.corpus, args.store, args.mode)
        return

    _common.offline_env()
    info = _common.machine()
    documents, questions = squad_corpus.load(args.squad)
    runs = []
    with tempfile.TemporaryDirectory(prefix="granrag-bench-index-") as tmp:
        corpus = Path(tmp) / "corpus"
        squad_corpus.write(documents, corpus)
        if args.baseline is not None:
            runs = ab_runs(args, corpus, Path(tmp))
        else:
            for number, mode in enumerate(m.strip() for m in args.modes.split(",") if m.strip()):
                store = args.keep_store if (number == 0 and args.keep_store) else Path(tmp) / f"store-{mode}"
                if store.exists():
                    raise SystemExit(f"{store} exists: the benchmark needs a fresh store")
                print(f"[bench_index] indexing {len(documents)} documents, vector mode {mode} ...", file=sys.stderr)
                run = run_mode(corpus, store, mode)
                run["load_after"] = _common.load_average()
                runs.append(run)
                print(
                    f"[bench_index] {mode}: {run['run_index_seconds']} s, {run['tokens_per_second']} tokens/s, "
                    f"peak RSS {run['peak_rss_mib']} MiB",
                    file=sys.stderr,
                )
    result = {
        "benchmark": "index",
        "machine": info,
        "git": _common.git_revision(),
        "corpus": {
            "file": args.squad.name,
            "documents": len(documents),
            "characters": sum(len(t) for t in documents.values()),
        },
        "runs": runs,
    }
    if args.baseline is not None:
        result["baseline"] = {"A": _common.git_revision(args.baseline), "B": result["git"]}
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
