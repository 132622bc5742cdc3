"""Pseudo-relevance feedback in vector space (Rocchio): a query vector moved toward the mean of the vectors of its
own first hits, then searched with again.

A question in another language than the text lies further from every passage than a question in the text's own
language does (a small multilingual model aligns languages only roughly), while the passages that answer it lie
close to one another. The mean of its first hits is a vector in the text's own language about the question's
topic, and adding it to the question's vector carries the question part of the way across the language gap.
The hits are paragraph-sized chunks, not sentences: the mean of a few sentences is about whatever those sentences
happen to say and pulls the question off its topic (docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from granrag_mcp.levels import Level
from granrag_mcp.retrieval.view import View


@dataclass(frozen=True)
class Feedback:
    """Which first hits move the query and how far: `hits` chunks of `level`, their mean added with `weight` to
    the query's vector (both unit length) before the sum is made unit length again."""

    level: Level
    hits: int
    weight: float

    def __post_init__(self) -> None:
        if self.hits < 1 or self.weight < 0:
            raise ValueError(f"feedback needs hits >= 1 and weight >= 0, got {self.hits} and {self.weight}")


def moved_query(view: View, vector: np.ndarray, feedback: Feedback) -> np.ndarray:
    """`vector` moved toward the mean of its first `feedback.hits` hits at `feedback.level` among the chunks the
    view searches (`vector` itself when there are none)."""
    vector = np.asarray(vector, dtype=np.float32)
    found = view.dense(feedback.level, vector, feedback.hits)
    if not found or feedback.weight == 0:
        return vector
    hits = view.snapshot.vectors[feedback.level].reconstruct(np.array([chunk_id for chunk_id, _ in found]))
    centroid = np.asarray(hits, dtype=np.float32).mean(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
    moved = vector + feedback.weight * centroid
    return moved / max(float(np.linalg.norm(moved)), 1e-12)
