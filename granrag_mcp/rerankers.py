"""Rerankers: score (query, passage) pairs, higher meaning more relevant.

A real cross-encoder, loaded from local files only, and two embedding-similarity fallbacks for when no
cross-encoder weights are available offline: `SentenceWindowReranker` (the default fallback: windows pooled from
the sentence vectors already in the index, no model work per passage) and `EmbeddingReranker` (embeds each
passage's windows). Nothing is loaded at import time.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.errors import ModelLoadError
from granrag_mcp.settings import DEFAULT_CROSS_ENCODER, offline_models

log = logging.getLogger(__name__)


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


def _local_location(model: str) -> str:
    path = Path(model).expanduser()
    return str(path) if path.exists() else model


def stored_locally(model: str) -> bool:
    """Whether `model` is a local path or a model whose config is in the local Hugging Face cache."""
    if Path(model).expanduser().exists():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # not a valid repo id, or no cache at all
        return False


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder, by local path or by a name already in the HF cache.

    The model reads query and passage together, up to its maximum sequence length
    (`max_length`, usually 512 word pieces); anything beyond is truncated. That is the
    accepted trade-off of a cross-encoder: passages reaching this stage are chunk-sized,
    and the first few hundred word pieces carry most of the signal.

    Scores are the model's raw logits (no sigmoid), so strong matches do not saturate into ties.
    """

    reads_sentence_vectors = False

    def __init__(self, model: str, batch_size: int = 32, device: str = "cpu") -> None:
        offline_models()
        try:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(_local_location(model), device=device, local_files_only=True)
        except Exception as exc:  # the libraries raise many types for a missing or broken model
            raise ModelLoadError(
                f"cross-encoder model {model!r} was not found locally or could not be loaded "
                f"({type(exc).__name__}: {_one_line(exc)}); no download happens at run time: give the path of a local "
                "model directory, or pre-populate the Hugging Face cache with it on a machine with network "
                "access, or use the embedding reranker"
            ) from exc
        if self._model.num_labels != 1:
            raise ModelLoadError(
                f"cross-encoder model {model!r} has {self._model.num_labels} output labels; "
                "a reranker needs a model with a single relevance score"
            )
        self.name = f"cross-encoder:{model}"
        self.batch_size = batch_size
        self.max_length = self._model.max_seq_length
        # `predict` sets padding and truncation on the model's one Hugging Face fast tokenizer, which two threads
        # must not use at once; tool calls score from several threads, so the reranker lets one in at a time.
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        import torch

        with self._lock:
            logits = self._model.predict(
                [(query, passage) for passage in passages],
                batch_size=self.batch_size,
                activation_fn=torch.nn.Identity(),
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return [float(value) for value in np.asarray(logits, dtype=np.float64).reshape(len(passages))]


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

    def score_sentences(self, query_vector: np.ndarray, passages: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[float]:
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


def load_reranker(spec: str, embedder: Embedder, cross_encoder_model: str = DEFAULT_CROSS_ENCODER) -> Reranker:
    """Build the reranker a setting asks for.

    "auto": the cross-encoder if its weights are available locally, else the sentence-window fallback
    (with a warning). "embedding": the sentence-window fallback. "embedding-windows": the fallback that embeds
    each passage's windows. "cross-encoder": `cross_encoder_model`, failing
    if it cannot be loaded. Anything else: a cross-encoder name or local path.
    """
    if spec == "embedding":
        return SentenceWindowReranker(embedder)
    if spec == "embedding-windows":
        return EmbeddingReranker(embedder)
    if spec == "cross-encoder":
        return CrossEncoderReranker(cross_encoder_model)
    if spec == "auto":
        try:
            if not stored_locally(cross_encoder_model):  # importing sentence-transformers only to fail costs seconds
                raise ModelLoadError(f"{cross_encoder_model!r} is neither a local path nor in the Hugging Face cache")
            return CrossEncoderReranker(cross_encoder_model)
        except ModelLoadError as exc:
            log.warning(
                "cross-encoder %r is not available locally; reranking with the embedding fallback (%s)",
                cross_encoder_model,
                embedder.name,
            )
            log.debug("cross-encoder load failure: %s", exc)
            return SentenceWindowReranker(embedder)
    return CrossEncoderReranker(spec)
