"""Experiment behind the sentence batching rule: the cost of embedding each document's sentences in batches of
their own (so a document's vectors, and its semantic cut, do not depend on the documents beside it), with and
without the padding bound (`MAX_PADDING`), against batches that mix documents. All SQuAD-A sentences, the default
embedder; each arm runs `--rounds` times, interleaved, and the load is printed.

    .venv/bin/python benchmarks/experiment_batching.py --rounds 2
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import squad_corpus  # noqa: E402

from granrag_mcp.embedding import embedder as embedding  # noqa: E402
from granrag_mcp.embedding.factory import make_embedder  # noqa: E402
from granrag_mcp.indexing.sentences import split_sentences  # noqa: E402
from granrag_mcp.settings import Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=None, help="only the first N sentences (default all)")
    args = parser.parse_args()
    documents, _ = squad_corpus.load()
    texts, groups = [], []
    for number, text in enumerate(documents.values()):
        for start, end in split_sentences(text):
            texts.append(text[start:end])
            groups.append(number)
    if args.sentences is not None:
        texts, groups = texts[: args.sentences], groups[: args.sentences]
    embedder = make_embedder(Settings())
    embedder.embed(texts[:300], progress=lambda done, total: None)  # warm up
    arms = {
        "mixed, no padding bound": (float("inf"), None),
        "mixed, padding bound": (embedding.MAX_PADDING, None),
        "per document, no padding bound": (float("inf"), groups),
        "per document, padding bound": (embedding.MAX_PADDING, groups),
    }
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    for number in range(args.rounds):
        for arm in list(arms) if number % 2 == 0 else list(reversed(arms)):
            bound, arm_groups = arms[arm]
            embedding.MAX_PADDING = bound  # this project's own constant, set per arm
            began = time.perf_counter()
            embedder.embed(texts, progress=lambda done, total: None, groups=arm_groups)
            seconds[arm].append(round(time.perf_counter() - began, 2))
    print(
        json.dumps(
            {"sentences": len(texts), "seconds": seconds, "load": os.getloadavg()},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
