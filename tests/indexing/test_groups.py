"""An index run streamed in groups of documents commits what one group of every document commits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import granrag_mcp.indexing.groups as groups_module
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.groups import file_slices
from granrag_mcp.levels import LEVELS
from granrag_mcp.settings import ChunkSettings
from granrag_mcp.store import vector_index
from granrag_mcp.store.store import Snapshot, vector_file
from tests.fakes import FakeTokenEmbedder
from tests.helpers import SMALL_CHUNKS, TOPICS, index, write_corpus

SEMANTIC = SMALL_CHUNKS.model_copy(update={"chunker": "semantic", "semantic_min_tokens": 8})
MORE = {
    "report.md": "# Findings\n\nThe survey counted herons on the marsh. Egrets nested in the reeds.\n\n"
    "## Methods\n\nObservers walked the dyke at dawn. They logged each bird by species and time.",
    **{f"notes/n{n}.txt": f"Note {n} records that crate {n * 7} left dock {n % 4}. It was late." for n in range(12)},
}


def stored(store: Path) -> dict:
    """Everything a generation serves, by chunk id: records, vectors of each level, token rows, BM25 hits, graph."""
    snapshot = Snapshot.open(store)
    try:
        chunks = {level: snapshot.catalog.chunks_of_level(level) for level in LEVELS}
        ids = {level: np.array([c.id for c in chunks[level]], dtype=np.int64) for level in LEVELS}
        tokens = snapshot.token_vectors
        graph = snapshot.graph
        return {
            "documents": snapshot.catalog.documents(),
            "texts": {d.doc_id: snapshot.catalog.document_text(d.doc_id) for d in snapshot.catalog.documents()},
            "outlines": snapshot.catalog.outlines([d.doc_id for d in snapshot.catalog.documents()]),
            "chunks": chunks,
            "vectors": {level: snapshot.vectors[level].reconstruct(ids[level]) for level in LEVELS},
            "sizes": {level: len(snapshot.vectors[level]) for level in LEVELS},
            "tokens": tokens.rows(list(ids["narrow"])) if tokens is not None else None,
            "bm25": {
                level: snapshot.lexical[level].search(query, 5)
                for level in LEVELS
                for query in ("quasar redshift", "crate dock", "herons marsh")
            },
            "concepts": sorted(graph.keys.tolist()) if graph is not None else None,
            "counts": snapshot.manifest.counts,
            "next_id": snapshot.manifest.next_chunk_id,
        }
    finally:
        snapshot.close()


def assert_same(one: dict, other: dict) -> None:
    for key in one:
        if key == "vectors":
            for level in LEVELS:
                np.testing.assert_allclose(one[key][level], other[key][level], atol=1e-6)
        elif key == "tokens":
            if one[key] is None:
                assert other[key] is None
            else:
                for a, b in zip(one[key], other[key], strict=True):
                    np.testing.assert_array_equal(a, b)
        else:
            assert one[key] == other[key], key


@pytest.mark.parametrize("chunking", [SMALL_CHUNKS, SEMANTIC], ids=["fixed", "semantic"])
def test_groups_of_one_document_commit_what_one_group_of_all_commits(tmp_path, chunking: ChunkSettings) -> None:
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})
    options = {"chunking": chunking, "graph": True, "token_vector_dims": 16}
    whole = index(docs, tmp_path / "whole", FakeTokenEmbedder(), **options)
    grouped = index(docs, tmp_path / "grouped", FakeTokenEmbedder(), index_group_chars=1, **options)
    assert (grouped.added, grouped.new_chunks) == (whole.added, whole.new_chunks)
    assert whole.new_chunks["narrow"] > 40
    assert_same(stored(tmp_path / "whole"), stored(tmp_path / "grouped"))

    # An update on top of a base: one document changed, one added, one gone (pruned).
    (docs / "cooking.txt").write_text("Simmer the stock for an hour. Skim the fat before serving.", encoding="utf-8")
    (docs / "notes/new.md").write_text("A new note about the quasar and the harbour.", encoding="utf-8")
    (docs / "notes/n3.txt").unlink()
    for store, size in (("whole", None), ("grouped", 1)):
        extra = {"index_group_chars": size} if size else {}
        summary = index(docs, tmp_path / store, FakeTokenEmbedder(), prune=True, **options, **extra)
        assert (summary.added, summary.updated, summary.removed) == (1, 1, 1)
    assert_same(stored(tmp_path / "whole"), stored(tmp_path / "grouped"))


def test_groups_close_at_the_character_budget_or_the_document_count(tmp_path, monkeypatch) -> None:
    docs = write_corpus(tmp_path / "docs", {f"d{n}.txt": f"Document {n} says one thing." for n in range(10)}, 1)
    seen: list[int] = []
    original = groups_module.GroupReader.groups

    def recording(self, changed, known):
        for group in original(self, changed, known):
            seen.append(len(group.documents))
            yield group

    monkeypatch.setattr(groups_module.GroupReader, "groups", recording)
    index(docs, tmp_path / "by-chars", index_group_chars=60)  # each text is 27-28 characters: three make a group
    assert seen == [3, 3, 3, 1]
    seen.clear()
    monkeypatch.setattr(groups_module, "GROUP_DOCUMENTS", 4)
    index(docs, tmp_path / "by-count")
    assert seen == [4, 4, 2]


def test_file_slices_cut_by_bytes_and_count(tmp_path) -> None:
    changed = []
    for n, size in enumerate([5, 5, 20, 1, 1, 1]):
        path = tmp_path / f"f{n}.txt"
        path.write_bytes(b"x" * size)
        changed.append((SourceFile(path, path.name, ".txt"), "digest"))
    sizes = [[len(item[0].path.read_bytes()) for item in piece] for piece in file_slices(changed, 10, 2)]
    assert sizes == [[5, 5], [20], [1, 1], [1]]


def test_a_failure_while_embedding_a_later_group_is_raised_as_itself_and_leaves_the_store_as_it_was(tmp_path):
    class FailsLater(FakeTokenEmbedder):
        def embed(self, texts, progress=None, groups=None):
            if self.calls >= 2:
                raise RuntimeError("the model fell over")
            return super().embed(texts, progress, groups)

    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    before = stored(store)
    write_corpus(docs, {f"more/m{n}.txt": f"More text number {n} about harbours." for n in range(5)}, 1)
    with pytest.raises(RuntimeError, match="the model fell over"):
        index(docs, store, FailsLater(), index_group_chars=1)
    assert_same(before, stored(store))
    assert sorted(p.name for p in store.iterdir() if p.name.startswith(".")) == [], "no half-built generation left"


def test_an_update_over_a_graph_index_in_groups_builds_the_same_graph(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(vector_index, "ANN_THRESHOLD", 30)  # the narrow level becomes an HNSW graph
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})
    for store in ("whole", "grouped"):
        index(docs, tmp_path / store)
    snapshot = Snapshot.open(tmp_path / "whole")
    assert snapshot.vectors["narrow"].kind == "hnsw"
    snapshot.close()
    # New documents and a small change: too few removed rows for the graph to be rebuilt whole when written.
    write_corpus(docs, {f"more/m{n}.txt": f"More text number {n} about harbours and herons." for n in range(6)}, 1)
    (docs / "notes/n2.txt").write_text("Note 2 was rewritten about the harbour.", encoding="utf-8")
    index(docs, tmp_path / "whole")
    index(docs, tmp_path / "grouped", index_group_chars=1)
    assert_same(stored(tmp_path / "whole"), stored(tmp_path / "grouped"))
    whole, grouped = Snapshot.open(tmp_path / "whole"), Snapshot.open(tmp_path / "grouped")
    try:
        graph_file = vector_file("narrow")
        assert (whole.folder / graph_file).read_bytes() == (grouped.folder / graph_file).read_bytes()
    finally:
        whole.close()
        grouped.close()
