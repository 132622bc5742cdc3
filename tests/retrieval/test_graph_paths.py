"""Paths found at query time through the sentences that mention two concepts, where the index kept no edge."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np

from granrag_mcp.engine import Engine
from granrag_mcp.indexing import graph as graph_build
from granrag_mcp.retrieval import graph as techniques
from granrag_mcp.retrieval.graph_paths import cooccurrence_weight
from granrag_mcp.settings import Settings
from tests import graph_corpus
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index


def test_a_two_hop_link_the_index_pruned_is_found_with_its_sentences(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "store", model="fake-hash-embedder", broad_tokens=256, mid_tokens=64)
    embedder = FakeEmbedder(dimension=256)
    with mock.patch.object(graph_build, "PRUNE_PERCENTILE", 100.0):  # keep only the strongest edges
        fake_index([graph_corpus.write(tmp_path / "corpus")], settings, embedder)
    view = Engine(settings, embedder=embedder).view()
    graph, queries = techniques.graph_of(view)
    a = techniques.resolve_concept(view, queries, "Lubricants")
    b = techniques.resolve_concept(view, queries, "ball bearings")
    middle = techniques.resolve_concept(view, queries, "machine parts")
    assert middle not in graph.neighbours(a)[0].tolist(), "the index holds no edge lubricant - machine part"
    paths = techniques.strongest_paths(view, "Lubricants", "ball bearings", 2, 5, 1)
    assert paths and all(len(p.concepts) == 3 for p in paths)  # no direct link: every path has one middle
    through = next(p for p in paths if p.concepts == [a, middle, b])
    chunks = view.catalog.chunks([i for hop in through.hops for i in hop.evidence])
    texts = [c.text.lower() for c in chunks.values()]
    assert any("lubricants" in t and "machine parts" in t for t in texts)
    assert any("ball bearings" in t and "machine parts" in t for t in texts)


def test_the_query_time_weight_is_the_index_weight() -> None:
    # 2 shared sentences of 100, each concept in 4: npmi = log(p / (pa pb)) / -log(p)
    p = 2 / 100
    expected = np.log(p / (0.04 * 0.04)) / -np.log(p) * np.log2(3)
    assert np.isclose(cooccurrence_weight(np.array([2]), 4, np.array([4]), 100)[0], expected)
