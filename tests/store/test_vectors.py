import hashlib
import sys
from pathlib import Path

import faiss
import numpy as np
import pytest

from granrag_mcp.embedding.embedder import normalise
from granrag_mcp.store import vector_index as vectors_module
from granrag_mcp.store.vector_index import VectorIndex


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


# the kind follows the size: flat below the threshold, HNSW from it on (threshold 50 here)

THRESHOLD = 50
IDS = np.arange(1, 201) * 7 + 1000  # sparse int64 ids, like chunk ids
FP16_ATOL = 1e-3  # a graph stores its vectors as float16: relative rounding 2^-11 of components below 1


def grown(n, threshold=THRESHOLD, d=16):
    index = VectorIndex.empty(d, threshold=threshold)
    index.add(IDS[:n], random_vectors(n, d))
    index.settle()
    return index


def ids_of(hits):
    return [chunk_id for chunk_id, _ in hits]


def file_digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_kind_is_chosen_by_size_and_survives_the_file(tmp_path):
    assert grown(THRESHOLD - 1).kind == "flat"
    index = grown(THRESHOLD)
    assert index.kind == "hnsw" and len(index) == THRESHOLD
    index.write(tmp_path / "v.faiss")
    assert VectorIndex.read(tmp_path / "v.faiss", threshold=THRESHOLD).kind == "hnsw"


def test_the_module_threshold_is_the_default(monkeypatch):
    monkeypatch.setattr(vectors_module, "ANN_THRESHOLD", 10)
    index = VectorIndex.empty(16)
    index.add(IDS[:10], random_vectors(10))
    index.settle()
    assert index.kind == "hnsw"


def test_adding_past_the_threshold_converts_once_when_settled(tmp_path):
    index = grown(40)
    index.add(IDS[40:60], random_vectors(60)[40:])
    assert index.kind == "flat"  # adding is cheap; write settles
    index.write(tmp_path / "v.faiss")
    assert index.kind == "hnsw" and len(index) == 60


def test_hnsw_keeps_chunk_ids_and_reconstructs_by_id():
    index = grown(120)
    vectors = random_vectors(120)
    assert index.kind == "hnsw"
    for row in (0, 57, 119):
        assert index.search(vectors[row], 1)[0][0] == IDS[row]
    assert set(ids_of(index.search(vectors[3], 500))) == set(IDS[:120].tolist())  # k above efSearch and size
    assert np.allclose(index.reconstruct(IDS[[5, 80]]), vectors[[5, 80]], atol=FP16_ATOL)
    assert index.reconstruct(np.array([], dtype=np.int64)).shape == (0, 16)


def test_removed_ids_are_never_returned_before_or_after_a_round_trip(tmp_path):
    index = grown(120)
    vectors = random_vectors(120)
    gone = IDS[10:15]
    assert index.remove(np.concatenate([gone, [999_999]])) == 5  # an unknown id is ignored
    assert index.kind == "hnsw" and index.tombstones == 5 and len(index) == 115
    for row in range(10, 15):
        assert not set(ids_of(index.search(vectors[row], 115))) & set(gone.tolist())
    with pytest.raises(RuntimeError):
        index.reconstruct(gone[:1])
    index.write(tmp_path / "v.faiss")
    loaded = VectorIndex.read(tmp_path / "v.faiss", threshold=THRESHOLD)
    assert loaded.tombstones == 5 and len(loaded) == 115
    hits = ids_of(loaded.search(vectors[12], 200))
    assert len(hits) == 115 and not set(hits) & set(gone.tolist())
    assert loaded.search(vectors[20], 1)[0][0] == IDS[20]


def test_many_removals_rebuild_the_graph_from_its_live_vectors(tmp_path):
    index = grown(120)
    vectors = random_vectors(120)
    index.remove(IDS[:20])  # 1/6 of the rows: more than TOMBSTONE_LIMIT
    index.write(tmp_path / "v.faiss")
    assert index.kind == "hnsw" and index.tombstones == 0 and len(index) == 100
    assert np.allclose(index.reconstruct(IDS[[20, 119]]), vectors[[20, 119]], atol=FP16_ATOL)
    assert set(ids_of(index.search(vectors[0], 200))) == set(IDS[20:120].tolist())


def test_shrinking_goes_back_to_flat_only_below_the_gap(tmp_path):
    index = grown(60)
    vectors = random_vectors(60)
    index.remove(IDS[:14])  # 46 left: below the threshold, above 0.9 x 50
    index.settle()
    assert index.kind == "hnsw" and len(index) == 46
    index.remove(IDS[14:20])  # 40 left
    index.write(tmp_path / "v.faiss")
    assert index.kind == "flat" and len(index) == 40 and index.tombstones == 0
    loaded = VectorIndex.read(tmp_path / "v.faiss", threshold=THRESHOLD)
    assert loaded.kind == "flat"
    assert set(ids_of(loaded.search(vectors[0], 100))) == set(IDS[20:60].tolist())
    # the graph kept its vectors as float16, and they come back at that precision
    assert np.allclose(loaded.reconstruct(IDS[[20, 59]]), vectors[[20, 59]], atol=FP16_ATOL)
    loaded.add(IDS[60:75], random_vectors(75)[60:])  # and up again
    loaded.write(tmp_path / "w.faiss")
    assert loaded.kind == "hnsw" and len(loaded) == 55


@pytest.mark.parametrize("n", [30, 120])  # flat and HNSW
def test_read_maps_the_file_and_changes_never_touch_it(tmp_path, n):
    path = tmp_path / "v.faiss"
    grown(n).write(path)
    digest = file_digest(path)
    vectors = random_vectors(n)
    loaded = VectorIndex.read(path, threshold=THRESHOLD)
    if not getattr(faiss, "IO_FLAG_MMAP_IFC", 0):
        pytest.skip("this FAISS cannot memory-map an index")
    assert loaded.mapped
    if sys.platform.startswith("linux"):
        assert str(path) in Path("/proc/self/maps").read_text()
    assert loaded.search(vectors[7], 1)[0][0] == IDS[7]
    with pytest.raises(ValueError):
        loaded.write(path)  # never over the file it maps
    loaded.remove(IDS[:3])
    loaded.add(IDS[150:152], random_vectors(2, seed=5))
    assert not loaded.mapped and len(loaded) == n - 1
    loaded.write(tmp_path / "next.faiss")
    assert file_digest(path) == digest
    assert len(VectorIndex.read(path, threshold=THRESHOLD)) == n
    again = VectorIndex.read(tmp_path / "next.faiss", threshold=THRESHOLD)
    assert len(again) == n - 1 and not set(ids_of(again.search(vectors[1], 200))) & set(IDS[:3].tolist())


def test_read_without_mmap_is_a_private_copy(tmp_path):
    grown(80).write(tmp_path / "v.faiss")
    loaded = VectorIndex.read(tmp_path / "v.faiss", mmap=False, threshold=THRESHOLD)
    assert not loaded.mapped and loaded.kind == "hnsw" and len(loaded) == 80


def clustered(
    d: int, n: int, n_queries: int, n_centres: int, spread: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Normalised vectors and queries drawn around the same random centres."""
    rng = np.random.default_rng(seed)
    centres = normalise(rng.normal(size=(n_centres, d)))

    def draw(count: int) -> np.ndarray:
        return normalise(centres[rng.integers(0, n_centres, count)] + spread * rng.normal(size=(count, d)) / np.sqrt(d))

    return draw(n), draw(n_queries)


def test_hnsw_recall_against_exact_search():
    d, n, k = 32, 3000, 10
    data, queries = clustered(d, n, 100, n_centres=60, spread=0.6, seed=1)
    ids = np.arange(n) * 5 + 11
    approximate = VectorIndex.empty(d, threshold=1000)
    approximate.add(ids, data)
    approximate.settle()
    exact = VectorIndex.empty(d, threshold=n + 1)
    exact.add(ids, data)
    assert (approximate.kind, exact.kind) == ("hnsw", "flat")
    hits = sum(len(set(ids_of(approximate.search(q, k))) & set(ids_of(exact.search(q, k)))) for q in queries)
    assert hits / (len(queries) * k) >= 0.95


def test_negative_ids_are_refused():
    index = VectorIndex.empty(16)
    with pytest.raises(ValueError):
        index.add(np.array([-5]), random_vectors(1))
    with pytest.raises(ValueError):
        index.reconstruct(np.array([-1]))


def test_removing_every_vector_of_a_graph_leaves_an_empty_flat_index(tmp_path):
    index = grown(60)
    assert index.remove(IDS[:60]) == 60
    assert index.search(random_vectors(1)[0], 5) == []
    index.write(tmp_path / "v.faiss")
    loaded = VectorIndex.read(tmp_path / "v.faiss", threshold=THRESHOLD)
    assert (loaded.kind, len(loaded)) == ("flat", 0)
    assert loaded.search(random_vectors(1)[0], 5) == []


# float16 storage inside graphs; flat indices stay float32


def test_flat_keeps_exact_float32_vectors(tmp_path):
    index = grown(THRESHOLD - 1)
    index.write(tmp_path / "v.faiss")
    loaded = VectorIndex.read(tmp_path / "v.faiss", threshold=THRESHOLD)
    assert (loaded.kind, loaded.storage) == ("flat", "fp32")
    assert np.array_equal(loaded.reconstruct(IDS[[0, 48]]), random_vectors(THRESHOLD - 1)[[0, 48]].astype(np.float32))


def test_a_graph_stores_float16_and_finds_what_exact_search_finds(tmp_path):
    d, n, k = 32, 2000, 10
    data, queries = clustered(d, n, 50, n_centres=40, spread=0.5, seed=4)
    ids = np.arange(n) * 3 + 7
    graph = VectorIndex.empty(d, threshold=500)
    graph.add(ids, data)
    graph.write(tmp_path / "g.faiss")
    assert (graph.kind, graph.storage) == ("hnsw", "fp16")
    raw = faiss.read_index(str(tmp_path / "g.faiss"))
    assert isinstance(faiss.downcast_index(raw.index), faiss.IndexHNSWSQ)  # the file itself records the encoding
    loaded = VectorIndex.read(tmp_path / "g.faiss", threshold=500)
    assert (loaded.kind, loaded.storage, len(loaded)) == ("hnsw", "fp16", n)
    exact = VectorIndex.empty(d, threshold=n + 1)
    exact.add(ids, data)
    hits = 0
    for query in queries:
        found, expected = loaded.search(query, k), exact.search(query, k)
        exact_score = dict(exact.search(query, n))
        tenth = expected[-1][1]
        hits += len(set(ids_of(found)) & set(ids_of(expected)))
        for chunk_id, score in found:  # another id only where float16 rounding can swap a near tie
            assert abs(score - exact_score[chunk_id]) < FP16_ATOL
            assert chunk_id in ids_of(expected) or exact_score[chunk_id] > tenth - FP16_ATOL
    assert hits / (len(queries) * k) >= 0.99
    assert np.allclose(loaded.reconstruct(ids[[0, 999]]), data[[0, 999]], atol=FP16_ATOL)


def test_search_threads_hold_faiss_to_the_count_inside_and_restore_it_after_an_error():
    before = faiss.omp_get_max_threads()
    with pytest.raises(RuntimeError), vectors_module.search_threads(1):
        assert faiss.omp_get_max_threads() == 1
        raise RuntimeError("the block failed")
    assert faiss.omp_get_max_threads() == before
