"""The store's own vector index at scale: `granrag_mcp.store.vector_index.VectorIndex` as the server uses it.

For each data set and size n (default 200k, the ANN threshold, and 1M), dimension 384:

1. a build child generates n vectors with sparse int64 ids, adds them to `VectorIndex.empty` and writes the file
   (`write` settles the kind: flat below `ANN_THRESHOLD`, HNSW from it on), timing the whole; it computes the
   exact top-10 of every query with a separate exact IndexFlatIP (the ground truth), times exact single-query
   search through a flat VectorIndex over the same vectors, and, with --update, times one incremental run on
   the written index: open mapped, remove 1% of the ids, add 1% new vectors, write;
2. a search child, a fresh process, verifies the file's checksum and opens it with `VectorIndex.read`
   (memory-mapped), as `Snapshot.open` does, and runs the searches the server runs: one query at a time, k=10,
   1 OpenMP thread. It reports p50/p95 latency and recall@10 against the exact answers for each efSearch in
   --ef-search, and its memory: VmRSS before opening, after opening, after each efSearch setting (in increasing
   order, so the pages touched accumulate) and after all searches, split into anonymous and file-backed pages
   (RssAnon/RssFile), plus the peak (VmHWM). With --no-mmap-child a second search child reads the file into
   memory instead, for comparison; with --cold-child a third one first evicts the file from the page cache and
   opens it mapped without the checksum pass (which reads the whole file and so warms the cache), the case of
   a server whose pages the kernel has reclaimed, and searches with the default efSearch only.

Two query sets per data set: 500 draws from the data's own mixture ("mixture") and 500 real SQuAD-A questions
embedded with MiniLM ("questions"; only for the realistic data, whose centres are SQuAD-A sentences).

Data sets (all L2-normalised):

- realistic: the MiniLM vectors of the 4,748 sentences of SQuAD-A (the benchmark corpus) are the centres; a
  vector is a random centre plus Gaussian noise whose covariance is that of the real sentence vectors (so it
  lies in the ~100 effective dimensions real embeddings occupy, not isotropically in 384), scaled by
  REALISTIC_SPREAD = 1.1. That spread is chosen so that at 1M vectors the median cosine between a vector and its
  nearest other vector (0.61) matches the one between a SQuAD-A sentence and its nearest other sentence (0.62).
- clustered: the set of the raw FAISS comparison that chose HNSW (docs/decisions.md): one random unit centre per 100
  vectors, isotropic Gaussian spread 1.5 (in-cluster cosine ~0.3), queries from the same mixture.

    .venv/bin/python benchmarks/suite/bench_scale_store.py                       # 200k and 1M, both data sets
    .venv/bin/python benchmarks/suite/bench_scale_store.py --sizes 200000 --datasets realistic --ef-search 64,128
    .venv/bin/python benchmarks/suite/bench_scale_store.py --keep-dir /tmp/scale-store            # keep the indices,
    .venv/bin/python benchmarks/suite/bench_scale_store.py --keep-dir /tmp/scale-store --reuse    # search them again
    .venv/bin/python benchmarks/suite/bench_scale_store.py --sizes 1000000 --datasets realistic --hnsw-storage fp32

--hnsw-storage (like --hnsw-m and --ef-construction) overrides a store default for the build: the encoding of the
vectors inside the graph (`HNSW_STORAGE`, float16 by default; fp32 is how graphs were stored before).

The recorded results (results/scale_store.json, summarised in results/scale_store.md): builds by
`--ef-search 64,128,256,512,1024 --update --no-mmap-child --keep-dir DIR`, searches by the same with
`--cold-child --reuse`. The first run embeds the SQuAD-A sentences and questions with MiniLM (about 3 min) and
caches the vectors in the temporary folder's granrag-bench-cache/.

Writes benchmarks/results/scale_store.json (--name to change) and prints it.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

DIM = 384
K = 10
REALISTIC_SPREAD = 1.1
CLUSTERED_SPREAD = 1.5
CLUSTERED_POINTS_PER_CLUSTER = 100
BLOCK = 100_000
CACHE = Path(tempfile.gettempdir()) / "granrag-bench-cache" / "squad_minilm.npz"


# data


def real_vectors() -> tuple[np.ndarray, np.ndarray]:
    """MiniLM vectors of the SQuAD-A sentences and questions (embedded once, cached outside the project)."""
    if CACHE.exists():
        cached = np.load(CACHE)
        return cached["sentences"], cached["questions"]
    from benchmarks.corpora import squad_corpus
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder
    from granrag_mcp.indexing.sentences import split_sentences

    documents, questions = squad_corpus.load()
    sentences = [text[a:b] for text in documents.values() for a, b in split_sentences(text)]
    embedder = SentenceTransformerEmbedder(precision="fp32")
    out = embedder.embed(sentences), embedder.embed([q.question for q in questions])
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    np.savez(CACHE, sentences=out[0], questions=out[1])
    return out


class Generator:
    def __init__(self, dataset: str, n: int) -> None:
        self.dataset = dataset
        if dataset == "realistic":
            sentences, self.questions = real_vectors()
            self.centres = sentences.astype(np.float32)
            values, vectors = np.linalg.eigh(np.cov(self.centres.T))
            self.shape = (vectors * np.sqrt(np.maximum(values, 0))).T.astype(np.float32)  # noise = z @ shape
            self.spread = REALISTIC_SPREAD
        elif dataset == "clustered":
            clusters = max(100, n // CLUSTERED_POINTS_PER_CLUSTER)
            centres = np.random.default_rng(12345).standard_normal((clusters, DIM), dtype=np.float32)
            self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
            self.shape = None
            self.spread = CLUSTERED_SPREAD / math.sqrt(DIM)
            self.questions = None
        else:
            raise ValueError(dataset)

    def draw(self, n: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        out = np.empty((n, DIM), dtype=np.float32)
        for begin in range(0, n, BLOCK):
            rows = min(BLOCK, n - begin)
            noise = rng.standard_normal((rows, DIM), dtype=np.float32)
            if self.shape is not None:
                noise = noise @ self.shape
            noise *= self.spread
            noise += self.centres[rng.integers(0, len(self.centres), rows)]
            noise /= np.linalg.norm(noise, axis=1, keepdims=True)
            out[begin : begin + rows] = noise
        return out

    def query_sets(self, count: int, seed: int) -> dict[str, np.ndarray]:
        sets = {"mixture": self.draw(count, seed + 1_000_003)}
        if self.questions is not None:
            rows = np.random.default_rng(seed + 7).choice(
                len(self.questions), min(count, len(self.questions)), replace=False
            )
            sets["questions"] = np.ascontiguousarray(self.questions[rows], dtype=np.float32)
        return sets


def chunk_ids(n: int) -> np.ndarray:
    return np.arange(1, n + 1, dtype=np.int64) * 3  # sparse, like chunk ids of three interleaved levels


# memory


# children


def build_child(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    from granrag_mcp.store import vector_index as store_vectors
    from granrag_mcp.store.vector_index import VectorIndex

    apply_overrides(args)
    work = Path(args.work)
    generator = Generator(args.dataset, args.n)
    queries = generator.query_sets(args.queries, args.seed)
    data = generator.draw(args.n, args.seed)
    ids = chunk_ids(args.n)
    result: dict[str, Any] = {"dataset": args.dataset, "n": args.n, "threshold": store_vectors.ANN_THRESHOLD}

    exact = faiss.IndexFlatIP(DIM)  # ground truth, batched
    exact.add(data)
    truth = {}
    for name, q in queries.items():
        scores, rows = exact.search(q, K)
        truth[name] = ids[rows]
        result[f"top1_cosine_{name}"] = [round(float(x), 3) for x in np.percentile(scores[:, 0], [5, 50, 95])]
    sample = data[np.random.default_rng(args.seed + 5).choice(args.n, 1000, replace=False)]
    scores, _ = exact.search(sample, 2)
    result["data_nn_cosine_p5_p50_p95"] = [round(float(x), 3) for x in np.percentile(scores[:, 1], [5, 50, 95])]
    del exact
    gc.collect()
    np.savez(
        work / "queries.npz", **{f"q_{k}": v for k, v in queries.items()}, **{f"t_{k}": v for k, v in truth.items()}
    )

    faiss.omp_set_num_threads(1)  # exact search through the store's flat index, as the server runs it
    flat = VectorIndex.empty(DIM, threshold=args.n + 1)
    flat.add(ids, data)
    mixture = queries["mixture"]
    times = []
    for number, q in enumerate(mixture[: 5 + args.flat_queries]):
        began = time.perf_counter()
        flat.search(q, K)
        if number >= 5:
            times.append(time.perf_counter() - began)
    result["flat"] = _common.latency_summary(times)
    del flat
    gc.collect()

    faiss.omp_set_num_threads(args.build_threads)
    path = work / "level.faiss"
    began = time.perf_counter()
    index = VectorIndex.empty(DIM)
    for begin in range(0, args.n, BLOCK):
        index.add(ids[begin : begin + BLOCK], data[begin : begin + BLOCK])
    index.write(path)  # settles: the HNSW graph is built here when n >= the threshold
    result["build_seconds"] = round(time.perf_counter() - began, 1)
    result["kind"] = index.kind
    result["storage"] = getattr(index, "storage", "fp32")
    result["index_bytes"] = path.stat().st_size
    result["load_after_build"] = _common.load_average()
    del index
    gc.collect()

    if args.update:
        changed = max(1, args.n // 100)
        began = time.perf_counter()
        index = VectorIndex.read(path)
        removed = index.remove(ids[np.random.default_rng(args.seed + 11).choice(args.n, changed, replace=False)])
        fresh = generator.draw(changed, args.seed + 13)
        index.add(np.arange(1, changed + 1, dtype=np.int64) * 3 + 3 * args.n + 1, fresh)
        index.write(work / "updated.faiss")
        result["update"] = {
            "removed": removed,
            "added": changed,
            "seconds": round(time.perf_counter() - began, 1),
            "kind": index.kind,
            "tombstones": index.tombstones,
        }
        (work / "updated.faiss").unlink()
    result["build_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def search_child(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    from granrag_mcp.store.vector_index import VectorIndex

    faiss.omp_set_num_threads(1)
    work = Path(args.work)
    saved = np.load(work / "queries.npz")
    sets = {key[2:]: (saved[key], saved["t_" + key[2:]]) for key in saved.files if key.startswith("q_")}
    gc.collect()
    path = work / "level.faiss"
    result: dict[str, Any] = {"mmap": not args.no_mmap, "cold": args.cold, "memory_before_open": _common.memory()}
    if args.cold:  # drop this file's pages from the page cache (only its own clean pages: harmless to others)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    else:  # as Snapshot.open does: the checksum is verified (the whole file read) before FAISS parses it
        from granrag_mcp.store.durable import sha256_file

        began = time.perf_counter()
        sha256_file(path)
        result["verify_seconds"] = round(time.perf_counter() - began, 3)
    began = time.perf_counter()
    index = VectorIndex.read(path, mmap=not args.no_mmap)
    result["open_seconds"] = round(time.perf_counter() - began, 3)
    result["kind"] = index.kind
    result["storage"] = getattr(index, "storage", "fp32")
    result["mapped"] = index.mapped
    result["memory_after_open"] = _common.memory()
    settings = [int(v) for v in args.ef_search.split(",")] if index.kind == "hnsw" else [0]
    rows = []
    for ef in settings:
        if index.kind == "hnsw":
            index.ef_search = ef
        row: dict[str, Any] = {"ef_search": ef or None}
        for name, (queries, truth) in sets.items():
            for q in queries[:5]:
                index.search(q, K)
            row[name] = _common.recall_and_latency(index.search, queries, truth, K)
        row["memory_after"] = _common.memory()  # the pages touched so far: this setting and the ones before it
        rows.append(row)
        print(f"[search child] ef={ef}: {json.dumps(row)}", file=sys.stderr, flush=True)
    result["settings"] = rows
    result["searches"] = sum(len(q) + 5 for q, _ in sets.values()) * len(settings)
    result["memory_after_searches"] = _common.memory()
    return result


def apply_overrides(args: argparse.Namespace) -> None:
    from granrag_mcp.store import vector_index as store_vectors

    if args.threshold:
        store_vectors.ANN_THRESHOLD = args.threshold
    if args.hnsw_m:
        store_vectors.HNSW_M = args.hnsw_m
    if args.ef_construction:
        store_vectors.HNSW_EF_CONSTRUCTION = args.ef_construction
    if args.hnsw_storage:
        store_vectors.HNSW_STORAGE = args.hnsw_storage


# driver


def run(role: str, args: argparse.Namespace, work: Path, dataset: str, n: int, extra: list[str]) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        role,
        "--work",
        str(work),
        "--dataset",
        dataset,
        "--n",
        str(n),
        "--seed",
        str(args.seed),
        "--queries",
        str(args.queries),
        "--ef-search",
        args.ef_search,
        "--flat-queries",
        str(args.flat_queries),
        "--build-threads",
        str(args.build_threads),
        *extra,
    ]
    for flag, value in (
        ("--threshold", args.threshold),
        ("--hnsw-m", args.hnsw_m),
        ("--ef-construction", args.ef_construction),
        ("--hnsw-storage", args.hnsw_storage),
    ):
        if value:
            cmd += [flag, str(value)]
    if args.update:
        cmd.append("--update")
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        return {"error": done.stderr[-3000:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["child_seconds"] = round(time.perf_counter() - began, 1)
    out["load_after"] = _common.load_average()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--datasets", default="realistic,clustered")
    parser.add_argument("--queries", type=int, default=500, help="queries per query set (default 500)")
    parser.add_argument("--flat-queries", type=int, default=100, help="exact single-query searches timed (100)")
    parser.add_argument("--ef-search", default="64,128,256,512", help="HNSW efSearch values to measure")
    parser.add_argument("--threshold", type=int, help="override ANN_THRESHOLD")
    parser.add_argument("--hnsw-m", type=int, help="override HNSW_M")
    parser.add_argument("--ef-construction", type=int, help="override HNSW_EF_CONSTRUCTION")
    parser.add_argument("--hnsw-storage", choices=("fp32", "fp16"), help="override HNSW_STORAGE")
    parser.add_argument("--build-threads", type=int, default=2, help="OpenMP threads of the build (default 2)")
    parser.add_argument("--update", action="store_true", help="also time an incremental run (1%% out, 1%% in)")
    parser.add_argument("--no-mmap-child", action="store_true", help="also search after reading without mmap")
    parser.add_argument(
        "--cold-child",
        action="store_true",
        help="also search (default efSearch only) right after evicting the file from the page cache "
        "and opening it mapped without the checksum pass that would read it back in",
    )
    parser.add_argument(
        "--max-build-seconds",
        type=float,
        default=1500.0,
        help="skip a build estimated (n log n from the previous size) to take longer",
    )
    parser.add_argument(
        "--keep-dir",
        type=Path,
        help="keep each built index in DIR/<dataset>-<n>/ (1M: 1.7 GB) instead of a temporary folder",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep-dir: search an index built by an earlier run instead of building it again",
    )
    parser.add_argument("--seed", type=int, default=0)
    _common.result_arguments(parser, "scale_store")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-mmap", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        out = build_child(args) if args.child == "build" else search_child(args)
        print(json.dumps(out))
        return

    import faiss

    from granrag_mcp.store import vector_index as store_vectors

    info = _common.machine()
    rows: list[dict[str, Any]] = []
    for dataset in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        previous: dict[str, Any] | None = None
        for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
            if previous and "build_seconds" in previous:
                guess = previous["build_seconds"] * (n / previous["n"]) * math.log(n) / math.log(previous["n"])
                if guess > args.max_build_seconds:
                    rows.append({"dataset": dataset, "n": n, "skipped": f"estimated build {guess:.0f} s"})
                    print(f"[bench_scale_store] {dataset} n={n}: skipped (estimated {guess:.0f} s)", file=sys.stderr)
                    continue
            with tempfile.TemporaryDirectory(prefix="granrag-bench-scale-store-") as tmp:
                work = Path(tmp)
                if args.keep_dir:
                    work = args.keep_dir / f"{dataset}-{n}"
                    work.mkdir(parents=True, exist_ok=True)
                built = work / "build.json"
                if args.reuse and built.exists():
                    row = json.loads(built.read_text())
                    row["reused_build"] = True
                    print(f"[bench_scale_store] {dataset} n={n}: reusing the build in {work}", file=sys.stderr)
                else:
                    print(
                        f"[bench_scale_store] {dataset} n={n}: build ... (load {_common.load_average()})",
                        file=sys.stderr,
                        flush=True,
                    )
                    row = run("build", args, work, dataset, n, [])
                    if "error" in row:
                        print(row["error"], file=sys.stderr)
                        rows.append({"dataset": dataset, "n": n, **row})
                        continue
                    built.write_text(json.dumps(row))
                print(
                    f"[bench_scale_store] {dataset} n={n}: {row['kind']} built in {row['build_seconds']} s; "
                    f"search ... (load {_common.load_average()})",
                    file=sys.stderr,
                    flush=True,
                )
                row["search"] = run("search", args, work, dataset, n, [])
                if args.no_mmap_child:
                    row["search_no_mmap"] = run("search", args, work, dataset, n, ["--no-mmap"])
                if args.cold_child:
                    row["search_cold"] = run(
                        "search", args, work, dataset, n, ["--cold", "--ef-search", str(store_vectors.HNSW_EF_SEARCH)]
                    )
                rows.append(row)
                previous = row
                print(f"[bench_scale_store] {json.dumps(row)}", file=sys.stderr, flush=True)
    result = {
        "benchmark": "scale_store",
        "machine": info,
        "git": _common.git_revision(),
        "faiss": faiss.__version__,
        "store_defaults": {
            "ANN_THRESHOLD": store_vectors.ANN_THRESHOLD,
            "FLAT_BELOW": store_vectors.FLAT_BELOW,
            "TOMBSTONE_LIMIT": store_vectors.TOMBSTONE_LIMIT,
            "HNSW_M": store_vectors.HNSW_M,
            "HNSW_EF_CONSTRUCTION": store_vectors.HNSW_EF_CONSTRUCTION,
            "HNSW_EF_SEARCH": store_vectors.HNSW_EF_SEARCH,
            "HNSW_STORAGE": getattr(store_vectors, "HNSW_STORAGE", "fp32"),
        },
        "overrides": {
            "threshold": args.threshold,
            "hnsw_m": args.hnsw_m,
            "ef_construction": args.ef_construction,
            "hnsw_storage": args.hnsw_storage,
        },
        "method": {
            "dim": DIM,
            "k": K,
            "queries_per_set": args.queries,
            "flat_queries": args.flat_queries,
            "search_threads": 1,
            "build_threads": args.build_threads,
            "realistic_spread": REALISTIC_SPREAD,
            "clustered_spread": CLUSTERED_SPREAD,
            "clustered_points_per_cluster": CLUSTERED_POINTS_PER_CLUSTER,
        },
        "rows": rows,
    }
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
