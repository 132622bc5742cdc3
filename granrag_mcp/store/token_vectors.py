"""The sentences' token vectors, for late interaction (MaxSim) in the candidate ranker: optional, one per store.

For each narrow chunk (sentence) the model's output token vectors ([CLS], [SEP] and padding dropped) come from
the forward that embeds the sentence, are projected to fewer dimensions and stored as int8. Cosine ignores a
vector's length, so each token is scaled to use the whole int8 range and no scale is kept: a reader normalises
the rows it reads. The arrays are plain .npy files like the BM25 index's (store/lexical.py), memory-mapped:

    narrow.tokens.ids.npy         int64, the sentences' chunk ids, ascending
    narrow.tokens.offsets.npy     int64, len(ids) + 1: sentence i owns rows offsets[i]:offsets[i + 1]
    narrow.tokens.data.npy        int8, one row of `dims` per token
    narrow.tokens.projection.npy  float32, model dimension x dims

The projection is fixed for the life of a store (carried from generation to generation, so old and new rows
stay comparable). For the bundled model it is the first `dims` principal directions of MiniLM's output token
space, fitted once offline on text other than the evaluation set and shipped beside the embedder
(embedding/minilm_token_basis.npy): on SQuAD-A, MaxSim at 128 of them ranks sentences as well as the full 384
dimensions, where a random projection loses 0.013 MRR (docs/candidate-ranker.md). A basis fitted at index time
would need the full-width token states of a whole first run in memory; the shipped one needs nothing. Another
model gets a seeded random orthonormal projection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

PREFIX = "narrow.tokens"
ARRAYS = ("ids", "offsets", "data", "projection")
PROJECTION_SEED = 20


def token_files(folder: Path) -> list[Path]:
    """The files of a generation's token vectors, in the order of `ARRAYS`."""
    return [folder / f"{PREFIX}.{name}.npy" for name in ARRAYS]


SHIPPED_BASIS = "minilm_token_basis.npy"
"""Principal directions of the bundled model's output token vectors (model dimension x model dimension, float16,
best first), in granrag_mcp/embedding."""


def projection_for(model_dimension: int, dims: int, model: str | None = None) -> np.ndarray:
    """The orthonormal projection from the model's dimension to `dims` (at most the model's): the shipped
    principal directions for the bundled model, else a seeded random basis."""
    from granrag_mcp.settings import DEFAULT_MODEL

    if not 1 <= dims <= model_dimension:
        raise ValueError(f"token vector dimensions must be between 1 and the model's {model_dimension}, not {dims}")
    if dims == model_dimension:
        return np.eye(model_dimension, dtype=np.float32)
    if model == DEFAULT_MODEL:
        with resources.files("granrag_mcp.embedding").joinpath(SHIPPED_BASIS).open("rb") as handle:
            shipped = np.load(handle, allow_pickle=False)
        if shipped.shape[0] == model_dimension:
            start = shipped[:, :dims].astype(np.float64)
        else:  # not the bundled model's width after all: fall back to a random basis
            start = np.random.default_rng(PROJECTION_SEED).standard_normal((model_dimension, dims))
    else:
        start = np.random.default_rng(PROJECTION_SEED).standard_normal((model_dimension, dims))
    basis, triangle = np.linalg.qr(start)  # exactly orthonormal (the shipped float16 columns nearly are)
    return (basis * np.sign(np.diag(triangle))).astype(np.float32)  # same directions, not flipped


def quantise(tokens: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """One text's float token vectors, projected and scaled per row to int8 (each row's largest part is +-127)."""
    projected = np.asarray(tokens, dtype=np.float32) @ projection
    peak = np.abs(projected).max(axis=1, keepdims=True)
    return np.round(projected * (127.0 / np.maximum(peak, 1e-12))).astype(np.int8)


def unit_rows(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


@dataclass
class TokenVectors:
    ids: np.ndarray
    offsets: np.ndarray
    data: np.ndarray
    projection: np.ndarray

    @property
    def dims(self) -> int:
        return int(self.projection.shape[1])

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls, projection: np.ndarray) -> TokenVectors:
        return cls(
            np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, projection.shape[1]), np.int8), projection
        )

    def rows(self, chunk_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(the stored int8 token rows of the given sentences, stacked; the number of rows of each). A sentence
        without token vectors has none."""
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        places = np.searchsorted(self.ids, wanted)
        found = (places < len(self.ids)) & (self.ids[np.minimum(places, len(self.ids) - 1)] == wanted)
        places = places[found]
        counts = np.zeros(len(wanted), dtype=np.int64)
        counts[found] = self.offsets[places + 1] - self.offsets[places]
        total = int(counts.sum())
        if not total:
            return np.zeros((0, self.dims), np.int8), counts
        # One gather: each sentence's rows are offsets[p] onwards, so row j of the result is j plus its shift.
        shift = self.offsets[places] - np.concatenate([[0], np.cumsum(counts[found])[:-1]])
        return self.data[np.arange(total) + np.repeat(shift, counts[found])], counts

    def project_query(self, tokens: np.ndarray) -> np.ndarray:
        """A query's float token vectors in the stored space, unit rows (not quantised: no need to)."""
        return unit_rows(np.asarray(tokens, dtype=np.float32) @ self.projection)

    def updated(self, remove: Sequence[int], add_ids: Sequence[int], add_rows: Sequence[np.ndarray]) -> TokenVectors:
        """These vectors without the sentences `remove`, with `add_rows` (int8, one array per id) added."""
        keep = ~np.isin(self.ids, np.asarray(remove, dtype=np.int64))
        lengths = np.diff(self.offsets)
        kept_data = self.data[np.repeat(keep, lengths)] if len(self.data) else self.data
        new_ids = np.asarray(add_ids, dtype=np.int64)
        ids = np.concatenate([self.ids[keep], new_ids])
        all_lengths = np.concatenate([lengths[keep], [len(r) for r in add_rows]]).astype(np.int64)
        data = np.concatenate([kept_data, *[np.asarray(r, np.int8).reshape(-1, self.dims) for r in add_rows]])
        starts = np.concatenate([[0], np.cumsum(all_lengths)])
        order = np.argsort(ids, kind="stable")
        if np.any(order != np.arange(len(ids))):  # new ids are always larger; sorted only if a caller mixed them
            data = np.concatenate([data[starts[i] : starts[i + 1]] for i in order]) if len(order) else data
            ids, all_lengths = ids[order], all_lengths[order]
            starts = np.concatenate([[0], np.cumsum(all_lengths)])
        return TokenVectors(ids, starts.astype(np.int64), data, self.projection)

    def write(self, folder: Path) -> None:
        for name, target in zip(ARRAYS, token_files(folder)):
            with open(target, "wb") as handle:
                np.save(handle, np.ascontiguousarray(getattr(self, name)), allow_pickle=False)

    @classmethod
    def read(cls, folder: Path) -> TokenVectors | None:
        """The generation's token vectors, memory-mapped; None when it has none."""
        files = token_files(folder)
        if not files[0].is_file():
            return None
        ids, offsets, data, projection = (np.load(f, mmap_mode="r", allow_pickle=False) for f in files)
        # A plain ndarray over the map: np.memmap pays on every slice.
        return cls(*(a.view(np.ndarray) for a in (ids, offsets, data, projection)))

    def bytes_per_sentence(self) -> float:
        total = sum(a.nbytes for a in (self.ids, self.offsets, self.data))
        return total / max(len(self.ids), 1)


def maxsim(query: np.ndarray, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For each sentence (its `counts[i]` rows in turn), the mean over the query's token rows of the best cosine
    against the sentence's rows; -1 for a sentence without rows. `query`: unit rows; `rows`: stored (int8) or
    float rows of any length.

    The product runs in torch, on the thread count the server set, since numpy's BLAS would spread a product this
    small over all its threads."""
    import torch

    out = np.full(len(counts), -1.0, dtype=np.float64)
    if not len(rows) or not len(query):
        return out
    stored = torch.from_numpy(np.ascontiguousarray(rows)).float()
    lengths = torch.linalg.vector_norm(stored, dim=1).clamp_min(1e-12)
    similarity = (stored @ torch.from_numpy(np.ascontiguousarray(query, dtype=np.float32)).T) / lengths[:, None]
    present = np.flatnonzero(counts > 0)
    starts = np.concatenate([[0], np.cumsum(counts[present])[:-1]])
    best = np.maximum.reduceat(similarity.numpy(), starts, axis=0)  # present sentences x query tokens
    out[present] = best.mean(axis=1)
    return out
