"""Two versions of the indexer on the same corpus, whole processes, alternating: their time, and whether they built
the same index.

Each round indexes the corpus with A (`--baseline PATH`, a checkout on its PYTHONPATH) then B (this checkout), in
each precision asked for (fp32 held to AVX2, as a CPU without AVX-512 or bf16 runs it), each run `granrag-mcp index`
in its own process into a fresh store. Time: the process's wall seconds and its CPU seconds with its children's.
Equality: the same chunks at every level (document, offsets, token counts, parents) and, chunk by chunk, the
cosine of the two vectors (the lowest and the share under 0.9999), so a change meant to do less work shows that
it built the same index.

    .venv/bin/python benchmarks/ab/bench_index_equal.py --baseline /tmp/base-checkout --precisions auto,fp32
    .venv/bin/python benchmarks/ab/bench_index_equal.py --baseline . --articles 2 --no-save    # a tiny run

Prints one JSON object and writes benchmarks/results/index_equal.json (not with --no-save).
"""

from __future__ import annotations

import argparse
import json
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
from benchmarks.corpora import squad_corpus  # noqa: E402


def index_run(code: Path, corpus: Path, store: Path, env: dict[str, str]) -> dict[str, Any]:
    """One `granrag-mcp index` of `corpus` by the code at `code`, in its own process: wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "granrag_mcp.cli", "index", str(corpus), "--store", str(store), "--quiet", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "PYTHONPATH": str(code)},
        cwd=code,  # `-m` puts the working folder first on the path, before PYTHONPATH
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the index run of {code} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads(done.stdout)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "stages": summary.get("stages")}


def compare(a: Path, b: Path) -> dict[str, Any]:
    """Whether two stores hold the same chunks, and how close their vectors are (B's code reads both)."""
    from granrag_mcp.levels import LEVELS
    from granrag_mcp.store.store import Snapshot

    out: dict[str, Any] = {}
    first, second = Snapshot.open(a), Snapshot.open(b)
    try:
        for level in LEVELS:
            mine = first.catalog.chunks_of_level(level)
            theirs = second.catalog.chunks_of_level(level)
            key = [(c.doc_id, c.start, c.end, c.token_count, c.parent_id) for c in mine]
            same = key == [(c.doc_id, c.start, c.end, c.token_count, c.parent_id) for c in theirs]
            row: dict[str, Any] = {"chunks": len(mine), "same_chunks": same}
            if same and mine:
                ids = np.array([c.id for c in mine], dtype=np.int64)
                cosine = (first.vectors[level].reconstruct(ids) * second.vectors[level].reconstruct(ids)).sum(axis=1)
                row.update(
                    {"min_cosine": round(float(cosine.min()), 7), "under_0_9999": float((cosine < 0.9999).mean())}
                )
            out[level] = row
    finally:
        first.catalog.close()
        second.catalog.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the root of the checkout to compare with (A)")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD, help="the corpus, SQuAD v1.1 form")
    parser.add_argument("--articles", type=int, help="only the first N documents")
    parser.add_argument("--precisions", default="auto,fp32", help="comma-separated GRANRAG_PRECISION values")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each runs A then B in every precision")
    _common.result_arguments(parser, "index_equal")
    args = parser.parse_args()
    _common.offline_env()
    documents, _ = squad_corpus.load(args.squad)
    if args.articles:
        documents = dict(list(documents.items())[: args.articles])
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="granrag-bench-index-equal-") as tmp:
        corpus = Path(tmp) / "corpus"
        squad_corpus.write(documents, corpus)
        for number in range(args.rounds):
            for precision in [p.strip() for p in args.precisions.split(",") if p.strip()]:
                env = {"GRANRAG_PRECISION": precision, **(_common.AVX2_ONLY if precision == "fp32" else {})}
                stores = {}
                for variant, code in (("A", args.baseline.resolve()), ("B", _common.ROOT)):
                    stores[variant] = Path(tmp) / f"store-{number}-{precision}-{variant}"
                    run = index_run(code, corpus, stores[variant], env)
                    runs.append({"variant": variant, "round": number, "precision": precision, **run})
                    runs[-1]["load_after"] = _common.load_average()
                    print(
                        f"[index_equal] {variant} {precision}: {run['wall_s']} s, {run['cpu_s']} CPU-s", file=sys.stderr
                    )
                runs[-1]["same_as_A"] = compare(stores["A"], stores["B"])
    _common.conclude(
        args,
        {
            "benchmark": "index_equal",
            "machine": _common.machine(),
            "git": _common.git_revision(),
            "corpus": {"file": args.squad.name, "documents": len(documents)},
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
