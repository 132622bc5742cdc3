import numpy as np

from granrag_mcp.embedding import normalise
from granrag_mcp.store.vectors import VectorIndex


def random_vectors(n, d=16, seed=0):
    return normalise(np.random.default_rng(seed).normal(size=(n, d)))


def test_search_returns_ids_not_rows_and_caps_k():
    index = VectorIndex.empty(16)
    vectors = random_vectors(5)
    ids = np.array([100, 205, 3, 4000, 77])
    index.add(ids, vectors)
    hits = index.search(vectors[3], 50)
    assert len(hits) == 5
    assert hits[0][0] == 4000 and abs(hits[0][1] - 1.0) < 1e-5
    assert {chunk_id for chunk_id, _ in hits} == set(ids.tolist())


def test_empty_index_and_zero_k_return_nothing_and_never_minus_one():
    index = VectorIndex.empty(16)
    assert index.search(random_vectors(1)[0], 10) == []
    index.add(np.array([1]), random_vectors(1))
    assert index.search(random_vectors(1, seed=3)[0], 0) == []
    assert all(chunk_id != -1 for chunk_id, _ in index.search(random_vectors(1, seed=3)[0], 10))


def test_remove_then_add_keeps_other_ids_and_round_trips(tmp_path):
    index = VectorIndex.empty(16)
    vectors = random_vectors(6)
    index.add(np.arange(1, 7), vectors)
    assert index.remove(np.array([2, 4])) == 2
    index.add(np.array([42]), random_vectors(1, seed=9))
    index.write(tmp_path / "v.faiss")
    loaded = VectorIndex.read(tmp_path / "v.faiss")
    assert len(loaded) == 5
    assert loaded.search(vectors[4], 1)[0][0] == 5
    assert {i for i, _ in loaded.search(vectors[0], 10)} == {1, 3, 5, 6, 42}
    assert np.allclose(loaded.reconstruct(np.array([6])), vectors[5:6], atol=1e-6)
