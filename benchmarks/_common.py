"""The benchmarks' shared harness: offline environment, machine facts and load, percentiles, timers, memory, the
command-line arguments the scripts share, a warm engine over a QA set, and the end of a run (print, then save)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

# The Makefile's AVX2_ONLY: torch, oneDNN and FAISS held to AVX2, the fp32 path of a CPU without AVX-512 or bf16.
AVX2_ONLY = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "FAISS_OPT_LEVEL": "avx2"}

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"


def offline_env() -> None:
    """Nothing may be downloaded while a benchmark runs."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _meminfo_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    return {
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "ram_gib": _meminfo_gib(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_at_start": load_average(),
    }


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]) of a non-empty list."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_summary(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000.0 for s in seconds]
    return {
        "calls": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "mean_ms": round(sum(ms) / len(ms), 3) if ms else float("nan"),
        "max_ms": round(max(ms), 3) if ms else float("nan"),
    }


def recall_and_latency(search, queries, expected, k: int) -> dict[str, Any]:
    """recall@k of `search(query, k)` (a list of (id, score)) against the exact top-k ids, and its latency."""
    hits, times = 0, []
    for query, want in zip(queries, expected):
        began = time.perf_counter()
        found = search(query, k)
        times.append(time.perf_counter() - began)
        hits += len({i for i, _ in found} & set(want.tolist()))
    latency = latency_summary(times)
    return {
        f"recall_at_{k}": round(hits / (len(queries) * k), 4),
        "p50_ms": latency["p50_ms"],
        "p95_ms": latency["p95_ms"],
        "queries": len(queries),
    }


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


NO_SAVE = "GRANRAG_BENCH_NO_SAVE"
"""Set (to anything) by the smoke tests: every script runs as usual but writes no result file."""


def save_result(name: str, data: dict[str, Any]) -> Path:
    target = RESULTS / f"{name}.json"
    if os.environ.get(NO_SAVE):
        return target
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {**data, "load_at_end": load_average()}
    target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def emit(data: dict[str, Any]) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))
    sys.stdout.flush()


def finish(name: str, data: dict[str, Any], save: bool = True) -> None:
    """A benchmark's last step: its result as JSON on stdout, then, where `save`, into the results folder (its path
    on stderr)."""
    emit(data)
    if save:
        print(f"wrote {save_result(name, data)}", file=sys.stderr)


def git_revision(root: Path = ROOT) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def memory() -> dict[str, float]:
    """This process's resident, anonymous, file-backed and peak memory in MiB, from /proc/self/status."""
    fields = {"VmRSS": "rss_mib", "RssAnon": "anon_mib", "RssFile": "file_mib", "VmHWM": "peak_mib"}
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in fields:
            out[fields[key]] = round(int(line.split()[1]) / 1024, 1)
    return out


def result_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """`--name` (the result file's name in results/) and `--no-save`, as every script that saves a result takes."""
    parser.add_argument("--name", default=name, help=f"the result file: results/NAME.json (default {name})")
    parser.add_argument("--no-save", action="store_true", help="print the result only")


def conclude(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """`finish` as the command line asked: saved under `--name` unless `--no-save` or `--smoke`."""
    finish(args.name, result, save=not (args.no_save or getattr(args, "smoke", False)))


def ab_arguments(parser: argparse.ArgumentParser) -> None:
    """What every A/B harness over a served SQuAD-A store takes: the store (indexed on first use), how many copies of
    each article it holds, the SQuAD file, and the other checkout."""
    from benchmarks.corpora import squad_corpus

    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "granrag-bench-squad-a-x2")
    parser.add_argument("--copies", type=int, default=2, help="when indexing the store: copies of each article")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--baseline", help="PYTHONPATH of the version to compare with (a checkout's root)")


def qa_arguments(parser: argparse.ArgumentParser, questions: int | None) -> None:
    """A QA set in SQuAD form and a store that already holds its corpus (`granrag-mcp eval --squad FILE --store DIR`
    builds one), and how many of its questions."""
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=questions, help="a seeded sample of this many questions")


def warm_engine(args: argparse.Namespace, reranker: str | None = None) -> tuple[Any, Any, list[str]]:
    """An engine on `args.store` with FAISS on one thread, as the server runs, and `args.questions` sampled questions
    of `args.squad`, each embedded once beforehand so that the arms a script compares differ only in their own work.
    Returns the engine, its caching embedder and the questions."""
    import faiss

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine, with_store_model
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import CachedEmbedder
    from granrag_mcp.rerankers import load_reranker
    from granrag_mcp.settings import Settings

    offline_env()
    faiss.omp_set_num_threads(1)
    # the store's own model: an `auto` engine handed another would swap it and its reranker for the store's, leaving
    # the embedder and reranker returned here embedding queries with the wrong model
    settings = with_store_model(Settings(store=args.store))
    embedder = CachedEmbedder(make_embedder(settings))
    extra = {"reranker": load_reranker(reranker, embedder)} if reranker else {}
    engine = Engine(settings, embedder=embedder, **extra)
    sampled = sample_questions(load_squad(args.squad).questions, args.questions, 0)
    questions = [q.question.strip() for q in sampled]
    embedder.embed(questions)
    return engine, embedder, questions


def in_turn(arms: list[Any], n: int) -> list[Any]:
    """The arms in the order of the n-th round: reversed every other round, so that neither always goes first."""
    return arms if n % 2 == 0 else arms[::-1]


@contextlib.contextmanager
def smoke_store(args: argparse.Namespace) -> Iterator[None]:
    """For a `--smoke` run of an A/B harness: `args.store` a fresh store of two SQuAD-A articles, one copy each (indexed
    on first use), in a temporary folder removed afterwards."""
    from benchmarks.corpora import squad_corpus

    with tempfile.TemporaryDirectory(prefix="granrag-bench-smoke-") as tmp:
        args.store, args.copies = Path(tmp) / "store", 1
        args.squad = squad_corpus.small_copy(args.squad, Path(tmp))
        yield
