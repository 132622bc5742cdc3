"""FAISS at scale: single-query latency, recall@10, build time and memory per index type and collection size.

Synthetic, L2-normalised vectors of dimension 384 (the model's). By default they are cluster-structured (a
mixture of random unit centres with Gaussian spread, queries drawn from the same mixture), so that IVF and
HNSW recall means something; --structure uniform gives plain random directions. For every size n:

- IndexFlatIP (exact, today's store), wrapped in IndexIDMap2; its answers are the ground truth;
- IndexHNSWFlat (M=32, efConstruction 40, inner product), efSearch 64 and 128, wrapped in IndexIDMap2;
- IndexIVFFlat (nlist = 4*sqrt(n), inner product, trained on a sample), nprobe 8, 16, 32, in IndexIDMap2.

Latency is timed with 1 and with 2 OpenMP threads (--threads): on a loaded 2-core machine a single-query
search with 2 threads can be many times slower than with 1 (threads wait on each other), so both are kept
and `p50_ms` is the better of the two (the server can pin its thread count).

Each (n, type) runs in its own child process so its RSS delta is that index alone. Latency: p50 / p95 of
`search(one query, k=10)` called one query at a time, as the server does. Memory: the serialised index size
and the RSS growth of the child after the vectors it was built from are freed. An HNSW or IVF build whose
estimated time (from the previous size) exceeds --max-build-seconds is skipped and reported as skipped.

    .venv/bin/python benchmarks/bench_scale.py                         # 10k, 100k, 300k, 1M (about 30 min)
    .venv/bin/python benchmarks/bench_scale.py --sizes 10000,100000    # quick

Prints one JSON object and writes benchmarks/results/scale.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

DIM = 384
K = 10
POINTS_PER_CLUSTER = 100  # topics of ~100 chunks: the number of clusters grows with n
SPREAD = 1.5  # norm of the Gaussian offset from a unit centre (before normalising): in-cluster cosine ~0.3
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 40
HNSW_EF_SEARCH = (64, 128)
IVF_NPROBE = (8, 16, 32)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def clusters_for(n: int) -> int:
    return max(100, n // POINTS_PER_CLUSTER)


def vectors(n: int, seed: int, structure: str, clusters: int, centres_seed: int = 12345) -> np.ndarray:
    """n normalised float32 vectors; generated in blocks to bound the temporary memory."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    centres = None
    if structure == "clustered":
        centres = np.random.default_rng(centres_seed).standard_normal((clusters, DIM), dtype=np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    block = 100_000
    for begin in range(0, n, block):
        rows = min(block, n - begin)
        noise = rng.standard_normal((rows, DIM), dtype=np.float32)
        if centres is not None:
            noise *= SPREAD / math.sqrt(DIM)
            noise += centres[rng.integers(0, clusters, rows)]
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        out[begin : begin + rows] = noise
    return out


def build(kind: str, n: int, data: np.ndarray, seed: int):
    import faiss

    if kind == "flat":
        inner = faiss.IndexFlatIP(DIM)
    elif kind == "hnsw":
        inner = faiss.IndexHNSWFlat(DIM, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    elif kind == "ivf":
        nlist = int(round(4 * math.sqrt(n)))
        quantizer = faiss.IndexFlatIP(DIM)
        inner = faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = min(n, 64 * nlist)
        rows = np.random.default_rng(seed + 7).choice(n, sample, replace=False) if sample < n else slice(None)
        inner.train(np.ascontiguousarray(data[rows]))
    else:
        raise ValueError(kind)
    index = faiss.IndexIDMap2(inner)
    index.add_with_ids(data, np.arange(1, n + 1, dtype=np.int64) * 3)  # sparse ids, like chunk ids
    return index, inner


def timed_queries(index, queries: np.ndarray, latency_queries: int, threads: list[int]) -> tuple[dict, np.ndarray]:
    """Latency of one-query searches with each OpenMP thread count; labels of all queries (batched) for recall."""
    import faiss

    latency = {}
    for count in threads:
        faiss.omp_set_num_threads(count)
        for q in queries[:5]:  # warm-up
            index.search(q.reshape(1, -1), K)
        times = []
        for q in queries[:latency_queries]:
            began = time.perf_counter()
            index.search(q.reshape(1, -1), K)
            times.append(time.perf_counter() - began)
        latency[f"{count}t"] = _common.latency_summary(times)
    faiss.omp_set_num_threads(max(threads))
    _, labels = index.search(queries, K)  # batched, for recall only
    return latency, labels


def setting_row(param: str | None, latency: dict, recall_at_10: float) -> dict[str, Any]:
    best = min(latency, key=lambda t: latency[t]["p50_ms"])
    row: dict[str, Any] = {
        "param": param,
        "recall_at_10": recall_at_10,
        "p50_ms": latency[best]["p50_ms"],
        "p95_ms": latency[best]["p95_ms"],
        "best_threads": best,
    }
    for threads, summary in latency.items():
        row[f"p50_ms_{threads}"] = summary["p50_ms"]
        row[f"p95_ms_{threads}"] = summary["p95_ms"]
    return row


def recall(labels: np.ndarray, truth: np.ndarray) -> float:
    hits = sum(len(set(a[a >= 0].tolist()) & set(b.tolist())) for a, b in zip(labels, truth))
    return hits / (truth.shape[0] * K)


def child(
    kind: str,
    n: int,
    seed: int,
    structure: str,
    queries_n: int,
    latency_queries: int,
    truth_file: Path,
    threads: list[int],
    search_params: tuple[int, ...] | None = None,
) -> None:
    import faiss

    faiss.omp_set_num_threads(max(threads))  # builds use every thread
    rss_start = rss_mib()
    queries = vectors(queries_n, seed + 1_000_003, structure, clusters_for(n))
    data = vectors(n, seed, structure, clusters_for(n))
    began = time.perf_counter()
    index, inner = build(kind, n, data, seed)
    build_seconds = time.perf_counter() - began
    del data
    gc.collect()
    rss_index = rss_mib() - rss_start
    index_bytes = int(faiss.serialize_index(index).size)
    gc.collect()
    result: dict[str, Any] = {
        "kind": kind,
        "n": n,
        "build_seconds": round(build_seconds, 2),
        "index_bytes": index_bytes,
        "rss_delta_mib": round(rss_index, 1),
        "settings": [],
    }
    if kind == "flat":
        latency, labels = timed_queries(index, queries, latency_queries, threads)
        np.save(truth_file, labels)
        result["settings"].append(setting_row(None, latency, 1.0))
    else:
        truth = np.load(truth_file)
        params = search_params or (HNSW_EF_SEARCH if kind == "hnsw" else IVF_NPROBE)
        for value in params:
            if kind == "hnsw":
                inner.hnsw.efSearch = value
                label = f"efSearch={value}"
            else:
                inner.nprobe = value
                label = f"nprobe={value}"
            latency, labels = timed_queries(index, queries, latency_queries, threads)
            result["settings"].append(setting_row(label, latency, round(recall(labels, truth), 4)))
        if kind == "ivf":
            result["nlist"] = int(inner.nlist)
    result["peak_rss_mib"] = round(__import__("resource").getrusage(0).ru_maxrss / 1024, 1)
    print(json.dumps(result))


def run_child(kind: str, n: int, args: argparse.Namespace, truth_file: Path) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--n",
        str(n),
        "--seed",
        str(args.seed),
        "--structure",
        args.structure,
        "--queries",
        str(args.queries),
        "--latency-queries",
        str(args.latency_queries),
        "--truth",
        str(truth_file),
        "--threads",
        args.threads,
    ]
    chosen = args.ef_search if kind == "hnsw" else args.nprobe if kind == "ivf" else None
    if chosen:
        cmd += ["--search-params", chosen]
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"kind": kind, "n": n, "error": done.stderr[-2000:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["child_seconds"] = round(time.perf_counter() - began, 1)
    out["load_after"] = _common.load_average()
    return out


def estimate(previous: dict[str, Any] | None, n: int) -> float | None:
    """Build time at n extrapolated from the previous size (n log n for HNSW and IVF alike, a rough bound)."""
    if not previous or "build_seconds" not in previous:
        return None
    m = previous["n"]
    return previous["build_seconds"] * (n / m) * (math.log(n) / math.log(m))


def recommend(rows: list[dict[str, Any]], target_ms: float, min_recall: float) -> dict[str, Any]:
    """For each size: the cheapest-memory config meeting the latency target with recall >= min_recall."""
    out = {}
    for n in sorted({r["n"] for r in rows}):
        meeting = []
        for r in rows:
            if r["n"] != n or "settings" not in r:
                continue
            for s in r["settings"]:
                if s["p50_ms"] <= target_ms and s["recall_at_10"] >= min_recall:
                    meeting.append((r["kind"], s["param"], s["p50_ms"], s["recall_at_10"], r["index_bytes"]))
        flat = next((r for r in rows if r["n"] == n and r["kind"] == "flat" and "settings" in r), None)
        out[str(n)] = {
            "flat_meets_target": bool(flat and flat["settings"][0]["p50_ms"] <= target_ms),
            "configs_meeting_target": [
                {"kind": k, "param": p, "p50_ms": ms, "recall_at_10": rc, "index_bytes": b}
                for k, p, ms, rc, b in sorted(meeting, key=lambda m: (m[0] != "flat", -m[3], m[2]))
            ],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,300000,1000000")
    parser.add_argument("--kinds", default="flat,hnsw,ivf")
    parser.add_argument("--structure", choices=["clustered", "uniform"], default="clustered")
    parser.add_argument("--queries", type=int, default=500, help="queries for recall (default 500)")
    parser.add_argument("--latency-queries", type=int, default=200, help="single-query searches timed (default 200)")
    parser.add_argument(
        "--max-build-seconds",
        type=float,
        default=600.0,
        help="skip an HNSW/IVF build estimated to take longer (default 600)",
    )
    parser.add_argument("--target-ms", type=float, default=20.0, help="latency target p50 (default 20 ms)")
    parser.add_argument("--min-recall", type=float, default=0.95, help="recall@10 a replacement must keep (0.95)")
    parser.add_argument(
        "--threads", default="1,2", help="OpenMP thread counts the single-query searches are timed with (default 1,2)"
    )
    parser.add_argument("--ef-search", help="HNSW efSearch values, comma-separated (default 64,128)")
    parser.add_argument("--nprobe", help="IVF nprobe values, comma-separated (default 8,16,32)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="merge these rows into the existing results/scale.json (same n and index replaced)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--truth", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--search-params", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(
            args.child,
            args.n,
            args.seed,
            args.structure,
            args.queries,
            args.latency_queries,
            args.truth,
            [int(t) for t in args.threads.split(",")],
            tuple(int(v) for v in args.search_params.split(",")) if args.search_params else None,
        )
        return

    import faiss

    info = _common.machine()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if "flat" not in kinds:
        kinds.insert(0, "flat")  # the ground truth
    rows: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="granrag-bench-scale-") as tmp:
        for n in sizes:
            truth = Path(tmp) / f"truth-{n}.npy"
            for kind in kinds:
                guess = estimate(last.get(kind), n) if kind != "flat" else None
                if guess is not None and guess > args.max_build_seconds:
                    row = {
                        "kind": kind,
                        "n": n,
                        "skipped": f"estimated build {guess:.0f} s > "
                        f"{args.max_build_seconds:.0f} s limit (from {last[kind]['build_seconds']} s at "
                        f"n={last[kind]['n']})",
                    }
                    print(f"[bench_scale] {kind} n={n}: skipped ({row['skipped']})", file=sys.stderr)
                    rows.append(row)
                    continue
                print(f"[bench_scale] {kind} n={n} ...", file=sys.stderr)
                row = run_child(kind, n, args, truth)
                rows.append(row)
                if "error" in row:
                    print(f"[bench_scale] {kind} n={n} failed: {row['error'][-500:]}", file=sys.stderr)
                    if kind == "flat":
                        break
                    continue
                last[kind] = row
                print(
                    f"[bench_scale] {kind} n={n}: build {row['build_seconds']} s, "
                    + ", ".join(
                        f"{s['param'] or 'exact'} p50 {s['p50_ms']} ms ({s['best_threads']}) r@10 {s['recall_at_10']}"
                        for s in row["settings"]
                    ),
                    file=sys.stderr,
                )
    previous = _common.RESULTS / "scale.json"
    if args.merge and previous.exists():
        old = json.loads(previous.read_text(encoding="utf-8"))
        fresh = {(r["n"], r["kind"]) for r in rows if "skipped" not in r}
        kept = [r for r in old["rows"] if (r["n"], r["kind"]) not in fresh]
        rows = [r for r in rows if "skipped" not in r or (r["n"], r["kind"]) not in {(k["n"], k["kind"]) for k in kept}]
        rows = sorted(kept + rows, key=lambda r: (r["n"], ["flat", "hnsw", "ivf"].index(r["kind"])))
        info["merged_with_run_of"] = old["machine"]["date"]
    result = {
        "benchmark": "scale",
        "machine": info,
        "git": _common.git_revision(),
        "faiss": faiss.__version__,
        "omp_threads": faiss.omp_get_max_threads(),
        "data": {
            "dim": DIM,
            "structure": args.structure,
            "clusters": "max(100, n/100)" if args.structure == "clustered" else None,
            "spread": SPREAD,
            "queries": args.queries,
            "latency_queries": args.latency_queries,
            "k": K,
        },
        "configs": {
            "hnsw": {"M": HNSW_M, "efConstruction": HNSW_EF_CONSTRUCTION, "efSearch": HNSW_EF_SEARCH},
            "ivf": {"nlist": "round(4*sqrt(n))", "train_sample": "min(n, 64*nlist)", "nprobe": IVF_NPROBE},
            "all": "wrapped in IndexIDMap2 (the store needs reconstruct by chunk id)",
        },
        "rows": rows,
        "target": {"p50_ms": args.target_ms, "min_recall_at_10": args.min_recall},
        "meets_target": recommend(rows, args.target_ms, args.min_recall),
    }
    _common.finish("scale", result, save=not args.no_save)


if __name__ == "__main__":
    main()
