"""The concept graph as an index of the generation: built at index time, checksummed, incremental."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.errors import StoreCorruptError
from granrag_mcp.indexing.graph import MIN_FREQUENCY, write_generation_graph
from granrag_mcp.levels import FINEST
from granrag_mcp.store.graph import GRAPH_FILE, PHRASES_FILE
from granrag_mcp.store.store import Snapshot, vector_file
from granrag_mcp.store.vector_index import VectorIndex
from granrag_mcp.text.concepts import ConceptMatcher
from granrag_mcp.text.words import concept_key
from tests import graph_corpus
from tests.fakes import FakeEmbedder
from tests.helpers import index


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("graph")
    index(graph_corpus.write(root / "corpus"), root / "store")
    return root / "store"


def test_the_graph_is_in_the_manifest_and_verified(tmp_path: Path) -> None:
    store = tmp_path / "store"
    index(graph_corpus.write(tmp_path / "corpus"), store)
    snapshot = Snapshot.open(store)
    assert {GRAPH_FILE, PHRASES_FILE} <= set(snapshot.manifest.files)
    graph = snapshot.graph
    assert graph is not None and len(graph) > 5 and graph.n_edges > 0
    (snapshot.folder / GRAPH_FILE).write_bytes(b"damaged")
    with pytest.raises(StoreCorruptError, match="fails its checksum"):
        Snapshot.open(store)


def test_concepts_mentions_and_edges_agree_with_the_text(tmp_path: Path) -> None:
    index(graph_corpus.write(tmp_path / "corpus"), tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")
    graph = snapshot.graph
    keys = [str(k) for k in graph.keys]
    matcher = ConceptMatcher(keys)
    assert {"machine part", "lubricant", "ball bearing", "compost"} <= set(keys)
    sentences = snapshot.catalog.chunks(graph.mention_ids.tolist())
    for concept in range(len(graph)):
        mentions = graph.mentions(concept)
        assert len(mentions) >= MIN_FREQUENCY and graph.frequency[concept] == len(mentions)
        assert all(concept in matcher.find(sentences[int(s)].text) for s in mentions)
        targets, weights, counts = graph.neighbours(concept)
        assert (np.diff(weights) <= 0).all(), "neighbours come strongest first"
        for target, count in zip(targets.tolist(), counts.tolist()):
            shared = np.intersect1d(mentions, graph.mentions(target))
            assert len(shared) == count > 0
    lubricant, bearing = keys.index("lubricant"), keys.index("ball bearing")
    assert np.intersect1d(graph.mentions(lubricant), graph.mentions(bearing)).size == 0
    physics = {keys.index(k) for k in ("machine part", "lubricant", "ball bearing")}
    garden = {keys.index(k) for k in ("compost", "earthworm")}
    assert not {int(graph.concept_cluster[c]) for c in physics} & {int(graph.concept_cluster[c]) for c in garden}


def test_reports_name_their_own_documents_and_sentences(store: Path) -> None:
    snapshot = Snapshot.open(store)
    graph = snapshot.graph
    assert graph.n_clusters >= 2
    for cluster in range(graph.n_clusters):
        members = set(graph.members(cluster).tolist())
        key = graph.key_sentences(cluster).tolist()
        assert key, "every community has key sentences"
        for sentence in key:
            row = int(np.searchsorted(graph.sentence_ids, sentence))
            assert members & set(graph.sentence_concepts_of(np.array([row]))[0].tolist())
        chunks = snapshot.catalog.chunks(key + graph.broad_chunks(cluster).tolist())
        assert {c.doc_id for c in chunks.values()} <= set(graph.cluster_doc_ids(cluster))
        assert all(chunks[int(b)].level == "broad" for b in graph.broad_chunks(cluster))


def test_incremental_runs_extract_only_new_documents_and_drop_removed_ones(tmp_path: Path) -> None:
    corpus = graph_corpus.write(tmp_path / "corpus")
    index(corpus, tmp_path / "store")
    first = json.loads((Snapshot.open(tmp_path / "store").folder / PHRASES_FILE).read_text())
    assert set(first) == {"physics.md", "garden.txt"}
    (corpus / "garden.txt").unlink()
    index(corpus, tmp_path / "store", prune=True)
    snapshot = Snapshot.open(tmp_path / "store")
    assert json.loads((snapshot.folder / PHRASES_FILE).read_text()) == {"physics.md": first["physics.md"]}
    keys = {str(k) for k in snapshot.graph.keys}
    assert "sliding friction" in keys and "compost" not in keys
    assert set(snapshot.graph.docs.tolist()) == {"physics.md"}
    # Concepts kept across runs keep their name vectors, without an embedder (a run that only removes).
    assert np.abs(snapshot.graph.vectors).sum(axis=1).min() > 0


def test_a_generation_from_before_graphs_gets_every_document_extracted(tmp_path: Path) -> None:
    index(graph_corpus.write(tmp_path / "corpus"), tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")
    old = tmp_path / "old"
    shutil.copytree(snapshot.folder, old)
    (old / PHRASES_FILE).unlink()  # as a generation written before graphs were
    (old / GRAPH_FILE).unlink()
    built = tmp_path / "new"
    built.mkdir()
    embedder = FakeEmbedder()
    graph = write_generation_graph(
        built, old, snapshot.catalog, {}, snapshot.vectors["narrow"].reconstruct, embedder.embed, embedder.dimension
    )
    assert set(json.loads((built / PHRASES_FILE).read_text())) == {"physics.md", "garden.txt"}
    assert [str(k) for k in graph.keys] == [str(k) for k in snapshot.graph.keys]


@pytest.mark.parametrize(
    "phrase, key",
    [
        ("Super Bowls", "super bowl"),
        ("University of Warsaw", "university of warsaw"),
        ("1931", None),
        ("March 1931", None),
        ("soil and steady", None),
        ("the", None),
        ("Teachers’", "teacher"),
    ],
)
def test_concept_keys(phrase: str, key: str | None) -> None:
    assert concept_key(phrase) == key


def test_a_concept_left_without_a_name_vector_gets_one_in_the_next_run():
    from types import SimpleNamespace

    from granrag_mcp.indexing.graph import _concept_vectors

    # As a graph written by a run without an embedder: "river" has its vector, "tide" a zero row.
    previous = SimpleNamespace(keys=np.array(["river", "tide"]), vectors=np.array([[1.0, 0.0], [0.0, 0.0]], np.float32))
    asked: list[list[str]] = []

    def embed(names):
        asked.append(names)
        return np.array([[0.0, 1.0]] * len(names), np.float32)

    vectors = _concept_vectors(["river", "tide"], ["River", "Tide"], embed, 2, previous)  # type: ignore[arg-type]
    assert asked == [["Tide"]]  # the kept vector is not embedded again
    assert vectors.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_pagerank_solves_the_pagerank_equation_with_dangling_concepts() -> None:
    from granrag_mcp.pagerank import pagerank, transition_matrix

    # a weighted triangle 0-1-2, a pendant 3 on 2, and 4 with no edge (dangling)
    a, b = np.array([0, 0, 1, 2]), np.array([1, 2, 2, 3])
    weight = np.array([1.0, 2.0, 3.0, 0.5])
    n, alpha = 5, 0.85
    transition = transition_matrix(n, np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([weight] * 2))
    for restart in (np.ones(n), np.array([1.0, 0, 0, 0, 0])):
        teleport = restart / restart.sum()
        # r = alpha (M r + r_dangling * teleport) + (1 - alpha) teleport, solved directly
        matrix = transition.toarray() + np.outer(teleport, np.arange(n) == 4)
        expected = np.linalg.solve(np.eye(n) - alpha * matrix, (1 - alpha) * teleport)
        found = pagerank(transition, restart, alpha, iterations=200, tolerance=1e-12)
        assert np.allclose(found, expected, atol=1e-9) and abs(found.sum() - 1) < 1e-9


def test_display_names_do_not_depend_on_the_order_documents_arrive_in(store: Path) -> None:
    from granrag_mcp.indexing.graph import build_graph
    from granrag_mcp.store.graph import read_phrases

    snapshot = Snapshot.open(store)
    phrases = read_phrases(snapshot.folder)
    assert phrases is not None and len(phrases) >= 2
    docs = sorted(phrases)
    # "lubricant" named two ways, once each: a tie that only the documents' order can break
    tied = {doc: [(k, s) for k, s in phrases[doc] if k != "lubricant"] for doc in docs}
    tied[docs[0]].append(("lubricant", "Lubricant (first)"))
    tied[docs[-1]].append(("lubricant", "lubricant (last)"))

    sentences = VectorIndex.read(snapshot.folder / vector_file(FINEST))
    dimension = snapshot.manifest.identity.dimension
    names = [
        build_graph(snapshot.catalog, dict(order), sentences.reconstruct, None, dimension).names.tolist()
        for order in ([(d, tied[d]) for d in docs], [(d, tied[d]) for d in reversed(docs)])
    ]
    assert names[0] == names[1]


# Names written otherwise than the documents write them, none sharing a word with the concept's own name, so only
# the name vectors can find them (the meaning search of find_concepts, graph_search's seeds and the resolution of
# names in concept_paths and evidence_chain).
PARAPHRASED_NAMES = {
    "oils and greases": "lubricants",
    "bikes": "bicycles",
    "big lorries": "heavy trucks",
    "people who tend gardens": "gardeners",
    "young plants": "seedlings",
    "motors": "hot engines",
}


def test_concept_name_vectors_find_a_name_written_otherwise_with_the_real_model(tmp_path: Path) -> None:
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()
    stand_in = FakeEmbedder(dimension=model.dimension)  # the sentences' vectors play no part in the names'
    index(graph_corpus.write(tmp_path / "corpus"), tmp_path / "store", embedder=stand_in)
    snapshot = Snapshot.open(tmp_path / "store")
    built = tmp_path / "built"
    built.mkdir()
    graph = write_generation_graph(
        built, None, snapshot.catalog, {}, snapshot.vectors["narrow"].reconstruct, model.embed, model.dimension
    )
    names = [str(name).lower() for name in graph.names]
    assert set(PARAPHRASED_NAMES.values()) <= set(names)
    queries = model.embed(list(PARAPHRASED_NAMES))
    for (written, concept), query in zip(PARAPHRASED_NAMES.items(), queries):
        top = [names[row] for row in np.argsort(-(graph.vectors @ query), kind="stable")[:5]]
        assert concept in top, (written, top)
