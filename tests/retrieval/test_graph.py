"""Helpers of the graph techniques that need no graph."""

from __future__ import annotations

import numpy as np
import pytest

from granrag_mcp.retrieval.graph import best_first


@pytest.mark.parametrize("k", [1, 3, 10, 40, 60])
def test_best_first_is_a_stable_sorts_first_k(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(50):
        scores = rng.integers(0, 6, 40).astype(np.float64)  # many ties, one at the k-th place
        assert best_first(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist()
