"""The graph's vector searches give a flat index's answer: the refined index of coarse codes its rows and scores,
the all-rows product its scores."""

from __future__ import annotations

import faiss
import numpy as np

from granrag_mcp.retrieval.graph_vectors import FLAT_BELOW, inner_products, nearest, refined_index


def _unit(rows: int, dimension: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _embedding_like(rows: int, dimension: int, seed: int) -> np.ndarray:
    """Unit vectors whose variance lies mostly in a few directions, as text embeddings' does."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows, 12)) @ rng.standard_normal((12, dimension))
    vectors += 0.3 * rng.standard_normal((rows, dimension))
    vectors = vectors.astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_refined_index_answers_as_the_flat_index() -> None:
    everything = _embedding_like(FLAT_BELOW + 1050, 64, 0)
    vectors, queries = everything[:-50], everything[-50:]
    flat = faiss.IndexFlatIP(64)
    flat.add(vectors)
    refined = refined_index(vectors)
    assert isinstance(refined, faiss.IndexRefineFlat)  # the coarse codes, not a flat scan
    for query in queries:
        for k in (1, 5, 50):
            rows, scores = nearest(refined, query, k)
            expected_rows, expected_scores = nearest(flat, query, k)
            assert rows.tolist() == expected_rows.tolist()
            assert np.allclose(scores, expected_scores, atol=1e-6)


def test_nearest_in_an_empty_or_small_index() -> None:
    assert [len(x) for x in nearest(refined_index(np.zeros((0, 8), np.float32)), np.ones(8), 5)] == [0, 0]
    rows, _ = nearest(refined_index(_unit(3, 8, 2)), _unit(1, 8, 3)[0], 10)
    assert sorted(rows.tolist()) == [0, 1, 2]


def test_inner_products_with_every_row() -> None:
    matrix, vector = _unit(777, 32, 4), _unit(1, 32, 5)[0]
    assert np.allclose(inner_products(matrix, vector), matrix @ vector, atol=1e-6)
