"""How each level gets its vectors.

The model sees at most its own window (256 word pieces for MiniLM), far less than a 512- or 2048-token chunk.
Sentences are embedded directly. Mid and broad chunks take one of three modes:

- ``mean``: the token-weighted mean of the sentence vectors below them (no extra model work);
- ``truncate``: the model embeds the chunk text and silently drops what does not fit its window;
- ``windows``: the chunk is cut into model-sized windows, each embedded, and their vectors averaged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, ProgressCallback, normalise
from granrag_mcp.settings import VectorMode


def pool(child_sums: np.ndarray, parent_of_child: np.ndarray, n_parents: int) -> np.ndarray:
    """Sum child rows into their parents' rows."""
    sums = np.zeros((n_parents, child_sums.shape[1]), dtype=np.float32)
    if len(parent_of_child):
        np.add.at(sums, parent_of_child, child_sums)
    return sums


def windowed_vectors(embedder: Embedder, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
    pieces: list[str] = []
    owners: list[int] = []
    for owner, text in enumerate(texts):
        for start, end in embedder.windows(text) or [(0, len(text))]:
            pieces.append(text[start:end])
            owners.append(owner)
    piece_vectors = embedder.embed(pieces, progress=progress)
    return normalise(pool(piece_vectors, np.asarray(owners, dtype=np.int64), len(texts)))


def level_vectors(
    mode: VectorMode,
    embedder: Embedder,
    texts: Sequence[str],
    child_sums: np.ndarray,
    parent_of_child: np.ndarray,
    progress: ProgressCallback | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Vectors for a batch of parent chunks, and the token-weighted sums the level above pools from.

    `child_sums` holds one token-weighted vector sum per child; `parent_of_child` maps each child to its
    parent's row in `texts`.
    """
    sums = pool(child_sums, parent_of_child, len(texts))
    if mode == "mean":
        return normalise(sums), sums
    if mode == "truncate":
        return embedder.embed(texts, progress=progress), sums
    if mode == "windows":
        return windowed_vectors(embedder, texts, progress=progress), sums
    raise ValueError(f"unknown vector mode {mode!r}")
