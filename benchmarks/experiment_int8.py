"""Experiment: int8 dynamic quantization of MiniLM's Linear layers; embedding speed and vector agreement on the
first 1500 sentences of SQuAD-A. Not a benchmark of the shipped configuration (it compares with fp32, not bf16).

    .venv/bin/python benchmarks/experiment_int8.py
"""

import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import squad_corpus  # noqa: E402
import torch  # noqa: E402

from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder  # noqa: E402
from granrag_mcp.indexing.sentences import split_sentences  # noqa: E402

documents, _ = squad_corpus.load()
sentences = [text[start:end] for text in documents.values() for start, end in split_sentences(text)][:1500]
embedder = SentenceTransformerEmbedder(precision="fp32")  # the int8 layers run in fp32, not under bf16 autocast
embedder.embed(sentences[:64])  # warm-up
began = time.perf_counter()
fp32 = embedder.embed(sentences)
fp32_seconds = time.perf_counter() - began
embedder._encoder.module = torch.ao.quantization.quantize_dynamic(
    embedder._encoder.module, {torch.nn.Linear}, dtype=torch.qint8
)
embedder.embed(sentences[:64])
began = time.perf_counter()
int8 = embedder.embed(sentences)
int8_seconds = time.perf_counter() - began
cosine = (fp32 * int8).sum(axis=1)
print(
    f"fp32 {fp32_seconds:.1f} s, int8 {int8_seconds:.1f} s, speed-up {fp32_seconds / int8_seconds:.2f}x; "
    f"cosine fp32 vs int8: mean {cosine.mean():.4f}, min {cosine.min():.4f}"
)
