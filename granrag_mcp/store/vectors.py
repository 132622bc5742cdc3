"""One FAISS index per level: inner product on normalised vectors, keyed by stable int64 chunk ids."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np


class VectorIndex:
    def __init__(self, index: faiss.Index) -> None:
        self._index = index

    @classmethod
    def empty(cls, dimension: int) -> VectorIndex:
        return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dimension)))

    @classmethod
    def read(cls, path: Path) -> VectorIndex:
        """Only call on a file whose checksum was verified: FAISS does not defend against corrupt bytes."""
        return cls(faiss.read_index(str(path)))

    def write(self, path: Path) -> None:
        faiss.write_index(self._index, str(path))

    @property
    def dimension(self) -> int:
        return int(self._index.d)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids):
            self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray) -> int:
        if not len(ids):
            return 0
        return int(self._index.remove_ids(np.asarray(ids, dtype=np.int64)))

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        k = min(k, len(self))
        if k <= 0:
            return []
        scores, labels = self._index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), k)
        return [(int(label), float(score)) for label, score in zip(labels[0], scores[0]) if label != -1]

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        return np.stack([self._index.reconstruct(int(i)) for i in ids]) if len(ids) else np.zeros((0, self.dimension))
