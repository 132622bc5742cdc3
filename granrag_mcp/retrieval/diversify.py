"""Diverse results: a ranked candidate list cut down to k hits that say different things.

- ``mmr``: maximal marginal relevance. Each pick maximises ``lambda * relevance - (1 - lambda) * redundancy``,
  where relevance is the technique's own score scaled to 0..1 over the candidates (so it works alike for cosine,
  BM25 and fused scores, and lambda = 1 keeps the technique's order) and redundancy is the highest cosine of the
  candidate's stored vector to the hits already picked.
- ``kmeans``: the candidates' stored vectors in at most `MAX_CLUSTERS` clusters (FAISS k-means, spherical); each
  cluster is represented by its best-ranked member, which lists the other members so they can still be opened.

Either way, a returned hit that lies inside another returned hit (a sentence inside a returned mid chunk) is folded
into it: the container keeps the better of the two positions and lists the folded ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.retrieval.spans import inside
from granrag_mcp.retrieval.view import ScoredChunk, View

Diversify = Literal["none", "mmr", "kmeans"]
DIVERSIFY_METHODS: tuple[str, ...] = get_args(Diversify)
DEFAULT_MMR_LAMBDA = 0.5
MAX_CLUSTERS = 5
KMEANS_ITERATIONS = 20
KMEANS_SEED = 1234  # fixed, so one query over one generation always clusters alike


def candidate_depth(k: int, method: str, exclude_seen: bool = False) -> int:
    """How many candidates to fetch so that diversifying (and dropping seen ids) still leaves k hits."""
    if method == "none" and not exclude_seen:
        return k
    return min(max(3 * k, 30), 100)


def check_lambda(value: float) -> float:
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise InvalidInputError(
            f"mmr_lambda must lie between 0 and 1 (got {value!r}): 1 ranks by relevance only, 0 by novelty only"
        )
    return float(value)


def stored_vectors(view: View, hits: Sequence[ScoredChunk]) -> np.ndarray:
    """The unit vectors the index holds for the hits, in their order (hits of any levels)."""
    out = np.zeros((len(hits), view.embedder.dimension), dtype=np.float32)
    by_level: dict[str, list[int]] = {}
    for row, hit in enumerate(hits):
        by_level.setdefault(hit.chunk.level, []).append(row)
    for level, rows in by_level.items():
        ids = np.array([hits[row].chunk.id for row in rows], dtype=np.int64)
        out[rows] = view.snapshot.vectors[level].reconstruct(ids)  # type: ignore[index]
    return out


def relevance(hits: Sequence[ScoredChunk]) -> np.ndarray:
    """The technique's scores scaled to 0..1 (best 1); by rank where scores are missing or all equal."""
    scores = np.array([h.score if h.score is not None else np.nan for h in hits], dtype=np.float64)
    if len(hits) and not np.isnan(scores).any() and scores.max() > scores.min():
        return (scores - scores.min()) / (scores.max() - scores.min())
    return 1.0 - np.arange(len(hits), dtype=np.float64) / max(len(hits), 1)


def mmr_order(relevant: np.ndarray, vectors: np.ndarray, k: int, mmr_lambda: float) -> list[int]:
    """Rows picked by maximal marginal relevance, in the order picked."""
    n = len(relevant)
    if n == 0:
        return []
    similarity = vectors @ vectors.T
    picked: list[int] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    while len(picked) < min(k, n):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        value = mmr_lambda * relevant - (1.0 - mmr_lambda) * penalty
        value[~available] = -np.inf
        row = int(np.argmax(value))  # ties go to the better-ranked candidate
        picked.append(row)
        available[row] = False
        redundancy = np.maximum(redundancy, similarity[row])
    return picked


def kmeans_labels(vectors: np.ndarray, n_clusters: int) -> np.ndarray:
    """A cluster label per row (spherical k-means, fixed seed)."""
    if n_clusters <= 1:
        return np.zeros(len(vectors), dtype=np.int64)
    import faiss  # here, not at the top: the MCP server imports this module before its handshake

    kmeans = faiss.Kmeans(
        vectors.shape[1],
        n_clusters,
        niter=KMEANS_ITERATIONS,
        seed=KMEANS_SEED,
        spherical=True,
        verbose=False,
        min_points_per_centroid=1,
    )
    kmeans.train(np.ascontiguousarray(vectors, dtype=np.float32))
    _, labels = kmeans.index.search(np.ascontiguousarray(vectors, dtype=np.float32), 1)
    return labels[:, 0].astype(np.int64)


def cluster_representatives(hits: Sequence[ScoredChunk], labels: np.ndarray) -> list[ScoredChunk]:
    """The best-ranked hit of each cluster, in rank order, each listing its cluster's other members."""
    members: dict[int, list[int]] = {}
    for row, label in enumerate(labels):
        members.setdefault(int(label), []).append(row)
    out = []
    for rows in sorted(members.values(), key=lambda rows: rows[0]):
        head = hits[rows[0]]
        head.cluster = [hits[row].chunk.public_id for row in rows[1:]]
        out.append(head)
    return out


def fold_nested(hits: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """Fold a hit lying inside another hit of the list into it; the container takes the better position."""
    out: list[ScoredChunk] = []
    for hit in hits:
        container = next((h for h in out if h.chunk.id != hit.chunk.id and inside(hit.chunk, h.chunk)), None)
        if container is not None:
            container.folded.append(hit.chunk.public_id)
            continue
        contained = [i for i, h in enumerate(out) if inside(h.chunk, hit.chunk)]
        if contained:
            hit.folded.extend(out[i].chunk.public_id for i in contained)
            position = contained[0]
            out = [h for i, h in enumerate(out) if i not in contained]
            out.insert(position, hit)
        else:
            out.append(hit)
    return out


def diversify(
    view: View,
    hits: Sequence[ScoredChunk],
    k: int,
    method: str = "none",
    mmr_lambda: float = DEFAULT_MMR_LAMBDA,
) -> list[ScoredChunk]:
    """At most k hits out of ranked candidates, by `method` (none, mmr, kmeans), nested hits folded."""
    if method not in DIVERSIFY_METHODS:
        raise InvalidInputError(f"unknown diversify method {method!r}; use {', '.join(DIVERSIFY_METHODS)}")
    mmr_lambda = check_lambda(mmr_lambda)
    hits = list(hits)
    if method == "none" or len(hits) <= 1:
        return fold_nested(hits)[:k]
    vectors = stored_vectors(view, hits)
    if method == "mmr":
        chosen = [hits[row] for row in mmr_order(relevance(hits), vectors, k, mmr_lambda)]
    else:
        chosen = cluster_representatives(hits, kmeans_labels(vectors, min(MAX_CLUSTERS, k, len(hits))))
    return fold_nested(chosen)[:k]
