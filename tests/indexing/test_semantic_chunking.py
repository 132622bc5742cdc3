"""Percentile semantic chunking of the mid level: boundaries, size bounds, overrides, and the index run."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from granrag_mcp.errors import StoreMismatchError
from granrag_mcp.indexing.chunking import ChunkSettings
from granrag_mcp.indexing.semantic_chunking import (
    boundaries,
    cut_uses_vectors,
    group_sentences,
    parse_override,
    percentile_for,
    plan_document,
    semantic_documents,
    semantic_spans,
    smoothed_distances,
)
from granrag_mcp.indexing.sentences import sentence_clauses
from granrag_mcp.settings import Settings
from granrag_mcp.store.store import Snapshot
from granrag_mcp.tokens import get_tokenizer
from tests.fakes import FakeEmbedder
from tests.helpers import current_chunks, index

TOPICS = [
    "Quasar telescope redshift observed. Telescope quasar redshift measured. Quasar redshift telescope jets. "
    "Redshift quasar telescope data.",
    "Sourdough oven crust baked. Oven sourdough crust browned. Sourdough crust oven dough. Crust sourdough oven loaf.",
    "Sailboat harbour mainsail trimmed. Harbour sailboat mainsail tacked. Mainsail sailboat harbour wind. Sailboat "
    "mainsail harbour anchor.",
]
SEMANTIC = ChunkSettings(
    broad_tokens=400,
    broad_overlap=0,
    mid_tokens=60,
    sentence_max_tokens=40,
    chunker="semantic",
    semantic_percentile=80,
    semantic_min_tokens=8,
)


def test_the_issue_example_has_one_boundary_at_the_largest_distance():
    distances = np.array([0.3, 0.6, 0.9, 0.5])
    assert boundaries(distances, 0.7) == [3]
    assert boundaries(distances, float(np.percentile(distances, 95))) == [3]


def test_smoothing_adds_one_neighbour_on_each_side_of_a_gap():
    change = np.eye(4, dtype=np.float32)[[0, 0, 1, 1]]
    assert list(np.round(smoothed_distances(change, 0), 3)) == [0, 1, 0]
    assert smoothed_distances(change)[1] == pytest.approx(1.0)  # a real change of topic stays a full distance
    odd = np.eye(4, dtype=np.float32)[[0, 0, 0, 1, 0, 0, 0]]
    assert list(np.round(smoothed_distances(odd, 0), 3)) == [0, 0, 1, 1, 0, 0]
    smooth = smoothed_distances(odd)
    assert smooth.max() < 0.5  # one odd sentence weighs less once each side has a neighbour


def test_groups_are_bounded_above_and_small_ones_join_the_nearer_neighbour():
    tokens = [10] * 6
    distances = np.array([0.1, 0.9, 0.1, 0.1, 0.8])  # topic changes before sentences 2 and 5
    assert group_sentences(tokens, distances, 0.5, 100, 1) == [(0, 2), (2, 5), (5, 6)]
    # sentence 5 alone is under the minimum: it joins (2, 5), across the smaller distance it has
    assert group_sentences(tokens, distances, 0.5, 100, 15) == [(0, 2), (2, 6)]
    # the maximum wins over the boundaries
    assert all(sum(tokens[a:b]) <= 20 for a, b in group_sentences(tokens, np.zeros(5), 0.5, 20, 1))
    # one or two sentences: fixed windows
    assert group_sentences([10, 10], np.array([0.9]), 0.5, 100, 1) == [(0, 2)]


def test_a_run_starts_at_a_later_clause_only_when_its_whole_sentence_does_not_fit():
    tokens = [10] * 6
    distances = np.array([0.1, 0.9, 0.1, 0.1, 0.8])  # topic changes before sentences 2 and 5 ...
    joined = [False, False, True, False, False, True]  # ... which are later clauses of sentences 1 and 4
    assert group_sentences(tokens, distances, 0.5, 100, 1, joined=joined) == [(0, 6)]
    assert boundaries(distances, 0.5, joined) == [] and boundaries(distances, 0.5) == [2, 5]
    # the maximum moves the cut back to the sentence's start, or cuts inside one longer than the maximum
    assert group_sentences(tokens, np.zeros(5), 0.5, 25, 1, joined=joined) == [(0, 1), (1, 3), (3, 4), (4, 6)]
    assert group_sentences([10, 10, 10, 10], np.zeros(3), 0.5, 25, 1, joined=[False, False, True, True]) == [
        (0, 1),
        (1, 3),
        (3, 4),
    ]


def test_a_long_enumerated_sentence_is_parted_into_narrow_chunks_but_no_mid_starts_inside_it():
    # Each clause in words of its own, so the largest distances of the document lie between clauses.
    clauses = [
        "apples pears plums cherries grapes melons",
        "granite basalt marble slate quartz gneiss",
        "violins cellos oboes trumpets harps flutes",
        "comets nebulae quasars pulsars galaxies moons",
    ]
    sentence = "The licensee agrees that " + "; ".join(
        f"({letter}) the {words} are listed in each annex of this agreement" for letter, words in zip("abcd", clauses)
    )
    prose = ["The agreement was signed by both parties in the spring of that year."] * 3
    text = " ".join([*prose, sentence + ".", *prose])
    later = {a for a, _ in sentence_clauses(text)[3][1:]}
    assert len(later) == 3, sentence_clauses(text)[3]  # the rule parts it
    settings = SEMANTIC.model_copy(update={"semantic_percentile": 50.0, "semantic_min_tokens": 1, "mid_tokens": 200})
    [(spans, _, _)] = semantic_documents([("terms.md", text)], get_tokenizer(), settings, FakeEmbedder())
    narrow_starts = {s.start for s in spans if s.level == "narrow"}
    mid_starts = {s.start for s in spans if s.level == "mid"}
    assert later <= narrow_starts  # each clause is a narrow chunk of its own
    assert not later & mid_starts and len(mid_starts) > 1, (later, mid_starts)


def test_overrides_pick_the_percentile_by_path_and_bad_ones_are_refused():
    settings = ChunkSettings(chunker="semantic", semantic_overrides=("**/math/**=90", "glossary.md=98"))
    assert percentile_for("books/math/algebra.md", settings) == 90
    assert percentile_for("math/algebra.md", settings) == 90
    assert percentile_for("glossary.md", settings) == 98
    assert percentile_for("history.md", settings) == 95
    assert parse_override("a/*.md=97.5") == ("a/*.md", 97.5)
    for bad in ("**/math/**", "=90", "x=abc", "x=0", "x=101"):
        with pytest.raises(ValueError, match="PATTERN=PERCENTILE"):
            parse_override(bad)
    with pytest.raises(ValidationError, match="malformed semantic percentile override"):
        Settings(chunker="semantic", semantic_overrides="**/math/**")
    with pytest.raises(ValidationError, match="chunker"):
        Settings(chunker="paragraphs")
    assert Settings(semantic_overrides=" **/math/**=90 , g.md=98").chunking.semantic_overrides == (
        "**/math/**=90",
        "g.md=98",
    )


def test_mids_follow_the_topics_and_nest_their_sentences():
    text = "\n\n".join(TOPICS)
    [(spans, vectors, tokens)] = semantic_documents([("doc.md", text)], get_tokenizer(), SEMANTIC, FakeEmbedder())
    assert tokens is None  # none asked for
    mids = [s for s in spans if s.level == "mid"]
    narrow = [s for s in spans if s.level == "narrow"]
    assert len(vectors) == len(narrow)
    starts = {text.index(topic) for topic in TOPICS}
    assert starts <= {m.start for m in mids}, "each topic starts a mid chunk"
    for sentence in narrow:
        parent = mids[sentence.parent_seq]
        assert parent.start <= sentence.start and sentence.end <= parent.end
    assert all(m.token_count <= SEMANTIC.mid_tokens for m in mids)


def test_each_documents_sentences_are_embedded_in_batches_of_their_own():
    class Recording(FakeEmbedder):
        def embed(self, texts, progress=None, groups=None):
            self.seen = list(zip(texts, groups)) if groups is not None else None
            return super().embed(texts, progress, groups)

    embedder = Recording()
    documents = [("a.md", "\n\n".join(TOPICS[:2])), ("b.md", TOPICS[2])]
    semantic_documents(documents, get_tokenizer(), SEMANTIC, embedder)
    assert embedder.seen is not None, "a document's cut must not depend on the documents embedded beside it"
    group_of_text = {text: group for text, group in embedder.seen}
    assert group_of_text["Quasar telescope redshift observed."] == group_of_text["Oven sourdough crust browned."]
    assert group_of_text["Quasar telescope redshift observed."] != group_of_text["Harbour sailboat mainsail tacked."]


def test_one_sentence_documents_share_their_batches_and_cut_as_when_batched_alone():
    class Recording(FakeEmbedder):
        def embed(self, texts, progress=None, groups=None):
            self.seen = list(zip(texts, groups))
            return super().embed(texts, progress, groups)

    notes = [(f"note{n}.md", f"Note {n} records that crate {n * 7} left dock {n % 4}.") for n in range(40)]
    documents = [*notes, ("topics.md", "\n\n".join(TOPICS))]
    embedder = Recording()
    together = semantic_documents(documents, get_tokenizer(), SEMANTIC, embedder)
    group_of_text = dict(embedder.seen)
    assert len({group_of_text[text] for _, text in notes}) == 1, "one-sentence documents must share batches"
    assert group_of_text["Quasar telescope redshift observed."] != group_of_text[notes[0][1]]
    alone = [semantic_documents([doc], get_tokenizer(), SEMANTIC, FakeEmbedder())[0] for doc in documents]
    assert [spans for spans, _, _ in together] == [spans for spans, _, _ in alone]


@given(
    tokens=st.lists(st.integers(1, 6), min_size=3, max_size=12),
    distances=st.lists(st.floats(0, 2), min_size=11, max_size=11),
    threshold=st.floats(0, 2),
)
def test_sentences_under_the_minimum_together_make_one_mid_whatever_the_distances(tokens, distances, threshold):
    minimum = sum(tokens) + 1
    runs = group_sentences(tokens, np.array(distances[: len(tokens) - 1]), threshold, minimum + 10, minimum)
    assert runs == [(0, len(tokens))]


def random_cuts(text: str, settings: ChunkSettings, tries: int = 30) -> set[tuple]:
    """The distinct cuts of `text` under random sentence vectors."""
    plan = plan_document(text, get_tokenizer(), settings)
    rng = np.random.default_rng(3)
    cuts = set()
    for _ in range(tries):
        vectors = rng.normal(size=(plan.texts_count, 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cuts.add(tuple(semantic_spans(text, plan, vectors, settings, 50.0)))
    return cuts


def test_small_documents_of_several_sentences_share_batches_and_cut_alike_whatever_their_vectors():
    class Recording(FakeEmbedder):
        def embed(self, texts, progress=None, groups=None):
            self.seen = list(zip(texts, groups))
            return super().embed(texts, progress, groups)

    settings = SEMANTIC.model_copy(update={"semantic_min_tokens": 40})
    small = [(f"s{n}.md", f"Crate {n} left at noon. Dock {n % 4} was busy. The tide turned late.") for n in range(30)]
    plans = [plan_document(text, get_tokenizer(), settings) for _, text in small]
    assert all(plan.texts_count == 3 and not cut_uses_vectors(plan, settings) for plan in plans)
    assert all(len(random_cuts(text, settings)) == 1 for _, text in small)
    # The same documents over a lower minimum: their cut does follow the vectors, and they batch alone.
    low = settings.model_copy(update={"semantic_min_tokens": 2})
    assert all(cut_uses_vectors(plan_document(text, get_tokenizer(), low), low) for _, text in small)
    assert any(len(random_cuts(text, low)) > 1 for _, text in small)

    documents = [*small, ("topics.md", "\n\n".join(TOPICS))]
    embedder = Recording()
    together = semantic_documents(documents, get_tokenizer(), settings, embedder)
    group_of_text = dict(embedder.seen)
    assert (
        len({group_of_text["The tide turned late."]} | {group_of_text[f"Crate {n} left at noon."] for n in range(30)})
        == 1
    )
    assert group_of_text["Quasar telescope redshift observed."] != group_of_text["The tide turned late."]
    alone = [semantic_documents([doc], get_tokenizer(), settings, FakeEmbedder())[0] for doc in documents]
    assert [spans for spans, _, _ in together] == [spans for spans, _, _ in alone]


def test_an_index_run_reuses_the_sentence_vectors_and_the_chunker_is_part_of_the_identity(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "mixed.md").write_text("\n\n".join(TOPICS), encoding="utf-8")
    (docs / "short.md").write_text("One sentence only.", encoding="utf-8")
    embedder = FakeEmbedder()
    index(docs, tmp_path / "store", embedder, chunking=SEMANTIC)
    sentences = [c.text for c in current_chunks(tmp_path / "store").values() if c.level == "narrow"]
    # Each sentence embedded once (mid and broad vectors pooled from them); the rest are concept names of the graph.
    embedded_sentences = [text for text in embedder.texts if text in set(sentences)]
    assert sorted(embedded_sentences) == sorted(sentences), "sentences embedded once; mid and broad pooled from them"
    chunks = current_chunks(tmp_path / "store")
    assert any(c.level == "mid" and c.doc_id == "short.md" for c in chunks.values())
    snapshot = Snapshot.open(tmp_path / "store")
    assert snapshot.manifest.identity.chunking.chunker == "semantic"
    snapshot.close()
    (docs / "more.md").write_text("Another document.", encoding="utf-8")
    with pytest.raises(StoreMismatchError, match="chunker"):
        index(docs, tmp_path / "store", embedder, chunking=SEMANTIC.model_copy(update={"chunker": "fixed"}))
