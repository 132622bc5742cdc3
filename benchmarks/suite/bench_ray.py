"""`index --engine local` against `--engine ray` on the SQuAD-A corpus, on this machine.

Each run is a `granrag-mcp index --json` child process into a fresh store, timed from outside (imports, model
loads and everything). Ray runs twice over:
- cold: the command starts its own local cluster (what `--engine ray` costs on one machine, no cluster running);
- warm: against a cluster this script started once (`--ray-address`), as on a real cluster, where `ray start`
  happens once and every index run connects to it.
Warm Ray and local alternate, so a load change on the shared machine hits both. The stores of the last pair are
compared (same chunk ids, vectors' cosine), and the measured rates give a projection of ingesting one million
sentences on 1, 4 and 16 workers (linear in workers for the parallel stage; the single writer's indexing, concept
graph and commit stay serial). Both engines use the default chunker (semantic) unless --chunker says otherwise.
Usage:

    .venv/bin/python benchmarks/suite/bench_ray.py --rounds 2 --copies 2

Writes benchmarks/results/ray.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common
from benchmarks.corpora import squad_corpus

PROJECTED_SENTENCES = 1_000_000
PROJECTED_WORKERS = (1, 4, 16)
WRITER_STAGES = ("index", "graph", "commit")  # the single writer's, serial however many workers


def index_once(corpus: Path, store: Path, engine: str, address: str | None, chunker: str) -> dict:
    command = [
        sys.executable,
        "-m",
        "granrag_mcp.cli",
        "index",
        str(corpus),
        "--store",
        str(store),
        "--json",
        "--quiet",
        "--device",
        "cpu",
        "--engine",
        engine,
        "--chunker",
        chunker,
    ]
    if address:
        command += ["--ray-address", address]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=os.environ.copy())
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{engine} run failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    return {
        "engine": engine,
        "cluster": "warm" if address else ("cold" if engine == "ray" else None),
        "wall_seconds": round(wall, 2),
        "stages": {k: round(v, 2) for k, v in summary["seconds"].items()},
        "sentences": summary["new_chunks"]["narrow"],
        "load": _common.load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--copies", type=int, default=2, help="SQuAD-A plus reordered copies (default 2: 48 docs)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating local/warm-Ray pairs")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="CPUs of the local Ray cluster")
    parser.add_argument("--chunker", choices=("semantic", "fixed"), default="semantic")
    args = parser.parse_args()
    _common.offline_env()
    os.environ.setdefault("GRANRAG_LOG_LEVEL", "WARNING")
    import ray

    from benchmarks.compare import compare_stores

    documents, _ = squad_corpus.load(args.squad)
    documents = squad_corpus.with_reordered_copies(documents, args.copies)
    result: dict = {
        "benchmark": "ray",
        "machine": _common.machine(),
        "git": _common.git_revision(),
        "corpus": {
            "file": args.squad.name,
            "copies": args.copies,
            "documents": len(documents),
            "characters": sum(len(t) for t in documents.values()),
        },
        "ray": ray.__version__,
        "cluster_cpus": args.cpus,
        "chunker": args.chunker,
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        corpus = Path(tmp) / "corpus"
        squad_corpus.write(documents, corpus)
        result["runs"].append(index_once(corpus, Path(tmp) / "cold", "ray", None, args.chunker))
        ray.init(num_cpus=args.cpus, include_dashboard=False, logging_level="WARNING")
        address = ray.get_runtime_context().gcs_address
        try:
            for number in range(args.rounds):
                order = ("local", "ray") if number % 2 == 0 else ("ray", "local")
                for engine in order:
                    store = Path(tmp) / f"{engine}-{number}"
                    ray_address = address if engine == "ray" else None
                    result["runs"].append(index_once(corpus, store, engine, ray_address, args.chunker))
            last = args.rounds - 1
            comparison = compare_stores(Path(tmp) / f"local-{last}", Path(tmp) / f"ray-{last}")
        finally:
            ray.shutdown()
    result["same_chunks"] = comparison.same_chunks
    result["min_cosine"] = round(comparison.min_cosine, 6)
    result["documents_cut_differently"] = comparison.documents_cut_differently
    result["same_concepts"] = comparison.same_concepts
    result["concept_min_cosine"] = round(comparison.concept_min_cosine, 6)

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 2)

    local = [r for r in result["runs"] if r["engine"] == "local"]
    warm = [r for r in result["runs"] if r["cluster"] == "warm"]
    cold = [r for r in result["runs"] if r["cluster"] == "cold"]
    summary = {
        "local_wall_seconds": mean([r["wall_seconds"] for r in local]),
        "ray_warm_wall_seconds": mean([r["wall_seconds"] for r in warm]),
        "ray_cold_wall_seconds": cold[0]["wall_seconds"],
    }
    summary["ray_warm_overhead"] = round(summary["ray_warm_wall_seconds"] / summary["local_wall_seconds"] - 1, 3)
    summary["ray_cold_overhead"] = round(summary["ray_cold_wall_seconds"] / summary["local_wall_seconds"] - 1, 3)
    sentences = warm[0]["sentences"]
    parallel = mean([r["stages"]["parallel"] for r in warm])
    serial = mean([sum(r["stages"].get(stage, 0) for stage in WRITER_STAGES) for r in warm])
    fixed = round(summary["ray_warm_wall_seconds"] - parallel - serial, 2)  # imports, connecting, actor start
    workers = args.cpus  # the CPU run's embedding actors: one per CPU
    per_worker = sentences / parallel / workers
    summary.update(
        {
            "sentences": sentences,
            "parallel_stage_seconds": parallel,
            "writer_seconds": serial,
            "sentences_per_second_per_cpu_worker": round(per_worker, 1),
        }
    )
    summary["projection_1m_sentences_seconds"] = {
        str(w): round(fixed + PROJECTED_SENTENCES / (per_worker * w) + serial * PROJECTED_SENTENCES / sentences)
        for w in PROJECTED_WORKERS
    }
    result["summary"] = summary
    _common.save_result("ray", result)
    _common.emit(result)


if __name__ == "__main__":
    main()
