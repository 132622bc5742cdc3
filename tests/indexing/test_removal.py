"""Removing documents by id commits a whole generation: every index of the store, the concept graph included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.indexing.removal import remove_documents
from granrag_mcp.store.graph import PHRASES_FILE
from granrag_mcp.store.store import Snapshot
from tests import graph_corpus
from tests.helpers import index


def test_removing_a_document_keeps_the_graph_of_the_others(tmp_path: Path) -> None:
    corpus = graph_corpus.write(tmp_path / "corpus")
    index(corpus, tmp_path / "store")
    remove_documents(["garden.txt"], tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")  # verifies every file the manifest lists
    try:
        assert any(name.startswith("graph") for name in snapshot.manifest.files)
        assert set(json.loads((snapshot.folder / PHRASES_FILE).read_text())) == {"physics.md"}
        keys = {str(k) for k in snapshot.graph.keys}
        assert "sliding friction" in keys and "compost" not in keys
        assert set(snapshot.graph.docs.tolist()) == {"physics.md"}
    finally:
        snapshot.close()


def test_removing_an_unknown_document_changes_nothing(tmp_path: Path) -> None:
    corpus = graph_corpus.write(tmp_path / "corpus")
    summary = index(corpus, tmp_path / "store")
    with pytest.raises(InvalidInputError, match="unknown doc_id"):
        remove_documents(["nowhere.md"], tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")
    try:
        assert snapshot.generation == summary.generation
    finally:
        snapshot.close()


def test_removing_from_a_store_indexed_without_the_graph_builds_none(tmp_path: Path) -> None:
    corpus = graph_corpus.write(tmp_path / "corpus")
    index(corpus, tmp_path / "store", graph=False)
    remove_documents(["garden.txt"], tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")
    try:
        assert snapshot.graph is None and not any(name.startswith("graph") for name in snapshot.manifest.files)
        assert [d.doc_id for d in snapshot.catalog.documents()] == ["physics.md"]
    finally:
        snapshot.close()
