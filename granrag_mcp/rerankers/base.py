"""What every reranker is, and the window scoring the embedding fallbacks share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

DEFAULT_WINDOW_TOKENS = 128
"""Largest window the embedding fallback scores at once; see EmbeddingReranker for why."""

MEAN_WINDOW_WEIGHT = 0.1
"""Weight of the mean window similarity next to the best window's, in the fallback score."""

SENTENCE_WINDOW_TOKENS = 100
"""cl100k tokens per window of SentenceWindowReranker: about the 128 word pieces of EmbeddingReranker's."""


class Reranker(Protocol):
    name: str
    reads_sentence_vectors: bool
    """True: it scores chunks of the index from their stored sentence vectors (`score_sentences`)."""

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage, in the order given; higher is more relevant."""
        ...


def window_score(similarities: np.ndarray, mean_weight: float) -> float:
    """The fallback rerankers' score of a passage from its windows' similarities: (best + w * mean) / (1 + w)."""
    return (float(similarities.max()) + mean_weight * float(similarities.mean())) / (1.0 + mean_weight)


def sentence_windows(token_counts: np.ndarray, window_tokens: int) -> list[tuple[int, int]]:
    """Runs [i, j) of consecutive sentences holding at most `window_tokens` tokens (a longer sentence alone),
    one starting at every sentence, without the runs that lie inside an earlier one."""
    runs: list[tuple[int, int]] = []
    end = 0
    total = 0
    for start in range(len(token_counts)):
        if end <= start:
            end, total = start + 1, int(token_counts[start])
        while end < len(token_counts) and total + int(token_counts[end]) <= window_tokens:
            total += int(token_counts[end])
            end += 1
        if not runs or end > runs[-1][1]:
            runs.append((start, end))
        total -= int(token_counts[start])
    return runs
