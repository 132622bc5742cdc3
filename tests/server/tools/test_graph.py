"""The concept-graph tools end to end through the MCP client: answers carry evidence ids that open, bad input
gets an error the model can act on."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
from mcp.client import Client

from granrag_mcp.indexing import graph as graph_build
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from granrag_mcp.text.concepts import ConceptMatcher
from granrag_mcp.text.words import concept_key
from tests import graph_corpus
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import call, fail, fake_engine, run


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("graph-tools")
    settings = Settings(
        store=root / "store", model="fake-hash-embedder", broad_tokens=256, broad_overlap=32, mid_tokens=64
    )
    embedder = FakeEmbedder(dimension=256)
    # A corpus of thirty sentences has too few edges for a percentile cut to mean anything: keep every edge with
    # a positive PMI, so that the links the corpus was written with are all there.
    with mock.patch.object(graph_build, "PRUNE_PERCENTILE", 0.0):
        fake_index([graph_corpus.write(root / "corpus")], settings, embedder)
    engine = fake_engine(settings, embedder)
    return build_server(settings, engine_factory=lambda _: engine)


def _mentions(text: str, *names: str) -> bool:
    matcher = ConceptMatcher([concept_key(n) for n in names])
    return len(matcher.find(text)) == len(names)


def test_find_concepts_by_exact_and_misspelt_name(server) -> None:
    async def scenario(client: Client):
        return (
            await call(client, "find_concepts", {"query": "Ball bearings", "k": 3}),
            await call(client, "find_concepts", {"query": "lubricnts", "k": 3}),
        )

    exact, fuzzy = run(server, scenario)
    top = exact["concepts"][0]
    assert top["name"].lower().startswith("ball bearing") and top["score"] == 1.0
    assert top["frequency"] >= 2 and top["degree"] >= 1 and "community" in top
    assert all(m.startswith("narrow:") for m in top["mentions"])
    assert fuzzy["concepts"][0]["name"].lower().startswith("lubricant")


def test_find_concepts_takes_the_names_inside_a_question(server) -> None:
    async def scenario(client: Client):
        return await call(client, "find_concepts", {"query": "How do lubricants help ball bearings?", "k": 4})

    found = run(server, scenario)["concepts"]
    named = [c for c in found if c["score"] == 0.99]
    assert {c["name"].lower().rstrip("s") for c in named} >= {"lubricant", "ball bearing"}
    assert found[: len(named)] == named  # the names the question holds come first


def test_community_reports_in_a_document_list_its_most_named_concepts_first(server) -> None:
    async def scenario(client: Client):
        return await call(
            client, "graph_search", {"query": "What are the main themes?", "k": 3, "doc_id": "garden.txt"}
        )

    reports = run(server, scenario)["communities"]
    text = graph_corpus.GARDEN.lower()
    for report in reports:
        counts = [sum(_mentions(s, c.lower()) for s in text.split(". ")) for c in report["concepts"]]
        assert counts == sorted(counts, reverse=True), report["concepts"]


def test_paths_link_two_concepts_that_never_share_a_sentence(server) -> None:
    async def scenario(client: Client):
        paths = await call(
            client, "concept_paths", {"source": "lubricants", "target": "ball bearing", "max_hops": 2, "k": 3}
        )
        ids = [i for p in paths["paths"] for hop in p["hops"] for i in hop["evidence"]]
        opened = await call(client, "get_chunks", {"chunk_ids": ids})
        return paths, opened

    paths, opened = run(server, scenario)
    assert paths["paths"], "a two-hop path exists through machine parts"
    texts = {s["chunk_id"]: s["text"] for s in paths["sentences"]}
    assert {h["chunk_id"]: h["text"] for h in opened["hits"]} == texts  # the evidence ids open
    for path in paths["paths"]:
        assert path["concepts"][0].lower().startswith("lubricant") and len(path["hops"]) <= 2
        for hop in path["hops"]:
            assert any(_mentions(texts[i], hop["source"].lower(), hop["target"].lower()) for i in hop["evidence"])
    assert any("machine part" in [c.lower().rstrip("s") for c in p["concepts"]] for p in paths["paths"])


def test_neighbourhood_depth_and_budget(server) -> None:
    async def scenario(client: Client):
        return (
            await call(client, "concept_neighbourhood", {"concept": "sliding friction", "depth": 2, "max_nodes": 6}),
            await call(
                client,
                "concept_neighbourhood",
                {"concept": "ball bearing", "depth": 2, "max_nodes": 50, "evidence": 5, "max_tokens": 50},
            ),
        )

    wide, small = run(server, scenario)
    assert 1 <= len(wide["neighbours"]) <= 5 and {n["depth"] for n in wide["neighbours"]} <= {1, 2}
    assert len(wide["edges"]) == len(wide["neighbours"])
    names = {wide["concept"]["name"]} | {n["name"] for n in wide["neighbours"]}
    assert all(e["source"] in names and e["target"] in names for e in wide["edges"])
    assert small["tokens_used"] <= 50 and (small["omitted"] > 0 or small["sentences"][-1]["truncated"])


def test_graph_search_reports_and_passages(server) -> None:
    async def scenario(client: Client):
        return (
            await call(client, "graph_search", {"query": "compost and earthworms", "k": 2, "doc_id": "garden.txt"}),
            await call(
                client, "graph_search", {"query": "how do lubricants help ball bearings", "mode": "passages", "k": 4}
            ),
        )

    reports, passages = run(server, scenario)
    assert reports["communities"] and all(c["documents"] == ["garden.txt"] for c in reports["communities"])
    key = {i for c in reports["communities"] for i in c["key_sentences"]}
    assert key and key >= {s["chunk_id"] for s in reports["sentences"]}
    assert all(b.startswith("broad:") for c in reports["communities"] for b in c["broad_chunks"])
    assert passages["hits"] and all(h["level"] == "narrow" for h in passages["hits"])
    assert any(
        _mentions(h["text"].lower(), "lubricant") or _mentions(h["text"].lower(), "ball bearing")
        for h in passages["hits"]
    )


def test_bad_input_is_an_error_the_model_can_act_on(server) -> None:
    async def scenario(client: Client):
        return [
            await fail(client, "concept_neighbourhood", {"concept": "sliding frction"}),
            await fail(client, "concept_paths", {"source": "lubricant", "target": "zeppelin hangar"}),
            await fail(client, "concept_paths", {"source": "lubricant", "target": "compost", "max_hops": 5}),
            await fail(client, "concept_neighbourhood", {"concept": "lubricant", "depth": 3}),
            await fail(client, "graph_search", {"query": "soil", "doc_id": "nowhere.md"}),
        ]

    unknown, unknown_target, hops, depth, doc = run(server, scenario)
    assert "unknown concept 'sliding frction'" in unknown and "'sliding friction'" in unknown.lower()
    assert "unknown concept 'zeppelin hangar'" in unknown_target and "find_concepts" in unknown_target
    assert "max_hops" in hops and "depth" in depth
    assert "nowhere.md" in doc and "list_documents" in doc


def graphless_settings(tmp_path: Path) -> Settings:
    """Small chunks, the fake embedder, and no concept graph."""
    return Settings(
        store=tmp_path / "store",
        model="fake-hash-embedder",
        broad_tokens=256,
        broad_overlap=32,
        mid_tokens=64,
        graph=False,
    )


def test_a_store_indexed_with_the_graph_off_says_how_to_build_it(tmp_path: Path) -> None:
    settings = graphless_settings(tmp_path)
    embedder = FakeEmbedder(dimension=256)
    fake_index([graph_corpus.write(tmp_path / "corpus")], settings, embedder)
    engine = fake_engine(settings, embedder)
    server = build_server(settings, engine_factory=lambda _: engine)

    async def scenario(client: Client):
        tools = {t.name for t in (await client.list_tools()).tools}
        errors = [
            await fail(client, "find_concepts", {"query": "friction"}),
            await fail(client, "concept_neighbourhood", {"concept": "friction"}),
            await fail(client, "concept_paths", {"source": "lubricants", "target": "ball bearings"}),
            await fail(client, "graph_search", {"query": "main themes", "mode": "passages"}),
        ]
        found = await call(client, "search_narrow", {"query": "friction"})
        return tools, errors, found

    tools, errors, found = run(server, scenario)
    assert {"find_concepts", "concept_paths", "concept_neighbourhood", "graph_search"} <= tools  # listed as always
    for error in errors:
        assert "no concept graph" in error and "GRANRAG_GRAPH" in error and "granrag-mcp index" in error
    assert found["hits"]


def test_evidence_chain_links_two_names_in_one_call_without_concept_ids(server) -> None:
    async def scenario(client: Client):
        return (
            await call(client, "evidence_chain", {"question": "How are lubricants connected to ball bearings?"}),
            await call(client, "evidence_chain", {"a": "LUBRICANTS", "b": "Ball Bearings", "max_tokens": 60}),
            await call(client, "evidence_chain", {"a": "synthetic lubricants", "b": "ball bearings"}),
        )

    asked, folded, partial = run(server, scenario)
    assert asked["a"]["found"] == "lubricants" and asked["a"]["how"] == "exact"
    first = asked["links"][0]
    assert first["via"].lower() == "machine parts" and len(first["evidence"]) in (2, 4)  # the corpus says it twice
    texts = {s["chunk_id"]: s["text"] for s in asked["sentences"]}
    chain = [texts[i] for i in first["evidence"]]
    assert "Lubricants protect machine parts" in chain[0] and "Ball bearings carry loads" in chain[-1]
    assert all(s["citation"].startswith("physics.md") for s in asked["sentences"])
    assert folded["links"][0]["via"].lower() == "machine parts" and folded["tokens_used"] <= 60
    assert partial["a"]["how"] in {"alias", "meaning", "partial"} and partial["links"]


def test_evidence_chain_errors_say_what_to_pass(server) -> None:
    async def scenario(client: Client):
        return (
            await fail(client, "evidence_chain", {"a": "lubricants"}),
            await fail(client, "evidence_chain", {"a": "lubricants", "b": "Zanzibar quagga"}),
            await fail(client, "evidence_chain", {"question": "why?"}),
        )

    one, unknown, vague = run(server, scenario)
    assert "both a and b" in one
    assert "no sentence names 'Zanzibar quagga'" in unknown and "search_narrow" in unknown
    assert "How is A connected to B" in vague


def test_evidence_chain_needs_no_concept_graph(tmp_path) -> None:
    """Without the graph, the bridges are the capitalised names of the text."""
    settings = graphless_settings(tmp_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "history.txt").write_text(
        "Young Marie Curie studied chemistry at the Flying University in secret. "
        "Many years later the Flying University admitted Stefan Banach as a lecturer. "
        "The mathematician Stefan Banach liked long talks in the Scottish Café. "
        "The chemist Marie Curie won two Nobel prizes for her research.\n",
        encoding="utf-8",
    )
    embedder = FakeEmbedder(dimension=256)
    fake_index([corpus], settings, embedder)
    server = build_server(settings, engine_factory=lambda _: fake_engine(settings, embedder))

    async def scenario(client: Client):
        return (
            await call(client, "evidence_chain", {"question": "How is marie curie connected to Stefan Banach?"}),
            await fail(client, "concept_paths", {"source": "Marie Curie", "target": "Stefan Banach"}),
        )

    chain, no_graph = run(server, scenario)
    assert "no concept graph" in no_graph
    link = chain["links"][0]
    assert link["via"] == "Flying University"
    texts = {s["chunk_id"]: s["text"] for s in chain["sentences"]}
    assert "Marie Curie studied" in texts[link["evidence"][0]]
    assert "admitted Stefan Banach" in texts[link["evidence"][-1]]


def test_community_summaries_fill_the_budget_with_cited_sentences_of_their_concepts(server) -> None:
    async def scenario(client: Client):
        args = {"query": "What are the main themes?", "k": 2, "summary": True, "max_tokens": 300}
        return (
            await call(client, "graph_search", {"query": "What are the main themes?", "k": 2}),
            await call(client, "graph_search", args),
            await call(client, "graph_search", {**args, "doc_id": "garden.txt"}),
        )

    plain, summary, garden = run(server, scenario)
    assert garden["sentences"] and {s["doc_id"] for s in garden["sentences"]} == {"garden.txt"}
    assert [c["community"] for c in summary["communities"]] == [c["community"] for c in plain["communities"]]
    sentences = {s["chunk_id"]: s for s in summary["sentences"]}
    assert summary["tokens_used"] <= 300 and sentences
    assert len(sentences) >= len(plain["sentences"])  # the budget holds more than three key sentences each
    for community in summary["communities"]:
        assert community["key_sentences"]
        for chunk_id in community["key_sentences"]:
            sentence = sentences[chunk_id]
            assert sentence["citation"].startswith(sentence["doc_id"])
            # each sentence names one of its community's concepts
            assert any(_mentions(sentence["text"], name) for name in community["concepts"])
