"""The embedding fallback that embeds each passage's windows: for texts that are not chunks of the index."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.rerankers.base import DEFAULT_WINDOW_TOKENS, MEAN_WINDOW_WEIGHT, window_score


class EmbeddingReranker:
    """Offline fallback: a bi-encoder similarity, NOT a cross-encoder.

    Query and passage are embedded separately and compared by cosine, so the model never
    sees them together; expect weaker ordering than a real cross-encoder.

    The whole passage is scored, never a truncated prefix. It is cut into windows of at most
    `window_tokens` model tokens (default: 128, or the model's window if smaller) that overlap
    by half, every window is embedded, and

        score = (max_w cos(q, w) + mean_weight * mean_w cos(q, w)) / (1 + mean_weight)

    with mean_weight = 0.1 by default. The max lets the one window holding the answer decide,
    however long the passage and wherever the answer sits; averaging would dilute it with
    unrelated windows. The small mean term breaks near-ties in favour of passages that stay
    on topic throughout. Dividing by (1 + mean_weight) keeps the score in [-1, 1].

    Why windows smaller than the model allows, and overlapping: a one-sentence fact inside
    250 tokens of unrelated text is drowned out in the pooled vector (measured with
    all-MiniLM-L6-v2: cosine 0.34 in a 256-token window against 0.58 in an overlapping
    128-token one, which is also the length that model was trained on). The half overlap
    means any stretch of up to half a window lies wholly inside some window, so a fact is
    never judged only in two halves split at a boundary. The cost is about twice as many
    windows as a non-overlapping split of the same size.

    A blank passage (no windows) is embedded as it is, as a single window.
    """

    reads_sentence_vectors = False

    def __init__(
        self,
        embedder: Embedder,
        window_tokens: int | None = None,
        mean_weight: float = MEAN_WINDOW_WEIGHT,
        cache_size: int = 20_000,
    ) -> None:
        if mean_weight < 0:
            raise ValueError(f"mean_weight must be >= 0, got {mean_weight!r}")
        if window_tokens is None:
            window_tokens = min(embedder.max_tokens, DEFAULT_WINDOW_TOKENS)
        if window_tokens < 2:
            raise ValueError(f"window_tokens must be >= 2, got {window_tokens!r}")
        self._embedder = embedder
        self._half_window_tokens = window_tokens // 2
        self._mean_weight = mean_weight
        self.name = f"embedding-fallback:{embedder.name}"
        # Agents rerank the same chunks again and again: window vectors are kept, most recent last.
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        windows_per_passage = [self._window_texts(passage) for passage in passages]
        all_windows = [window for windows in windows_per_passage for window in windows]
        query_vector, window_vectors = self._vectors(query, all_windows)
        similarities = np.array([window_vectors[w] @ query_vector for w in all_windows])

        scores = []
        begin = 0
        for windows in windows_per_passage:
            passage_similarities = similarities[begin : begin + len(windows)]
            begin += len(windows)
            scores.append(window_score(passage_similarities, self._mean_weight))
        return scores

    def _vectors(self, query: str, windows: Sequence[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The query's vector and every window's: cached windows reused, the rest embedded in one call."""
        with self._lock:
            known = {w: self._cache[w] for w in set(windows) if w in self._cache}
            for window in known:
                self._cache.move_to_end(window)
        missing = list(dict.fromkeys(w for w in windows if w not in known))
        vectors = self._embedder.embed([query, *missing])
        fresh = dict(zip(missing, vectors[1:]))
        with self._lock:
            self._cache.update(fresh)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vectors[0], {**known, **fresh}

    def _window_texts(self, passage: str) -> list[str]:
        halves = self._embedder.windows(passage, max_tokens=self._half_window_tokens)
        if not halves:
            return [passage]
        if len(halves) == 1:
            spans = halves
        else:
            spans = [(halves[i][0], halves[i + 1][1]) for i in range(len(halves) - 1)]
        return [passage[start:end] for start, end in spans]
