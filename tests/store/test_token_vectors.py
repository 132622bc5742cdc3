"""Token vectors: quantising, MaxSim, incremental updates, and the index runs that keep them in a store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.errors import InvalidInputError, StoreMismatchError
from granrag_mcp.indexing.removal import remove_documents
from granrag_mcp.store.store import Snapshot
from granrag_mcp.store.token_vectors import TokenVectors, maxsim, projection_for, quantise, token_files, unit_rows
from tests.fakes import FakeEmbedder, FakeTokenEmbedder
from tests.helpers import SMALL_CHUNKS, index, write_corpus


def test_projection_is_orthonormal_and_fixed() -> None:
    p = projection_for(64, 16)
    assert p.shape == (64, 16)
    np.testing.assert_allclose(p.T @ p, np.eye(16), atol=1e-5)
    np.testing.assert_array_equal(p, projection_for(64, 16))  # seeded: the same for every run of a store
    with pytest.raises(ValueError):
        projection_for(64, 65)


def test_the_bundled_model_projects_on_its_shipped_principal_directions() -> None:
    from importlib import resources

    from granrag_mcp.settings import DEFAULT_MODEL

    with resources.files("granrag_mcp.embedding").joinpath("minilm_token_basis.npy").open("rb") as handle:
        shipped = np.load(handle).astype(np.float32)
    p = projection_for(384, 96, DEFAULT_MODEL)
    np.testing.assert_allclose(p.T @ p, np.eye(96), atol=1e-5)
    # The same directions as shipped (float16, re-orthonormalised), not a random basis.
    assert np.abs(np.sum(p * shipped[:, :96], axis=0)).min() > 0.99
    assert np.abs(np.sum(projection_for(384, 96) * shipped[:, :96], axis=0)).max() < 0.5


def test_quantised_rows_keep_their_direction() -> None:
    rng = np.random.default_rng(0)
    tokens = rng.standard_normal((7, 48)).astype(np.float32)
    stored = quantise(tokens, np.eye(48, dtype=np.float32))
    assert stored.dtype == np.int8 and np.abs(stored).max() == 127
    cosines = np.sum(unit_rows(stored) * unit_rows(tokens), axis=1)
    assert cosines.min() > 0.999


def test_maxsim_is_the_mean_of_each_query_tokens_best_cosine() -> None:
    query = unit_rows(np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    rows = unit_rows(np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 0]], dtype=np.float32))
    scores = maxsim(query, rows, np.array([2, 0, 2]))
    # Stored rows need not be unit length (int8 rows are not): the cosine is the same.
    np.testing.assert_allclose(maxsim(query, rows * 50, np.array([2, 0, 2])), scores, atol=1e-6)
    # sentence 0: token 0's best is 1, token 1's is 0; sentence 2: token 0's best is cos 45 degrees, token 1's 1
    np.testing.assert_allclose(scores, [0.5, -1.0, (0.5**0.5 + 1) / 2], atol=1e-6)


def test_updates_remove_and_add_sentences(tmp_path: Path) -> None:
    projection = np.eye(4, dtype=np.float32)
    a = np.array([[127, 0, 0, 0]], np.int8)
    b = np.array([[0, 127, 0, 0], [0, 0, 127, 0]], np.int8)
    c = np.array([[0, 0, 0, 127]], np.int8)
    first = TokenVectors.empty(projection).updated([], [3, 5], [a, b])
    second = first.updated([3], [9], [c])
    second.write(tmp_path)
    read = TokenVectors.read(tmp_path)
    assert read is not None
    assert read.ids.tolist() == [5, 9] and read.offsets.tolist() == [0, 2, 3]
    rows, counts = read.rows([9, 3, 5])
    assert counts.tolist() == [1, 0, 2]
    np.testing.assert_array_equal(rows.argmax(axis=1), [3, 1, 2])
    assert TokenVectors.read(tmp_path / "absent") is None


def _store_tokens(store: Path) -> TokenVectors:
    snapshot = Snapshot.open(store)
    try:
        tokens = snapshot.token_vectors
        assert tokens is not None
        return TokenVectors(*(np.array(a) for a in (tokens.ids, tokens.offsets, tokens.data, tokens.projection)))
    finally:
        snapshot.close()


@pytest.mark.parametrize("chunker", ["semantic", "fixed"])
def test_an_index_run_stores_each_sentences_token_vectors(tmp_path: Path, chunker: str) -> None:
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    embedder = FakeTokenEmbedder()
    index([docs], store, embedder, SMALL_CHUNKS.model_copy(update={"chunker": chunker}), token_vector_dims=32)
    snapshot = Snapshot.open(store)
    try:
        narrow = snapshot.catalog.chunks_of_level("narrow")
        tokens = snapshot.token_vectors
        assert tokens is not None and tokens.dims == 32
        assert snapshot.manifest.identity.token_vector_dims == 32
        assert tokens.ids.tolist() == sorted(c.id for c in narrow)
        for name in (f.name for f in token_files(snapshot.folder)):
            assert name in snapshot.manifest.files  # checksummed like every index file
        # Each sentence's rows are its words' token vectors, projected: the same as projecting them again.
        chunk = narrow[3]
        rows, counts = tokens.rows([chunk.id])
        expected = quantise(embedder._tokens(chunk.text), tokens.projection)
        np.testing.assert_array_equal(rows, expected)
        assert counts.tolist() == [len(expected)]
    finally:
        snapshot.close()
    # Indexing computed the token vectors in the forwards that embedded the sentences, never apart from them.
    assert embedder.token_forwards >= 1


def test_a_store_without_token_vectors_has_none(tmp_path: Path) -> None:
    store = tmp_path / "store"
    index([write_corpus(tmp_path / "docs")], store, FakeTokenEmbedder())
    snapshot = Snapshot.open(store)
    try:
        assert snapshot.token_vectors is None and snapshot.manifest.identity.token_vector_dims == 0
        assert not any(name.startswith("narrow.tokens") for name in snapshot.manifest.files)
    finally:
        snapshot.close()


def test_incremental_runs_and_removals_keep_the_token_vectors_in_step(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index([docs], store, FakeTokenEmbedder(), token_vector_dims=32)
    first = _store_tokens(store)
    (docs / "new.txt").write_text("Lighthouses guide ships. Keepers trimmed the wicks at night.\n", encoding="utf-8")
    # A later run that does not ask for token vectors still keeps them for the store's new documents.
    index([docs], store, FakeTokenEmbedder())
    second = _store_tokens(store)
    np.testing.assert_array_equal(second.projection, first.projection)
    snapshot = Snapshot.open(store)
    try:
        narrow = snapshot.catalog.chunks_of_level("narrow")
        new_ids = [c.id for c in narrow if c.doc_id == "new.txt"]
    finally:
        snapshot.close()
    assert second.ids.tolist() == sorted(c.id for c in narrow) and new_ids
    assert set(first.ids.tolist()) < set(second.ids.tolist())

    remove_documents(["new.txt"], store)
    third = _store_tokens(store)
    assert third.ids.tolist() == first.ids.tolist()
    np.testing.assert_array_equal(third.data, first.data)


def test_other_token_vector_dimensions_need_a_rebuild(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index([docs], store, FakeTokenEmbedder(), token_vector_dims=32)
    (docs / "new.txt").write_text("Another document about tides.\n", encoding="utf-8")
    with pytest.raises(StoreMismatchError, match="token_vector_dims"):
        index([docs], store, FakeTokenEmbedder(), token_vector_dims=16)
    index([docs], store, FakeTokenEmbedder(), token_vector_dims=16, rebuild=True)
    assert _store_tokens(store).dims == 16


def test_an_embedder_without_token_vectors_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no token vectors"):
        index([write_corpus(tmp_path / "docs")], tmp_path / "store", FakeEmbedder(), token_vector_dims=32)


def test_the_ray_engine_refuses_token_vectors_with_what_to_do(tmp_path: Path) -> None:
    from granrag_mcp.engine import run_index
    from granrag_mcp.settings import Settings

    settings = Settings(store=tmp_path / "store", chunker="fixed", token_vectors=True)
    with pytest.raises(InvalidInputError, match="--engine local"):
        run_index([write_corpus(tmp_path / "docs")], settings, engine="ray", embedder=FakeTokenEmbedder())


def test_a_ray_run_on_a_store_that_keeps_token_vectors_is_refused(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index([docs], store, FakeTokenEmbedder(), token_vector_dims=32)
    (docs / "new.txt").write_text("Another document about tides.\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="Ray engine"):
        index([docs], store, FakeTokenEmbedder(), parallel=object())


def test_index_flags_ask_for_token_vectors_and_their_dimensions(monkeypatch) -> None:
    from granrag_mcp.cli import build_parser as parser
    from granrag_mcp.cli import load_settings

    monkeypatch.delenv("GRANRAG_TOKEN_VECTORS", raising=False)
    plain = load_settings(parser().parse_args(["index", "docs"]))
    assert not plain.token_vectors and plain.token_vector_dims == 96
    asked = load_settings(parser().parse_args(["index", "docs", "--token-vectors", "--token-vector-dims", "64"]))
    assert asked.token_vectors and asked.token_vector_dims == 64
    monkeypatch.setenv("GRANRAG_TOKEN_VECTORS", "1")
    assert load_settings(parser().parse_args(["index", "docs"])).token_vectors
