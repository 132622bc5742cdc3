"""Device choice for the embedding model, and the batch limits and precision that go with it."""

import numpy as np
import pytest

from granrag_mcp.embedding import devices
from granrag_mcp.embedding.devices import GPU_BATCH_TEXTS, batch_plan, resolve_device
from granrag_mcp.errors import InvalidInputError
from granrag_mcp.settings import Settings


def cuda_present() -> bool:
    import torch

    return torch.cuda.is_available()


needs_cuda = pytest.mark.skipif(not cuda_present(), reason="needs a CUDA device visible to torch")


def test_auto_takes_the_gpu_only_where_torch_sees_one(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu"


def test_cuda_without_a_gpu_says_what_to_do(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    with pytest.raises(InvalidInputError, match="--device auto or cpu"):
        resolve_device("cuda")


def test_gpu_batches_are_larger_unless_the_user_set_the_size():
    cpu = batch_plan("cpu", 256, False, None)
    gpu = batch_plan("cuda", 256, False, None)
    assert (cpu.texts, cpu.workers) == (256, None)
    assert gpu.texts == GPU_BATCH_TEXTS and gpu.tokens > cpu.tokens and gpu.workers
    assert batch_plan("cuda", 64, True, 3) == devices.BatchPlan(64, gpu.tokens, 3)


def test_settings_and_flag_choose_the_device(monkeypatch):
    from granrag_mcp.cli import build_parser, load_settings

    monkeypatch.setenv("GRANRAG_DEVICE", "cpu")
    assert Settings().device == "cpu"
    args = build_parser().parse_args(["index", "docs", "--device", "cuda", "--precision", "fp16"])
    settings = load_settings(args)
    assert (settings.device, settings.precision) == ("cuda", "fp16")
    with pytest.raises(ValueError):
        Settings(device="tpu")


def test_make_embedder_on_cpu_keeps_the_cpu_batches():
    from granrag_mcp.embedding.factory import make_embedder

    embedder = make_embedder(Settings(device="cpu", embed_workers=2))
    assert (embedder.batch_size, embedder.batch_tokens, embedder.workers) == (256, devices.CPU_BATCH_TOKENS, 2)
    assert embedder.precision in ("fp32", "bf16")


@needs_cuda
@pytest.mark.parametrize("precision", ["auto", "fp16", "fp32"])
def test_gpu_vectors_match_the_cpu_ones(precision):
    from granrag_mcp.embedding.factory import make_embedder

    texts = [f"Sentence number {n} is about the river that flows past mill {n % 7}." for n in range(300)]
    cpu = make_embedder(Settings(device="cpu", precision="fp32")).embed(texts)
    gpu_embedder = make_embedder(Settings(device="cuda", precision=precision))
    assert gpu_embedder.precision == (precision if precision != "auto" else devices.gpu_precision("auto"))
    assert gpu_embedder.batch_size == GPU_BATCH_TEXTS
    gpu = gpu_embedder.embed(texts)
    assert np.min(np.sum(cpu * gpu, axis=1)) >= (0.9999 if precision == "fp32" else 0.999)


@needs_cuda
def test_a_gpu_embedder_keeps_attention_off_cudnn():
    import torch

    from granrag_mcp.embedding.factory import make_embedder

    torch.backends.cuda.enable_cudnn_sdp(True)
    make_embedder(Settings(device="cuda"))
    assert not torch.backends.cuda.cudnn_sdp_enabled()


@needs_cuda
def test_index_on_the_gpu_cuts_the_cpu_stores_sentences_with_the_default_chunker(tmp_path):
    from granrag_mcp.engine import run_index
    from granrag_mcp.store.store import Snapshot
    from tests.helpers import write_corpus

    docs = write_corpus(tmp_path / "docs")
    spans = {}
    for device in ("cpu", "cuda"):
        settings = Settings(store=tmp_path / device, device=device, broad_tokens=64, broad_overlap=16, mid_tokens=32)
        assert run_index([docs], settings, quiet=True).added == 3
        snapshot = Snapshot.open(tmp_path / device)
        try:  # broad chunks and sentences come from the text alone; a semantic mid may move at a near tie
            spans[device] = {
                level: [(c.doc_id, c.start, c.end) for c in snapshot.catalog.chunks_of_level(level)]
                for level in ("broad", "narrow")
            }
        finally:
            snapshot.close()
    assert spans["cpu"] == spans["cuda"] and spans["cpu"]["narrow"]
