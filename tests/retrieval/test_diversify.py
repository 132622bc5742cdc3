"""Diversified results: MMR and k-means over a store with near-duplicate documents, nested hits folded."""

from __future__ import annotations

import numpy as np
import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.diversify import (
    MAX_CLUSTERS,
    candidate_depth,
    diversify,
    fold_nested,
    kmeans_labels,
    mmr_order,
    relevance,
)
from granrag_mcp.retrieval.level_search import search_level
from granrag_mcp.retrieval.union import search_union
from granrag_mcp.retrieval.view import ScoredChunk, View
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus

PUMP = "The harbour pump lifts seawater into the dry dock basin every morning."
COPIES = {f"copy{i}.md": f"{PUMP} Dock crews check it daily. Copy number {i} of the pump note." for i in range(6)}
OTHERS = {
    "valves.md": "The pump valve seals the seawater line when the dock basin drains.",
    "engines.md": "A diesel engine drives the harbour pump during a storm surge.",
    "birds.md": "Gulls nest on the dock roof and steal bread from the crews every morning.",
}


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("diversify")
    docs = write_corpus(root / "docs", {**COPIES, **OTHERS}, repeat=1)
    index(docs, root / "store")
    embedder = FakeEmbedder()
    return View(Snapshot.open(root / "store"), embedder)


def redundant(view: View, hits: list[ScoredChunk], at: float = 0.99) -> int:
    """Hits whose stored vector is (nearly) the same as a better-ranked hit's."""
    from granrag_mcp.retrieval.diversify import stored_vectors

    vectors = stored_vectors(view, hits)
    return sum(1 for i in range(1, len(hits)) if (vectors[:i] @ vectors[i]).max() >= at)


def test_without_diversify_the_copies_fill_the_top(view):
    hits = diversify(view, search_level(view, "harbour pump seawater dock basin", "narrow", 30), 6, "none")
    assert len(hits) == 6
    assert redundant(view, hits) >= 4


def test_mmr_returns_fewer_copies_and_keeps_the_best_hit_first(view):
    candidates = search_level(view, "harbour pump seawater dock basin", "narrow", 30)
    plain = diversify(view, candidates, 6, "none")
    mmr = diversify(view, candidates, 6, "mmr", 0.5)
    assert mmr[0].chunk.id == candidates[0].chunk.id
    assert redundant(view, mmr) < redundant(view, plain)
    copies = lambda hits: sum(h.chunk.doc_id in COPIES for h in hits)  # noqa: E731
    assert copies(mmr) < copies(plain)


def test_mmr_with_lambda_one_keeps_the_techniques_order(view):
    candidates = search_level(view, "harbour pump seawater dock basin", "narrow", 30)
    assert [h.chunk.id for h in diversify(view, candidates, 8, "mmr", 1.0)] == [h.chunk.id for h in candidates[:8]]


def test_kmeans_returns_one_representative_per_cluster_with_its_members(view):
    candidates = search_level(view, "harbour pump seawater dock basin", "narrow", 30)
    hits = diversify(view, list(candidates), 10, "kmeans")
    assert 1 < len(hits) <= MAX_CLUSTERS
    rank = {h.chunk.id: n for n, h in enumerate(candidates)}
    members = [m for h in hits for m in h.cluster]
    # every candidate is either returned or listed once as a member of a returned hit's cluster
    assert sorted(members + [h.chunk.public_id for h in hits]) == sorted(h.chunk.public_id for h in candidates)
    for hit in hits:  # the representative is its cluster's best-ranked member
        by_id = {h.chunk.public_id: h for h in candidates}
        assert all(rank[hit.chunk.id] < rank[by_id[m].chunk.id] for m in hit.cluster)
    assert redundant(view, hits) < redundant(view, candidates[: len(hits)]) or redundant(view, hits) == 0


def test_kmeans_never_makes_more_clusters_than_candidates_or_k(view):
    candidates = search_level(view, "gulls steal bread", "narrow", 3)
    assert len(diversify(view, candidates, 10, "kmeans")) <= 3
    assert len(diversify(view, search_level(view, "pump", "narrow", 30), 2, "kmeans")) <= 2
    assert diversify(view, candidates[:1], 5, "kmeans")[0].chunk.id == candidates[0].chunk.id
    assert diversify(view, [], 5, "kmeans") == []


def test_kmeans_is_repeatable(view):
    candidates = search_level(view, "harbour pump seawater dock basin", "narrow", 30)
    first = [
        (h.chunk.id, tuple(h.cluster))
        for h in diversify(view, [ScoredChunk(c.chunk, c.score) for c in candidates], 5, "kmeans")
    ]
    again = [
        (h.chunk.id, tuple(h.cluster))
        for h in diversify(view, [ScoredChunk(c.chunk, c.score) for c in candidates], 5, "kmeans")
    ]
    assert first == again


def test_a_sentence_inside_a_returned_mid_chunk_is_folded_into_it(view):
    hits = search_union(view, "harbour pump seawater dock basin", 12, fine_level="narrow")
    mid = search_level(view, "harbour pump seawater dock basin", "mid", 3)
    sentences = [
        h
        for h in search_level(view, "harbour pump seawater dock basin", "narrow", 30)
        if h.chunk.parent_id == mid[0].chunk.id
    ]
    assert sentences
    folded = fold_nested([sentences[0], mid[0]])
    assert [h.chunk.id for h in folded] == [mid[0].chunk.id]
    assert folded[0].folded == [sentences[0].chunk.public_id]
    assert hits  # the union itself never returns a fine hit inside a returned broad one
    for a in hits:
        assert not any(
            b is not a
            and b.chunk.doc_id == a.chunk.doc_id
            and b.chunk.start <= a.chunk.start
            and a.chunk.end <= b.chunk.end
            and b.chunk.level != a.chunk.level
            for b in hits
        )


def test_bad_arguments_get_a_clear_error(view):
    candidates = search_level(view, "pump", "narrow", 5)
    with pytest.raises(InvalidInputError, match="between 0 and 1"):
        diversify(view, candidates, 3, "mmr", 1.5)
    with pytest.raises(InvalidInputError, match="unknown diversify method"):
        diversify(view, candidates, 3, "clusters")


def test_pure_parts():
    assert candidate_depth(5, "none") == 5 and candidate_depth(5, "mmr") == 30 and candidate_depth(50, "kmeans") == 100
    assert candidate_depth(5, "none", exclude_seen=True) == 30
    chunk = Chunk(1, "d", "narrow", 0, 0, 1, 1, None, "x")
    assert list(relevance([ScoredChunk(chunk, 3.0), ScoredChunk(chunk, 1.0), ScoredChunk(chunk, 2.0)])) == [
        1.0,
        0.0,
        0.5,
    ]
    assert list(relevance([ScoredChunk(chunk, None), ScoredChunk(chunk, None)])) == [1.0, 0.5]
    same = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    assert mmr_order(np.array([1.0, 0.9, 0.5]), same, 2, 0.5) == [0, 2]  # the copy of the first is passed over
    assert mmr_order(np.array([1.0, 0.9, 0.5]), same, 2, 1.0) == [0, 1]
    labels = kmeans_labels(np.array([[1, 0], [0.99, 0.14], [0, 1], [0.1, 0.99]], dtype=np.float32), 2)
    assert labels[0] == labels[1] and labels[2] == labels[3] and labels[0] != labels[2]
