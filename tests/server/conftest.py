"""The store and server the tool tests share: the corpus of `test_app.write_corpus` indexed with the fake
embedder, once per test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from granrag_mcp.engine import Engine
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import fake_engine, fake_settings, write_corpus


@pytest.fixture(scope="module")
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimension=256)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder: FakeEmbedder) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("server")
    corpus = write_corpus(root / "corpus")
    settings = fake_settings(root / "store")
    fake_index([corpus], settings, embedder)
    return settings, corpus


@pytest.fixture(scope="module")
def engine(built: tuple[Settings, Path], embedder: FakeEmbedder) -> Engine:
    return fake_engine(built[0], embedder)


@pytest.fixture(scope="module")
def server(built: tuple[Settings, Path], engine: Engine):
    return build_server(built[0], engine_factory=lambda _: engine)
