"""Query vectors from any embedder: models trained with asymmetric prefixes (e5) embed questions apart."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, ProgressCallback


def embed_queries(embedder: Embedder, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
    """The embedder's `embed_queries` where it has one, else its `embed`: one vector per query text."""
    method = getattr(embedder, "embed_queries", None)
    if callable(method):
        return np.asarray(method(texts, progress=progress))
    return embedder.embed(texts, progress=progress)
