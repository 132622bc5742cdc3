"""Document filters inside the search: every technique returns k hits from the chosen documents."""

from __future__ import annotations

import numpy as np
import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import LEVELS
from granrag_mcp.rerankers import EmbeddingReranker
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.hrr import hrr_search
from granrag_mcp.retrieval.level_search import search_level
from granrag_mcp.retrieval.rrf import search_rrf
from granrag_mcp.retrieval.union import search_union
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus

QUERY = "The telescope observed a distant quasar"  # astronomy.md answers it; the other documents rank below


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("filters")
    docs = write_corpus(root / "docs", repeat=6)
    index(docs, root / "store")
    embedder = FakeEmbedder()
    return View(Snapshot.open(root / "store"), embedder, EmbeddingReranker(embedder))


def level_total(view: View, level: str, doc_id: str) -> int:
    return sum(1 for c in view.catalog.chunks_of_level(level) if c.doc_id == doc_id)  # type: ignore[arg-type]


def test_unfiltered_search_ranks_the_other_documents_below(view: View) -> None:
    hits = search_level(view, QUERY, "narrow", 5)
    assert {h.chunk.doc_id for h in hits} == {"astronomy.md"}  # the premise: a cut-down list would be empty


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("lexical", [False, True])
def test_a_filtered_level_search_returns_k_hits_of_the_chosen_document(view: View, level, lexical) -> None:
    chosen = view.filtered(DocFilter.of(["cooking.txt"]))
    k = min(4, level_total(view, level, "cooking.txt"))
    hits = search_level(chosen, "telescope quasar dough", level, k, lexical=lexical)
    assert len(hits) == k
    assert {h.chunk.doc_id for h in hits} == {"cooking.txt"}


def test_dense_and_lexical_lists_hold_only_allowed_chunks(view: View) -> None:
    chosen = view.filtered(DocFilter.of(doc_prefix="notes/"))
    vector = chosen.query_vector(QUERY)
    total = level_total(view, "narrow", "notes/sailing.md")
    dense = chosen.dense("narrow", vector, 1000)
    assert len(dense) == total  # every allowed chunk is reachable, none other
    chunks = view.catalog.chunks([i for i, _ in dense])
    assert {c.doc_id for c in chunks.values()} == {"notes/sailing.md"}
    lexical = chosen.lexical("narrow", "sailboat storm anchor telescope", 1000)
    assert lexical and {view.catalog.chunks([i])[i].doc_id for i, _ in lexical} == {"notes/sailing.md"}
    assert view.lexical("narrow", "telescope", 5) and not chosen.lexical("narrow", "telescope", 5)


def test_prefix_and_ids_combine(view: View) -> None:
    both = view.filtered(DocFilter.of(["cooking.txt", "notes/sailing.md"], "notes/"))
    hits = search_level(both, QUERY, "mid", 10)
    assert hits and {h.chunk.doc_id for h in hits} == {"notes/sailing.md"}
    nothing = view.filtered(DocFilter.of(["cooking.txt"], "notes/"))
    assert search_level(nothing, QUERY, "mid", 10) == []


def test_fused_union_and_hrr_honour_the_filter(view: View) -> None:
    chosen = view.filtered(DocFilter.of(["cooking.txt"]))
    for hits in (search_rrf(chosen, QUERY, 5), search_union(chosen, QUERY, 5), hrr_search(chosen, QUERY, 3).hits):
        assert hits and {h.chunk.doc_id for h in hits} == {"cooking.txt"}


def test_unknown_or_empty_doc_ids_are_errors(view: View) -> None:
    with pytest.raises(InvalidInputError, match="unknown doc_id.*'nope.md'.*list_documents"):
        view.filtered(DocFilter.of(["cooking.txt", "nope.md"]))
    with pytest.raises(InvalidInputError, match="doc_ids is empty"):
        DocFilter.of([])
    assert DocFilter.of(None, "") is None and view.filtered(None) is view


def test_filtered_hnsw_search_skips_other_documents(tmp_path) -> None:
    from granrag_mcp.store.vector_index import VectorIndex

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index_ = VectorIndex.empty(16, threshold=100)
    index_.add(np.arange(1, 401), vectors)
    index_.settle()
    index_.remove(np.arange(300, 311))  # tombstones inside the allowed range: never returned
    assert index_.kind == "hnsw" and index_.tombstones == 11
    allowed = np.arange(300, 401)
    hits = index_.search(vectors[0], 10, allowed)
    assert len(hits) == 10 and all(311 <= i <= 400 for i, _ in hits)
    exact = sorted(((float(vectors[i - 1] @ vectors[0]), i) for i in allowed if i >= 311), reverse=True)[:10]
    assert [i for i, _ in hits] == [i for _, i in exact]
