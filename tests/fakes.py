"""A fast, deterministic stand-in for the embedding model, for unit tests of logic."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Hashed bag of words: texts that share words get similar vectors."""

    def __init__(self, dimension: int = 64, max_tokens: int = 32) -> None:
        self.name = "fake-hash-embedder"
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.calls = 0
        self.texts_embedded = 0
        self.texts: list[str] = []  # every text embedded, in order

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
        if not vector.any():
            vector[0] = 1.0
        return vector / np.linalg.norm(vector)

    def embed(self, texts: Sequence[str], progress=None, groups=None) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        self.texts.extend(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.stack([self._vector(t) for t in texts])
        if progress is not None:
            progress(len(texts), len(texts))
        return out

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        limit = max_tokens or self.max_tokens
        words = list(_WORD.finditer(text))
        if not words:
            return [(0, len(text))] if text.strip() else []
        return [(words[i].start(), words[min(i + limit, len(words)) - 1].end()) for i in range(0, len(words), limit)]


class FakeTokenEmbedder(FakeEmbedder):
    """A FakeEmbedder that also gives token vectors: one hashed one-hot row per word, so a word the query shares
    with a sentence scores MaxSim 1. Counts the forwards that computed token vectors."""

    def __init__(self, dimension: int = 64, max_tokens: int = 32) -> None:
        super().__init__(dimension, max_tokens)
        self.token_forwards = 0

    def _tokens(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower()) or [""]
        rows = np.zeros((len(words), self.dimension), dtype=np.float32)
        for i, word in enumerate(words):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            rows[i, int.from_bytes(digest[:4], "little") % self.dimension] = 1.0
        return rows

    def embed_tokens(
        self, texts: Sequence[str], reduce, progress=None, groups=None
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        self.token_forwards += 1
        return self.embed(texts, progress, groups), [reduce(self._tokens(t)) for t in texts]

    def query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        self.token_forwards += 1  # one forward gives both (not counted as an `embed` call)
        return self._vector(text), self._tokens(text)
