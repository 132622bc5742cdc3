"""compare_stores: what it reports for stores that agree, and for stores whose documents were cut differently."""

from benchmarks.compare import compare_stores
from tests.helpers import SMALL_CHUNKS, index, write_corpus


def test_the_same_run_twice_is_the_same_store(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    index(docs, tmp_path / "a")
    index(docs, tmp_path / "b")
    comparison = compare_stores(tmp_path / "a", tmp_path / "b")
    assert comparison.same_chunks and comparison.min_cosine > 0.99999
    assert comparison.same_concepts and comparison.concept_min_cosine > 0.99999
    assert comparison.documents_cut_differently == []


def test_documents_cut_differently_are_named(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    index(docs, tmp_path / "a")
    index(docs, tmp_path / "b", chunking=SMALL_CHUNKS.model_copy(update={"mid_tokens": 12}))
    comparison = compare_stores(tmp_path / "a", tmp_path / "b")
    assert not comparison.same_chunks and comparison.differences
    assert comparison.documents_cut_differently == ["astronomy.md", "cooking.txt", "notes/sailing.md"]
