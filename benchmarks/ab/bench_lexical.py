"""The project's own BM25 (`granrag_mcp.store.lexical.LexicalIndex`) against the maintained `bm25s`, at 1M chunks.

Both sides index the same texts with the same tokens (our `analyse()`; bm25s gets the token lists) and the same
scoring function: k1=1.2, b=0.75, Lucene's idf log(1 + (N - df + 0.5) / (df + 0.5)) and the term weight
tf (k1 + 1) / (tf + k1 (1 - b + b len / avg len)), which bm25s calls method "atire" with idf_method "lucene".

1. texts (once, cached in the work folder): --n narrow chunks, each a sentence of the synthetic documents that
   `bench_scale_server.py` makes (SQuAD-A sentences with 15% of their words swapped and 1% new words, so the
   vocabulary has a long tail of rare terms); queries: --queries SQuAD-A questions, shuffled with --seed.
2. --rounds (default 2) rounds of a build child per side, sides alternating (A B, then B A), each a fresh
   process: tokenise + build + write, timed as a whole (what an index run pays), its peak RSS (ru_maxrss), and
   the bytes written.
3. as many rounds of a search child per side, alternating: a fresh process loads the written index
   memory-mapped (as a server does), runs every query once to warm up, then times each query (k=10) once;
   reports p50/p95 and VmRSS / RssAnon / RssFile / VmHWM before loading, after loading and after the searches.
   bm25s is searched two ways: through its `retrieve` (the library's search call) and through `get_scores`
   plus an argpartition top-k (its scoring alone); a query's terms are passed once each, as `LexicalIndex`
   counts them. Then one more child loads both indices and times each query on every way in turn, two passes
   ("side_by_side": the latencies to compare, as others' load on a shared machine shifts between processes). Each child writes its top-10 per query; the driver reports the
   agreement (|ours & theirs| / 10, averaged over queries with at least 10 hits on our side), the exact-order
   matches, and the largest relative difference between the two top-10 score lists, rank by rank (ids differ
   only where scores tie to float16 precision: at 1M chunks ~20 chunks a query lie within 0.2% of the 10th).

    .venv/bin/python benchmarks/ab/bench_lexical.py                          # 1M chunks, 500 queries
    .venv/bin/python benchmarks/ab/bench_lexical.py --n 20000 --no-save      # a quick look
    .venv/bin/python benchmarks/ab/bench_lexical.py --keep-dir /tmp/lexical --reuse   # searches only, kept indices

"summary" holds the median over rounds of each figure. Writes benchmarks/results/lexical.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

K = 10
K1, B = 1.2, 0.75
SIDES = ("ours", "bm25s")


# data


def make_texts(n: int, seed: int) -> list[str]:
    """The sentences of `bench_scale_server`'s synthetic documents, one per narrow chunk."""
    from benchmarks.suite import bench_scale_server

    maker = bench_scale_server.TextMaker(bench_scale_server.squad_sentences(), seed)
    texts: list[str] = []
    while len(texts) < n:
        text, starts, _ = maker.document()
        for begin, end in zip(starts, starts[1:] + [len(text)]):
            texts.append(" ".join(text[begin:end].split()))
    return texts[:n]


def make_queries(count: int, seed: int) -> list[str]:
    from benchmarks.corpora import squad_corpus

    _, questions = squad_corpus.load()
    chosen = [q.question for q in questions]
    random.Random(seed).shuffle(chosen)
    return chosen[:count]


# children


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def build_child(side: str, work: Path) -> dict[str, Any]:
    texts = read_lines(work / "texts.txt")
    ids = np.arange(1, len(texts) + 1, dtype=np.int64) * 3  # sparse ids, as chunk ids of three levels are
    target = work / side
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    began = time.perf_counter()
    if side == "ours":
        from granrag_mcp.store.lexical import LexicalIndex

        LexicalIndex.build(ids, texts, k1=K1, b=B).write(target / "level.bm25")
    else:
        import bm25s

        from granrag_mcp.text.analysis import analyse

        tokens = [analyse(text) for text in texts]
        retriever = bm25s.BM25(k1=K1, b=B, method="atire", idf_method="lucene")
        retriever.index(tokens, create_empty_token=False, show_progress=False)
        retriever.save(target, show_progress=False)
        np.save(target / "ids.npy", ids)
    seconds = time.perf_counter() - began
    return {
        "build_seconds": round(seconds, 1),
        "build_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "bytes": _common.dir_size(target),
    }


class Bm25sSide:
    """bm25s behind the same search(query, k) -> [(id, score)] as LexicalIndex, hits with score 0 left out."""

    def __init__(self, folder: Path) -> None:
        import bm25s

        from granrag_mcp.text.analysis import analyse

        self.analyse = analyse
        self.retriever = bm25s.BM25.load(folder, mmap=True)
        self.ids = np.load(folder / "ids.npy", mmap_mode="r")

    def retrieve(self, query: str, k: int) -> list[tuple[int, float]]:
        tokens = list(dict.fromkeys(self.analyse(query)))  # each term once, as LexicalIndex scores a query
        if not tokens:
            return []
        rows, scores = self.retriever.retrieve([tokens], k=min(k, len(self.ids)), show_progress=False)
        return [(int(self.ids[r]), float(s)) for r, s in zip(rows[0], scores[0]) if s > 0]

    def scores_only(self, query: str, k: int) -> list[tuple[int, float]]:
        tokens = list(dict.fromkeys(self.analyse(query)))  # each term once, as LexicalIndex scores a query
        if not tokens:
            return []
        scores = self.retriever.get_scores(tokens)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(self.ids[r]), float(scores[r])) for r in top if scores[r] > 0]


def search_child(side: str, work: Path) -> dict[str, Any]:
    """One side alone (its memory), or with side "both" the two in one process, every query timed on each way in
    turn: on a shared machine only latencies taken side by side compare."""
    queries = read_lines(work / "queries.txt")
    result: dict[str, Any] = {"memory_before_load": _common.memory()}
    began = time.perf_counter()
    searches = {}
    if side in ("ours", "both"):
        from granrag_mcp.store.lexical import LexicalIndex

        index = LexicalIndex.read(work / "ours" / "level.bm25")
        searches["search"] = index.search
    if side in ("bm25s", "both"):
        bm25s_side = Bm25sSide(work / "bm25s")
        searches |= {"retrieve": bm25s_side.retrieve, "get_scores": bm25s_side.scores_only}
    passes = 2 if side == "both" else 1
    result["load_seconds"] = round(time.perf_counter() - began, 3)
    result["memory_after_load"] = _common.memory()
    times: dict[str, list[float]] = {name: [] for name in searches}
    top: dict[str, list[list[int]]] = {}
    for name, search in searches.items():  # warm-up: every query once
        top[name] = [search(query, K) for query in queries]
    for _ in range(passes):  # the ways alternating query by query
        for query in queries:
            for name, search in searches.items():
                began = time.perf_counter()
                search(query, K)
                times[name].append(time.perf_counter() - began)
    result["latency"] = {name: _common.latency_summary(t) for name, t in times.items()}
    result["memory_after_searches"] = _common.memory()
    (work / f"top-{side}.json").write_text(json.dumps(top))
    return result


# driver


def run(role: str, side: str, work: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", role, "--side", side, "--work", str(work)]
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        raise SystemExit(f"{role} {side} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    out["child_seconds"] = round(time.perf_counter() - began, 1)
    out["load_after"] = _common.load_average()
    print(f"[{role} {side}] {json.dumps(out)}", file=sys.stderr, flush=True)
    return out


def agreement(work: Path) -> dict[str, Any]:
    """Ids can differ where scores tie (to float16 precision), so the score lists are compared too: equal score
    lists mean the same ranking up to the order of ties."""
    ours_hits = json.loads((work / "top-ours.json").read_text())["search"]
    ours = [[i for i, _ in hits] for hits in ours_hits]
    out: dict[str, Any] = {}
    for name, theirs_hits in json.loads((work / "top-bm25s.json").read_text()).items():
        theirs = [[i for i, _ in hits] for hits in theirs_hits]
        full = [(a, b) for a, b in zip(ours, theirs) if len(a) == K]
        differences = [
            abs(x - y) / y for a, b in zip(ours_hits, theirs_hits) if len(a) == len(b) for (_, x), (_, y) in zip(a, b)
        ]
        out[name] = {
            "queries_with_10_hits": len(full),
            "top10_overlap": round(sum(len(set(a) & set(b)) for a, b in full) / (K * len(full)), 4) if full else None,
            "same_order": sum(a == b for a, b in zip(ours, theirs)),
            "same_hit_count": sum(len(a) == len(b) for a, b in zip(ours, theirs)),
            "top10_scores_max_relative_difference": float(f"{max(differences, default=0.0):.2g}"),
            "queries": len(ours),
        }
    return out


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """Per side: the median over rounds of each user-visible figure."""
    out: dict[str, Any] = {}
    for side in SIDES:
        row: dict[str, Any] = {}
        builds = (result.get("build") or {}).get(side, [])
        if builds:
            row["build_seconds"] = float(np.median([b["build_seconds"] for b in builds]))
            row["build_peak_rss_mib"] = float(np.median([b["build_peak_rss_mib"] for b in builds]))
            row["bytes"] = builds[-1]["bytes"]
        searches = result["search"][side]
        for field in ("rss_mib", "anon_mib", "file_mib", "peak_mib"):
            row[f"after_load_{field}"] = float(np.median([s["memory_after_load"][field] for s in searches]))
            row[f"after_searches_{field}"] = float(np.median([s["memory_after_searches"][field] for s in searches]))
        row["load_seconds"] = float(np.median([s["load_seconds"] for s in searches]))
        for name in searches[0]["latency"]:
            for field in ("p50_ms", "p95_ms"):
                row[f"{name}_{field}"] = float(np.median([s["latency"][name][field] for s in searches]))
        out[side] = row
    for name, latency in result["side_by_side"]["latency"].items():
        side = "ours" if name == "search" else "bm25s"
        out[side][f"side_by_side_{name}_p50_ms"] = latency["p50_ms"]
        out[side][f"side_by_side_{name}_p95_ms"] = latency["p95_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="chunks (default 1,000,000)")
    parser.add_argument("--queries", type=int, default=500, help="SQuAD-A questions (default 500)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep-dir", type=Path, help="keep texts and indices here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true", help="search the indices in --keep-dir again")
    parser.add_argument("--rounds", type=int, default=2, help="builds and searches per side, alternating (2)")
    _common.result_arguments(parser, "lexical")
    parser.add_argument("--child", choices=("build", "search"), help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=(*SIDES, "both"), help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    _common.offline_env()
    if args.child:
        child = build_child if args.child == "build" else search_child
        _common.emit(child(args.side, args.work))
        return

    work = args.keep_dir or Path(tempfile.mkdtemp(prefix="granrag-bench-lexical-"))
    work.mkdir(parents=True, exist_ok=True)
    import bm25s

    result: dict[str, Any] = {
        "benchmark": "lexical",
        "machine": _common.machine(),
        "revision": _common.git_revision(),
        "n": args.n,
        "queries": args.queries,
        "k": K,
        "k1": K1,
        "b": B,
        "bm25s_version": bm25s.__version__,
    }
    try:
        if not (args.reuse and (work / "texts.txt").exists()):
            began = time.perf_counter()
            texts = make_texts(args.n, args.seed)
            (work / "texts.txt").write_text("\n".join(texts), encoding="utf-8")
            (work / "queries.txt").write_text("\n".join(make_queries(args.queries, args.seed)), encoding="utf-8")
            result["texts_seconds"] = round(time.perf_counter() - began, 1)
            print(f"[texts] {len(texts)} in {result['texts_seconds']} s", file=sys.stderr, flush=True)
            del texts
        rounds = [SIDES if number % 2 == 0 else SIDES[::-1] for number in range(args.rounds)]  # A B, B A, ...
        previous = _common.RESULTS / "lexical.json"
        if args.reuse and previous.exists() and json.loads(previous.read_text()).get("n") == args.n:
            result["build"] = json.loads(previous.read_text()).get("build")  # the indices searched are those
        if not args.reuse:
            result["build"] = {side: [] for side in SIDES}
            for order in rounds:
                for side in order:
                    result["build"][side].append(run("build", side, work))
        result["search"] = {side: [] for side in SIDES}
        for order in rounds:
            for side in order:
                result["search"][side].append(run("search", side, work))
        result["side_by_side"] = run("search", "both", work)
        result["agreement"] = agreement(work)
        result["summary"] = summary(result)
    finally:
        if args.keep_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
