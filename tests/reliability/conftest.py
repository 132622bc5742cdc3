"""Fixtures of the reliability suite: a fake-embedder store with stale ids, and a real-model store."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from granrag_mcp.engine import Engine, run_index
from granrag_mcp.rerankers import EmbeddingReranker
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.reliability.support import (
    all_chunk_ids,
    chunk_ids_of,
    fake_settings,
    write_small_corpus,
)
from tests.server.test_app import SMALL_CHUNKS
from tests.server.tools.test_write import library  # noqa: F401  (a fixture of the hostile-folder and -agent tests)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclass
class FuzzStore:
    settings: Settings
    corpus: Path
    embedder: FakeEmbedder
    live_ids: dict[str, str]  # public id -> doc_id, generation 2
    stale_ids: list[str]  # ids of generation 1 whose documents were removed (--prune) or changed
    doc_ids: list[str]

    def server(self):
        engine = Engine(self.settings, embedder=self.embedder, reranker=EmbeddingReranker(self.embedder))
        return build_server(self.settings, engine_factory=lambda _: engine)


@pytest.fixture(scope="session")
def fuzz_store(tmp_path_factory: pytest.TempPathFactory) -> FuzzStore:
    """Generation 1 with two extra documents; generation 2 with one removed (--prune) and one changed."""
    root = tmp_path_factory.mktemp("fuzz")
    corpus = write_small_corpus(root / "corpus")
    (corpus / "doomed.md").write_text(
        "The doomed page talks about lanterns and copper kettles. " * 30, encoding="utf-8"
    )
    (corpus / "changing.md").write_text("Version one of the changing page mentions meadows. " * 30, encoding="utf-8")
    embedder = FakeEmbedder(dimension=128)
    settings = fake_settings(root / "store")
    fake_index([corpus], settings, embedder)
    stale = chunk_ids_of(settings.store, {"doomed.md", "changing.md"})
    (corpus / "doomed.md").unlink()
    (corpus / "changing.md").write_text("Version two of the changing page mentions valleys. " * 30, encoding="utf-8")
    summary = fake_index([corpus], settings, embedder, prune=True)
    assert summary.committed and summary.removed == 1 and summary.updated == 1
    live = all_chunk_ids(settings.store)
    assert stale and not set(stale) & set(live), "chunk ids were reused across generations"
    return FuzzStore(settings, corpus, embedder, live, stale, sorted(set(live.values())))


@dataclass
class RealStore:
    settings: Settings
    corpus: Path


@pytest.fixture(scope="session")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> RealStore:
    """The bundled MiniLM model over the small corpus (about 15 s). Tests that write must copy it first."""
    root = tmp_path_factory.mktemp("real")
    corpus = write_small_corpus(root / "corpus")
    settings = Settings(store=root / "store", **SMALL_CHUNKS)
    run_index([corpus], settings, quiet=True)
    return RealStore(settings, corpus)
