"""Fit the shipped projection of token vectors: the principal directions of MiniLM's output token vectors.

The text is this project's own documentation (README.md and docs/*.md, cut into sentences): English prose of
another kind than the SQuAD articles the projection is measured on, so the measurement is out of sample. The
directions are the right singular vectors of the token matrix, not centred (MaxSim compares raw cosines, so the
shared direction of all token vectors is kept), best first, stored as float16.

    python benchmarks/tools/fit_token_basis.py [--out granrag_mcp/embedding/minilm_token_basis.npy]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences() -> list[str]:
    out = []
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
            out += [s[:400] for s in SENTENCE_END.split(paragraph) if len(s.split()) >= 4]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "granrag_mcp" / "embedding" / "minilm_token_basis.npy")
    args = parser.parse_args()
    _common.offline_env()

    import numpy as np

    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

    texts = sentences()
    _, tokens = SentenceTransformerEmbedder(precision="fp32").embed_tokens(texts, lambda states: states)
    matrix = np.concatenate(tokens)
    _, _, directions = np.linalg.svd(matrix, full_matrices=False)
    np.save(args.out, directions.T.astype(np.float16), allow_pickle=False)
    print(f"{len(texts)} sentences, {len(matrix)} token vectors -> {args.out.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
