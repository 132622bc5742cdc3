"""SQuAD-A indexed on a GPU (`granrag-mcp index --device cuda`) against two CPU cores, and the GPU's sentences per
second against its arithmetic limit.

Needs a CUDA device that torch sees; on a machine without one it says so and exits. Every index run is a
`granrag-mcp index --json` child process into a fresh store, timed from outside (imports and model load
included), alternating so that a change of load hits each kind alike:

- gpu: `--device cuda` with the default chunker (semantic), the local engine;
- cpu2: `--device cpu`, pinned to two cores (`os.sched_setaffinity`, two embedding workers): the 2-core machine
  the CPU figures elsewhere in BENCHMARKS.md come from, measured here beside the GPU;
- with --ray, also `--engine ray` on a local cluster (one embedding actor per GPU).

The arithmetic limit is measured, not taken from a datasheet: the throughput of a large matrix product in the
precision the embedder uses on that GPU (bf16 where the GPU has it, else fp16). The model's own arithmetic is
counted from its configuration over the word pieces of the sentences it embedded (2 x multiply-adds: the
attention and feed-forward projections, plus the attention scores and their weighted sum), so utilisation =
model FLOP/s during the embedding stages / that limit. Usage (on the GPU machine):

    .venv/bin/python benchmarks/suite/bench_gpu.py --rounds 2
    .venv/bin/python benchmarks/suite/bench_gpu.py --rounds 1 --copies 4 --ray
    .venv/bin/python benchmarks/suite/bench_gpu.py --rounds 1 --squad ../shared/datasets/covidqa-a.json --name gpu_covid_a

Writes benchmarks/results/gpu.json (or NAME.json).
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

MODEL_STAGES = ("chunk", "embed")  # semantic chunking embeds the sentences in "chunk"; "embed" pools the levels
CPU_CORES = 2


def index_once(corpus: Path, store: Path, kind: str) -> dict:
    command = [sys.executable, "-m", "granrag_mcp.cli", "index", str(corpus), "--store", str(store), "--json"]
    command += ["--quiet", "--device", "cpu" if kind == "cpu2" else "cuda"]
    env = os.environ.copy()
    pin = None
    if kind == "cpu2":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["GRANRAG_EMBED_WORKERS"] = str(CPU_CORES)
        cores = sorted(os.sched_getaffinity(0))[:CPU_CORES]
        pin = lambda: os.sched_setaffinity(0, cores)  # noqa: E731  (runs in the child before it execs)
    if kind == "ray":
        command += ["--engine", "ray"]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env, preexec_fn=pin)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{kind} run failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    stages = {k: round(v, 3) for k, v in summary["seconds"].items()}
    model_seconds = sum(stages.get(s, 0.0) for s in MODEL_STAGES) if kind != "ray" else stages.get("parallel", 0.0)
    sentences = summary["new_chunks"]["narrow"]
    return {
        "kind": kind,
        "wall_seconds": round(wall, 2),
        "stages": stages,
        "sentences": sentences,
        "model_stage_seconds": round(model_seconds, 3),
        "sentences_per_second": round(sentences / model_seconds, 1) if model_seconds else None,
        "load": _common.load_average(),
    }


def matmul_limit(precision: str, size: int = 8192, repeats: int = 20) -> float:
    """FLOP/s of a size x size matrix product in `precision` on the current GPU: what its tensor cores deliver."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[precision]
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        torch.matmul(a, b)
    stop.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(stop) / 1000.0
    return 2.0 * size**3 * repeats / seconds


def model_flops(store: Path, model: str) -> dict:
    """The encoder's arithmetic over the stored sentences' word pieces (no padding counted: the useful work)."""
    from transformers import AutoConfig, AutoTokenizer

    from granrag_mcp.embedding.embedder import resolve_model_location
    from granrag_mcp.store.store import Snapshot

    location = resolve_model_location(model)
    config = AutoConfig.from_pretrained(location)
    tokenizer = AutoTokenizer.from_pretrained(location)
    snapshot = Snapshot.open(store)
    try:
        texts = [c.text for c in snapshot.catalog.chunks_of_level("narrow")]
    finally:
        snapshot.close()
    limit = min(getattr(tokenizer, "model_max_length", 512), 512)
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=limit)["input_ids"]]
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    # Per layer and word piece: Q, K, V and output projections (4 h^2), feed-forward (2 h i), scores and their
    # weighted sum over the sequence (2 L h) multiply-adds; 2 FLOPs each.
    flops = sum(2 * layers * n * (4 * h * h + 2 * h * i + 2 * n * h) for n in lengths)
    return {"sentences": len(texts), "word_pieces": sum(lengths), "flops": float(flops)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--copies", type=int, default=1, help="SQuAD-A plus reordered copies (default 1: 24 docs)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating gpu/cpu2 pairs")
    parser.add_argument("--ray", action="store_true", help="also index with --engine ray (one actor per GPU)")
    parser.add_argument("--name", default="gpu", help="result file name (default gpu)")
    args = parser.parse_args()
    _common.offline_env()
    os.environ.setdefault("GRANRAG_LOG_LEVEL", "WARNING")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to torch: run this on a GPU machine with a CUDA build of torch")
    from granrag_mcp.embedding.devices import gpu_precision
    from granrag_mcp.settings import Settings

    settings = Settings()
    precision = gpu_precision(settings.precision)
    documents, _ = squad_corpus.load(args.squad)
    documents = squad_corpus.with_reordered_copies(documents, args.copies)
    result: dict = {
        "benchmark": "gpu",
        "machine": _common.machine(),
        "git": _common.git_revision(),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "precision": precision,
        "corpus": {"file": args.squad.name, "copies": args.copies, "documents": len(documents)},
        "runs": [],
    }
    result["matmul_limit_tflops"] = round(matmul_limit(precision) / 1e12, 1)
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        corpus = Path(tmp) / "corpus"
        squad_corpus.write(documents, corpus)
        kinds = ["gpu", "cpu2"] + (["ray"] if args.ray else [])
        for number in range(args.rounds):
            for kind in kinds if number % 2 == 0 else list(reversed(kinds)):
                result["runs"].append(index_once(corpus, Path(tmp) / f"{kind}-{number}", kind))
        work = model_flops(Path(tmp) / "gpu-0", settings.model)
        from benchmarks.compare import compare_stores

        comparison = compare_stores(Path(tmp) / "cpu2-0", Path(tmp) / "gpu-0")
    result["model_work"] = work

    def mean(kind: str, key: str) -> float:
        values = [r[key] for r in result["runs"] if r["kind"] == kind]
        return sum(values) / len(values)

    gpu_model_seconds = mean("gpu", "model_stage_seconds")
    achieved = work["flops"] / gpu_model_seconds
    result["summary"] = {
        "gpu_wall_seconds": round(mean("gpu", "wall_seconds"), 2),
        "cpu2_wall_seconds": round(mean("cpu2", "wall_seconds"), 2),
        "speedup_wall": round(mean("cpu2", "wall_seconds") / mean("gpu", "wall_seconds"), 1),
        "speedup_model_stages": round(mean("cpu2", "model_stage_seconds") / gpu_model_seconds, 1),
        "gpu_sentences_per_second": round(work["sentences"] / gpu_model_seconds),
        "cpu2_sentences_per_second": round(mean("cpu2", "sentences_per_second")),
        "model_tflops_achieved": round(achieved / 1e12, 2),
        "share_of_matmul_limit": round(achieved / (result["matmul_limit_tflops"] * 1e12), 3),
        "sentences_per_second_at_the_limit": round(
            work["sentences"] * result["matmul_limit_tflops"] * 1e12 / work["flops"]
        ),
        "cpu_vs_gpu_same_chunks": comparison.same_chunks,
        "cpu_vs_gpu_min_cosine": round(comparison.min_cosine, 5),
    }
    _common.save_result(args.name, result)
    _common.emit(result)


if __name__ == "__main__":
    main()
