"""Helpers of the graph techniques, and where the graph's query structures are kept."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from granrag_mcp.engine import Engine
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.graph import best_first, graph_of
from granrag_mcp.retrieval.view import PerGeneration, View
from granrag_mcp.settings import Settings
from tests import graph_corpus
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index


@pytest.mark.parametrize("k", [1, 3, 10, 40, 60])
def test_best_first_is_a_stable_sorts_first_k(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(50):
        scores = rng.integers(0, 6, 40).astype(np.float64)  # many ties, one at the k-th place
        assert best_first(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist()


def test_the_graphs_query_structures_are_built_once_per_generation_and_held_by_the_engine(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "store", model="fake-hash-embedder", broad_tokens=256, mid_tokens=64)
    embedder = FakeEmbedder(dimension=64)
    corpus = graph_corpus.write(tmp_path / "corpus")
    fake_index([corpus], settings, embedder)
    engine = Engine(settings, embedder=embedder)
    first, again = engine.view(), engine.view()
    _, queries = graph_of(first)
    assert graph_of(again)[1] is queries, "a later request reuses what the first one built"
    assert graph_of(first.filtered(DocFilter.of(["physics.md"], None)))[1] is queries
    own = View(first.snapshot, embedder)  # no module-wide state: a view made without the engine builds its own
    assert graph_of(own)[1] is not queries
    assert graph_of(own)[1] is graph_of(own)[1]

    graph_corpus.write(corpus, {"garden.txt": graph_corpus.GARDEN + " Earthworms love compost."})
    fake_index([corpus], settings, embedder)
    fresh = engine.view()
    assert fresh.snapshot.generation > first.snapshot.generation
    assert graph_of(fresh)[1] is not queries, "a new generation builds its own"
    assert graph_of(first)[1] is queries, "requests still on the previous generation keep theirs"


def test_per_generation_keeps_the_last_generations_asked_about(tmp_path: Path) -> None:
    kept = PerGeneration(size=2)
    snapshots = [SimpleNamespace(folder=tmp_path / f"gen-{n}") for n in range(3)]
    built = [kept.get(s, "x", object) for s in snapshots]  # type: ignore[arg-type]
    assert kept.get(snapshots[2], "x", object) is built[2]  # type: ignore[arg-type]
    assert kept.get(snapshots[0], "x", object) is not built[0], "the oldest was let go"  # type: ignore[arg-type]
    assert kept.get(snapshots[2], "y", list) == [], "each name is its own structure"  # type: ignore[arg-type]


def test_per_generation_keeps_every_structure_of_a_kept_generation(tmp_path: Path) -> None:
    kept = PerGeneration(size=2)
    snapshot = SimpleNamespace(folder=tmp_path / "gen-1")
    built = {name: kept.get(snapshot, name, object) for name in "abcdefgh"}  # type: ignore[arg-type]
    assert all(kept.get(snapshot, name, object) is value for name, value in built.items())  # type: ignore[arg-type]
