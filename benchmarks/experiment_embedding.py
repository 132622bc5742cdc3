"""Experiments behind the embedding defaults (not a benchmark of the shipped setup as a whole):

    precision  fp32 / bf16 autocast / int8 dynamic (per channel, per tensor) on the first 1500 SQuAD-A sentences:
               speed and cosine to the fp32 vectors
    threads    one batch at a time on a 2-thread torch pool, or batches side by side on one thread each, with
               batches of 64 texts or of a padded-token budget (first 2400 sentences, bf16)

    .venv/bin/python benchmarks/experiment_embedding.py precision
    .venv/bin/python benchmarks/experiment_embedding.py threads
    .venv/bin/python benchmarks/experiment_embedding.py precision threads --sentences 24 --rounds 1   # a quick check
Timings move with the machine's load: each configuration runs twice, interleaved, and the load is printed.
"""

import argparse
import copy
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import squad_corpus  # noqa: E402
import torch  # noqa: E402

from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder, plan_batches  # noqa: E402
from granrag_mcp.indexing.sentences import split_sentences  # noqa: E402


def sentences(n: int) -> list[str]:
    documents, _ = squad_corpus.load()
    return [text[s:e] for text in documents.values() for s, e in split_sentences(text)][:n]


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def precision(count: int, rounds: int) -> None:
    texts = sentences(count)
    fp32 = SentenceTransformerEmbedder(precision="fp32", workers=1)
    reference = fp32.embed(texts)
    module = fp32._encoder.module
    variants = {
        "bf16 autocast": SentenceTransformerEmbedder(precision="bf16", workers=1),
        "int8 per channel": ("per_channel", module),
        "int8 per tensor": ("per_tensor", module),
    }
    for name, variant in variants.items():
        if isinstance(variant, tuple):
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

            spec = {torch.nn.Linear: per_channel_dynamic_qconfig} if variant[0] == "per_channel" else {torch.nn.Linear}
            embedder = SentenceTransformerEmbedder(precision="fp32", workers=1)
            embedder._encoder.module = quantize_dynamic(copy.deepcopy(variant[1]), spec, dtype=torch.qint8)
        else:
            embedder = variant
        for round_ in range(rounds):
            began = time.perf_counter()
            fp32.embed(texts)
            fp32_seconds = time.perf_counter() - began
            began = time.perf_counter()
            vectors = embedder.embed(texts)
            seconds = time.perf_counter() - began
            cosine = (reference * vectors).sum(axis=1)
            print(
                f"{name} round {round_}: {seconds:.1f} s vs fp32 {fp32_seconds:.1f} s "
                f"({fp32_seconds / seconds:.2f}x); cosine to fp32 mean {cosine.mean():.5f} min {cosine.min():.5f}; "
                f"load {load()}",
                flush=True,
            )


def threads(count: int, rounds: int) -> None:
    texts = sentences(count)
    embedder = SentenceTransformerEmbedder(precision="bf16", workers=1)
    lengths = embedder._encoder.token_lengths(texts)
    layouts = {
        "64 texts per batch": [
            sorted(range(len(texts)), key=lambda i: lengths[i])[i : i + 64] for i in range(0, len(texts), 64)
        ],
        "4096-token budget": plan_batches(lengths, max_texts=4096, max_tokens=4096),
    }
    embedder.embed(texts[:64])
    for round_ in range(rounds):
        for torch_threads, workers in ((2, 1), (1, 1), (1, 2)):
            torch.set_num_threads(torch_threads)
            for name, batches in layouts.items():
                began = time.perf_counter()
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(lambda rows: embedder._forward([texts[i] for i in rows]), batches))
                seconds = time.perf_counter() - began
                print(
                    f"round {round_}: torch threads {torch_threads}, batches side by side {workers}, {name}: "
                    f"{len(texts) / seconds:.0f} sentences/s; load {load()}",
                    flush=True,
                )


EXPERIMENTS = {"precision": (precision, 1500), "threads": (threads, 2400)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiments", nargs="*", choices=sorted(EXPERIMENTS), default=["precision"])
    parser.add_argument("--sentences", type=int, default=None, help="sentences to embed (default 1500 / 2400)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for name in args.experiments:
        run, count = EXPERIMENTS[name]
        run(args.sentences or count, args.rounds)


if __name__ == "__main__":
    main()
