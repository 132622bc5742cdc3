"""Experiment: the bundled MiniLM's forward on other inference runtimes (OpenVINO, ONNX Runtime) against torch, on
all SQuAD-A sentences batched as the chunk stage batches them (each document's sentences on their own, the
default batch plan, one thread per batch side by side). Two child processes: one as the machine allows (torch and
OpenVINO in bf16; ONNX Runtime's CPU kernels have no bf16, so fp32 there), one with torch, oneDNN and FAISS held to
AVX2 (`_common.AVX2_ONLY`) running everything in fp32. OpenVINO has no ISA setting of its own: its oneDNN kernels
honour ONEDNN_MAX_CPU_ISA, its other kernels (MLAS matrix products, layer norms) choose by CPUID, so the kinds of
kernel it compiled are recorded; ONNX Runtime's MLAS chooses by CPUID alone (not held). In each, the
runtimes alternate over `--rounds`; the vectors of each are compared (cosine) with torch fp32's. Load time is
split into the torch model's load and the conversion and compilation on top (OpenVINO's conversion also read back
from a cache folder, as later starts would). A runtime whose package is missing is reported, not run.

    .venv/bin/python benchmarks/experiment_runtime.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import squad_corpus  # noqa: E402
from _common import AVX2_ONLY, load_average, offline_env, save_result  # noqa: E402

from granrag_mcp.indexing.semantic_chunking import plan_document  # noqa: E402
from granrag_mcp.settings import ChunkSettings  # noqa: E402
from granrag_mcp.tokens import get_tokenizer  # noqa: E402

RUNTIMES = ("torch", "openvino", "onnxruntime")
MODULES = {"openvino": ("openvino",), "onnxruntime": ("onnxruntime", "onnx")}  # onnx: torch.onnx.export needs it


def sentences(limit: int | None) -> tuple[list[str], list[int]]:
    """The texts the chunk stage embeds (each broad chunk's sentences, default settings), grouped by document."""
    documents, _ = squad_corpus.load()
    tokenizer, settings = get_tokenizer(), ChunkSettings()
    texts, groups = [], []
    for number, text in enumerate(documents.values()):
        for broad in plan_document(text, tokenizer, settings).sentences:
            texts += [text[start:end] for start, end, _ in broad]
            groups += [number] * len(broad)
    return (texts[:limit], groups[:limit]) if limit is not None else (texts, groups)


def pooled_module(torch_encoder: Any) -> Any:
    """The bundled BERT followed by mean pooling, as one module to convert: (pooled vectors, token vectors)."""
    import torch

    from granrag_mcp.embedding.pooling import mean_pool

    class PooledBert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = torch_encoder.module

        def forward(self, input_ids: Any, attention_mask: Any) -> tuple[Any, Any]:
            tokens = self.bert(input_ids, attention_mask)
            return mean_pool(tokens, attention_mask), tokens

    return PooledBert().eval()


def example_features(torch_encoder: Any) -> Any:
    """Two texts of different lengths, so the traced graph takes the padded path (attention masked)."""
    return torch_encoder.features(["an example sentence of several words", "short"])


class OpenVinoEncoder:
    """The torch encoder's tokenizer, its forward converted by `openvino.convert_model` (or read back from the
    scratch folder, as a cache would on later starts) and compiled for the CPU with `streams` streams of one
    thread; each batch side by side takes an infer request of its own from a pool."""

    def __init__(self, torch_encoder: Any, streams: int, scratch: Path) -> None:
        import openvino
        import torch

        self._openvino = openvino
        self._torch_encoder = torch_encoder
        self.dimension = torch_encoder.dimension
        self.max_tokens = torch_encoder.max_tokens
        self._streams = streams
        path = scratch / "model.xml"
        if path.is_file():
            self._model = openvino.Core().read_model(str(path))
        else:
            example = example_features(torch_encoder)
            with torch.inference_mode():
                self._model = openvino.convert_model(
                    pooled_module(torch_encoder),
                    example_input=(example["input_ids"], example["attention_mask"]),
                    input=[("input_ids", [-1, -1], openvino.Type.i64), ("attention_mask", [-1, -1], openvino.Type.i64)],
                )
            openvino.save_model(self._model, str(path), compress_to_fp16=False)
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._compiled: Any = None
        self.set_precision("fp32")

    def set_precision(self, precision: str) -> None:
        self._compiled = self._openvino.Core().compile_model(
            self._model,
            "CPU",
            {
                "INFERENCE_PRECISION_HINT": {"fp32": "f32", "bf16": "bf16"}[precision],
                "NUM_STREAMS": self._streams,
                "INFERENCE_NUM_THREADS": self._streams,
                "PERFORMANCE_HINT": "THROUGHPUT",
            },
        )
        self._requests = queue.SimpleQueue()

    def kernels(self) -> dict[str, int]:
        """How many nodes of the compiled graph run on each kind of kernel (the ISA is part of the name)."""
        found = Counter(
            str(op.get_rt_info()["primitiveType"].astype(str))
            for op in self._compiled.get_runtime_model().get_ordered_ops()
        )
        return dict(found.most_common())

    def features(self, texts: list[str]) -> Any:
        return self._torch_encoder.features(texts)

    def pooled(self, features: Any) -> Any:
        import torch

        try:
            request = self._requests.get_nowait()
        except queue.Empty:
            request = self._compiled.create_infer_request()
        try:
            out = request.infer(
                {"input_ids": features["input_ids"].numpy(), "attention_mask": features["attention_mask"].numpy()}
            )
            pooled = np.array(out[0])  # the request's buffers are reused by its next call
        finally:
            self._requests.put(request)
        return torch.from_numpy(pooled)

    def token_lengths(self, texts: list[str]) -> list[int]:
        return list(self._torch_encoder.token_lengths(texts))


class OnnxRuntimeEncoder:
    """The torch encoder's tokenizer, its forward exported to ONNX (public `torch.onnx.export`) and run by ONNX
    Runtime's CPU provider, one thread per call (batches run side by side as on torch)."""

    def __init__(self, torch_encoder: Any, scratch: Path) -> None:
        import onnxruntime
        import torch

        self._torch_encoder = torch_encoder
        self.dimension = torch_encoder.dimension
        self.max_tokens = torch_encoder.max_tokens
        example = example_features(torch_encoder)
        path = scratch / "model.onnx"
        dynamic = {0: "batch", 1: "length"}
        with torch.inference_mode():
            torch.onnx.export(
                pooled_module(torch_encoder),
                (example["input_ids"], example["attention_mask"]),
                str(path),
                input_names=["input_ids", "attention_mask"],
                output_names=["pooled", "tokens"],
                dynamic_axes={"input_ids": dynamic, "attention_mask": dynamic, "pooled": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def set_precision(self, precision: str) -> None:
        pass  # fp32 only: the CPU provider has no bf16 matrix products on x86

    def features(self, texts: list[str]) -> Any:
        return self._torch_encoder.features(texts)

    def pooled(self, features: Any) -> Any:
        import torch

        inputs = {"input_ids": features["input_ids"].numpy(), "attention_mask": features["attention_mask"].numpy()}
        return torch.from_numpy(self._session.run(["pooled"], inputs)[0])

    def token_lengths(self, texts: list[str]) -> list[int]:
        return list(self._torch_encoder.token_lengths(texts))


def timed(build: Callable[[], Any]) -> tuple[Any, float]:
    began = time.perf_counter()
    value = build()
    return value, round(time.perf_counter() - began, 2)


def child(mode: str, runtimes: list[str], rounds: int, limit: int | None, out: Path) -> None:
    """One process's arms: build each embedder, then embed all sentences `rounds` times, arms alternating."""
    offline_env()
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

    texts, groups = sentences(limit)
    precision = "bf16" if mode == "native" else "fp32"
    arms: dict[str, Any] = {}
    kernels: dict[str, int] = {}
    loads: dict[str, dict[str, float]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="granrag-runtime-"))
    for runtime in runtimes:
        # Other runtimes convert the fp32 weights (their own precision is set on their side).
        own = precision if runtime == "torch" else "fp32"
        embedder, seconds = timed(lambda: SentenceTransformerEmbedder(precision=own))  # noqa: B023
        loads[runtime] = {"torch_load_s": seconds}
        if runtime == "openvino":
            torch_encoder, streams = embedder._encoder, embedder.workers
            encoder, seconds = timed(lambda: OpenVinoEncoder(torch_encoder, streams, scratch))  # noqa: B023
            loads[runtime]["convert_and_compile_s"] = seconds
            _, seconds = timed(lambda: encoder.set_precision(precision))  # noqa: B023
            loads[runtime]["compile_s"] = seconds
            _, seconds = timed(lambda: OpenVinoEncoder(torch_encoder, streams, scratch))  # noqa: B023
            loads[runtime]["from_cache_and_compile_s"] = seconds
            embedder._encoder = encoder  # this project's own attribute, swapped for the experiment
        elif runtime == "onnxruntime":
            encoder, seconds = timed(lambda: OnnxRuntimeEncoder(embedder._encoder, scratch))  # noqa: B023
            loads[runtime]["export_and_session_s"] = seconds
            embedder._encoder = encoder
        embedder.embed(texts[:200], groups=groups[:200])  # warm-up
        if runtime == "openvino":
            kernels = embedder._encoder.kernels()  # after a run: kernels of dynamic shapes are chosen at run time
        arms[runtime] = embedder
    seconds: dict[str, list[float]] = {r: [] for r in arms}
    cpu: dict[str, list[float]] = {r: [] for r in arms}
    vectors: dict[str, np.ndarray] = {}
    for number in range(rounds):
        for runtime in list(arms) if number % 2 == 0 else list(reversed(arms)):
            began, began_cpu = time.perf_counter(), time.process_time()
            vectors[runtime] = arms[runtime].embed(texts, groups=groups)
            seconds[runtime].append(round(time.perf_counter() - began, 2))
            cpu[runtime].append(round(time.process_time() - began_cpu, 2))
    np.savez(out.with_suffix(".npz"), **vectors)
    report = {
        "precision": precision,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "load": loads,
        "openvino_kernels": kernels,
    }
    out.write_text(json.dumps(report), encoding="utf-8")


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    values = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"mean": round(float(values.mean()), 6), "min": round(float(values.min()), 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=None, help="only the first N sentences (default all)")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES), help="comma-separated, of: " + ", ".join(RUNTIMES))
    parser.add_argument("--modes", default="native,avx2", help="native (bf16), avx2 (fp32 held to AVX2), or both")
    parser.add_argument("--child", choices=["native", "avx2"], help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--name", default="runtime", help="result file name (benchmarks/results/NAME.json)")
    args = parser.parse_args()
    wanted = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    if args.child:
        child(args.child, wanted, args.rounds, args.sentences, args.out)
        return
    import importlib.util

    missing = {
        r: "pip install " + " ".join(MODULES[r])
        for r in wanted
        if not all(importlib.util.find_spec(module) for module in MODULES.get(r, ()))
    }
    runtimes = [r for r in wanted if r not in missing]
    result: dict[str, Any] = {"load_at_start": load_average(), "not_installed": missing, "modes": {}}
    vectors: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for mode in args.modes.split(","):
            out = Path(scratch) / f"{mode}.json"
            env = {**os.environ, **(AVX2_ONLY if mode == "avx2" else {})}
            command = [sys.executable, __file__, "--child", mode, "--out", str(out), "--rounds", str(args.rounds)]
            command += ["--runtimes", ",".join(runtimes)]
            if args.sentences is not None:
                command += ["--sentences", str(args.sentences)]
            subprocess.run(command, check=True, env=env)
            result["modes"][mode] = json.loads(out.read_text(encoding="utf-8"))
            result["modes"][mode]["load_after"] = load_average()
            with np.load(out.with_suffix(".npz")) as saved:
                vectors[mode] = {name: saved[name] for name in saved.files}
    # Torch fp32 is the reference; without the avx2 process only torch bf16 is there to compare with.
    reference = (vectors.get("avx2") or vectors["native"])["torch"]
    result["reference"] = "torch fp32 (avx2 process)" if "avx2" in vectors else "torch bf16 (native process)"
    for mode, arms in vectors.items():
        result["modes"][mode]["cosine_to_torch_fp32"] = {name: cosines(v, reference) for name, v in arms.items()}
    result["sentences"] = len(reference)
    save_result(args.name, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
