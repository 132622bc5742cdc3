"""Shared helpers of the benchmark scripts: offline environment, machine facts, percentiles, result files."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
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
