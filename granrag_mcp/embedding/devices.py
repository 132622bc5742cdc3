"""Where the embedding model runs (CPU or a CUDA GPU), and the batch sizes and arithmetic that suit each.

A CPU embeds best in small batches (a few thousand padded word pieces) run side by side, one thread each, in bf16
only where the CPU multiplies bf16 in hardware. A GPU wants the opposite: few, large batches that fill its
streaming multiprocessors, in half precision (bf16 where the GPU has it, Ampere and later; fp16 before), since
its tensor cores run half precision many times faster than fp32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.settings import Device

ResolvedDevice = Literal["cpu", "cuda"]

CPU_BATCH_TOKENS = 4096
"""Padded word pieces per CPU batch: short sentences go in big batches, long windows in small ones."""
GPU_BATCH_TEXTS = 1024
"""Texts per GPU batch unless the batch size is set: one launch per batch, so fewer, larger batches."""
GPU_BATCH_TOKENS = 131072
"""Padded word pieces per GPU batch: 512 MiniLM-sized windows, or 1024 texts of 128 word pieces; activations of
a 6-layer, 384-wide model at this size take well under 1 GiB in half precision."""
GPU_WORKERS = 2
"""Batches in flight on one GPU: while one runs, the next one is tokenised on the CPU."""


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(device: Device) -> ResolvedDevice:
    """ "auto" is the GPU where torch sees one; "cuda" without one is an error the user can act on."""
    if device == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if device == "cuda":
        raise InvalidInputError(
            "--device cuda (GRANRAG_DEVICE) asks for a GPU, but torch sees no CUDA device: install a CUDA build "
            "of torch and check `nvidia-smi`, or use --device auto or cpu"
        )
    return "cpu"


def gpu_precision(precision: str) -> Literal["fp32", "bf16", "fp16"]:
    """Precision on a GPU: "auto" is bf16 where the GPU does it natively (its wider range never overflows on
    long inputs), else fp16."""
    if precision != "auto":
        return precision  # type: ignore[return-value]
    import torch

    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


@dataclass(frozen=True)
class BatchPlan:
    texts: int  # most texts per batch
    tokens: int  # most padded word pieces per batch
    workers: int | None  # batches side by side (None: one per core)


def batch_plan(device: ResolvedDevice, batch_size: int, batch_size_set: bool, workers: int | None) -> BatchPlan:
    """Batch limits for the device. On a GPU the texts per batch grow to GPU_BATCH_TEXTS unless the user set a
    batch size, and two batches are in flight unless the user set the workers."""
    if device == "cuda":
        return BatchPlan(
            texts=batch_size if batch_size_set else max(batch_size, GPU_BATCH_TEXTS),
            tokens=GPU_BATCH_TOKENS,
            workers=workers or GPU_WORKERS,
        )
    return BatchPlan(texts=batch_size, tokens=CPU_BATCH_TOKENS, workers=workers)
