"""The default offline fallback: chunks of the index scored from the stored vectors of their sentences."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.rerankers.base import MEAN_WINDOW_WEIGHT, SENTENCE_WINDOW_TOKENS, sentence_windows, window_score
from granrag_mcp.rerankers.embedding_windows import EmbeddingReranker


class SentenceWindowReranker:
    """Offline fallback that does no model work per passage: a bi-encoder similarity, NOT a cross-encoder.

    A passage from the index is scored by the same rule as `EmbeddingReranker` (best window plus a small share
    of the mean window), but its windows are runs of consecutive sentences of at most `window_tokens` tokens,
    one starting at every sentence, and a window's vector is the token-weighted mean of the stored vectors of its
    sentences, the way mid and broad vectors are formed. Reranking 20 mid chunks then costs one query embedding
    and a few hundred dot products instead of embedding ~150 windows. Texts not from the index (`score`) are
    handed to an `EmbeddingReranker`.
    """

    reads_sentence_vectors = True

    def __init__(
        self, embedder: Embedder, window_tokens: int = SENTENCE_WINDOW_TOKENS, mean_weight: float = MEAN_WINDOW_WEIGHT
    ) -> None:
        if window_tokens < 1:
            raise ValueError(f"window_tokens must be >= 1, got {window_tokens!r}")
        self._embedder = embedder
        self._window_tokens = window_tokens
        self._mean_weight = mean_weight
        self._texts = EmbeddingReranker(embedder, mean_weight=mean_weight)
        self.name = f"sentence-windows-fallback:{embedder.name}"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return self._texts.score(query, passages)

    def score_sentences(
        self, query_vector: np.ndarray, passages: Sequence[tuple[np.ndarray, np.ndarray]]
    ) -> list[float]:
        """One score per passage given as (its sentence vectors in document order, their token counts)."""
        scores = []
        for vectors, token_counts in passages:
            if not len(vectors):
                scores.append(-1.0)
                continue
            weights = np.maximum(np.asarray(token_counts, dtype=np.float32), 1.0)
            sums = np.vstack([np.zeros((1, vectors.shape[1]), np.float32), np.cumsum(vectors * weights[:, None], 0)])
            runs = np.array(sentence_windows(weights, self._window_tokens))
            windows = sums[runs[:, 1]] - sums[runs[:, 0]]
            windows /= np.maximum(np.linalg.norm(windows, axis=1, keepdims=True), 1e-12)
            scores.append(window_score(windows @ np.asarray(query_vector, dtype=np.float32), self._mean_weight))
        return scores
