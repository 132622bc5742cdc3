import pytest

from granrag_mcp.errors import InvalidInputError, UnknownChunkError
from granrag_mcp.records import MAX_QUERY_CHARS, format_chunk_id
from granrag_mcp.rerankers import EmbeddingReranker, SentenceWindowReranker
from granrag_mcp.retrieval.hrr import hrr_candidates, hrr_search
from granrag_mcp.retrieval.level_search import search_level
from granrag_mcp.retrieval.parents import find_parents
from granrag_mcp.retrieval.rerank import rerank
from granrag_mcp.retrieval.rrf import search_rrf
from granrag_mcp.retrieval.spans import overlap_share
from granrag_mcp.retrieval.union import search_union
from granrag_mcp.retrieval.view import View
from granrag_mcp.retrieval.window import expand_window
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus

LONG_DOC = " ".join(
    f"Section {i} explains how the {w} works in practice."
    for i, w in enumerate(
        [
            "pump",
            "valve",
            "boiler",
            "turbine",
            "piston",
            "gearbox",
            "crankshaft",
            "radiator",
            "compressor",
            "condenser",
            "injector",
            "alternator",
            "flywheel",
            "carburettor",
            "camshaft",
            "manifold",
        ]
        * 2
    )
)


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieval")
    docs = write_corpus(root / "docs")
    (docs / "engine.md").write_text(LONG_DOC)
    index(docs, root / "store")
    embedder = FakeEmbedder()
    return View(Snapshot.open(root / "store"), embedder, EmbeddingReranker(embedder))


def engine_chunks(view, level):
    return [c for c in view.snapshot.catalog.chunks_of_level(level) if c.doc_id == "engine.md"]


def test_the_long_document_has_overlapping_broad_chunks(view):
    broad = engine_chunks(view, "broad")
    assert len(broad) >= 3
    assert all(a.end > b.start for a, b in zip(broad, broad[1:]))


def test_search_finds_the_passage_and_never_returns_copies_of_one_span(view):
    hits = search_level(view, "turbine works", "narrow", 10)
    assert "turbine" in hits[0].chunk.text
    for i, a in enumerate(hits):
        for b in hits[i + 1 :]:
            assert overlap_share(a.chunk, b.chunk) < 0.5


def test_sentences_duplicated_by_the_overlap_exist_but_come_back_once(view):
    narrow = engine_chunks(view, "narrow")
    spans = [(c.start, c.end) for c in narrow]
    duplicated = {s for s in spans if spans.count(s) > 1}
    assert duplicated, "the corpus should contain sentences repeated by the broad overlap"
    start, end = next(iter(duplicated))
    text = next(c.text for c in narrow if (c.start, c.end) == (start, end))
    hits = search_level(view, text, "narrow", 10)
    assert sum((h.chunk.start, h.chunk.end) == (start, end) for h in hits) == 1


def test_k_is_capped_and_levels_are_respected(view):
    for level in ("broad", "mid", "narrow"):
        hits = search_level(view, "sourdough bread oven", level, 100)
        assert hits and all(h.chunk.level == level for h in hits)
        assert len(hits) <= view.snapshot.manifest.counts[level]


def test_lexical_search_fuses_and_reports_both_lists(view):
    hits = search_level(view, "gearbox", "mid", 5, lexical=True)
    assert "gearbox" in hits[0].chunk.text
    assert set(hits[0].sources) <= {"mid_dense", "mid_lexical"} and hits[0].sources


def test_union_never_repeats_a_narrow_hit_inside_a_returned_broad_hit(view):
    mixed = 0
    for query in ("how the boiler works", "telescope redshift", "anchor sandy bay", "dough rise overnight"):
        hits = search_union(view, query, 4)
        broads = [h.chunk for h in hits if h.chunk.level == "broad"]
        narrows = [h.chunk for h in hits if h.chunk.level == "narrow"]
        mixed += bool(broads and narrows)
        for n in narrows:
            assert not any(b.doc_id == n.doc_id and b.start <= n.start and n.end <= b.end for b in broads)
        for level in ("broad", "narrow"):
            scores = [h.score for h in hits if h.chunk.level == level]
            assert scores == sorted(scores, reverse=True)
    assert mixed, "some query should unite hits of both granularities"


@pytest.mark.parametrize("level", ["broad", "mid", "narrow"])
def test_rrf_maps_every_list_to_the_requested_level(view, level):
    hits = search_rrf(view, "telescope quasar", 5, level=level)
    assert hits and all(h.chunk.level == level for h in hits)
    assert "astronomy" in hits[0].chunk.doc_id
    for hit in hits:
        assert abs(hit.score - sum(c.fused for c in hit.sources.values())) < 1e-9
        own = {f"{level}_dense", f"{level}_lexical"} if level == "mid" else set()  # a middle level adds its own
        assert set(hit.sources) <= {"broad_dense", "broad_lexical", "narrow_dense", "narrow_lexical"} | own


def test_rrf_weights_change_the_contributions_and_unknown_names_are_refused(view):
    plain = search_rrf(view, "anchor harbour", 5, level="mid")
    no_lexical = {"broad_lexical": 0, "mid_lexical": 0, "narrow_lexical": 0}
    dense_only = search_rrf(view, "anchor harbour", 5, level="mid", weights=no_lexical)
    for hit in dense_only:
        for name, contribution in hit.sources.items():
            if name.endswith("lexical"):
                assert contribution.fused == 0
    assert plain[0].score != dense_only[0].score
    with pytest.raises(InvalidInputError, match="unknown weight"):
        search_rrf(view, "x", 5, weights={"mid_sparse": 1.0})


def test_expand_window_returns_neighbours_in_document_order_clipped_at_the_ends(view):
    narrow = sorted({(c.start, c.end): c for c in engine_chunks(view, "narrow")}.values(), key=lambda c: c.start)
    first, middle = narrow[0], narrow[len(narrow) // 2]
    window = expand_window(view, first.public_id, before=2, after=2)
    assert window.members[0].id == first.id and len(window.members) == 3
    window = expand_window(view, middle.public_id, before=3, after=3)
    starts = [m.start for m in window.members]
    assert starts == sorted(starts) and len(window.members) == 7
    assert middle.id in [m.id for m in window.members]
    text = view.snapshot.catalog.document_text("engine.md")
    assert window.text == text[window.start : window.end]
    for a, b in zip(window.members, window.members[1:]):
        assert overlap_share(a, b) < 0.5


def test_expand_window_at_mid_level_covers_the_overlap_once(view):
    mids = engine_chunks(view, "mid")
    window = expand_window(view, mids[len(mids) // 2].public_id, before=20, after=20)
    text = view.snapshot.catalog.document_text("engine.md")
    assert window.start == 0 and window.end == len(text.rstrip()) or window.end == len(text)
    assert window.text == text[window.start : window.end]


def test_get_parent_deduplicates_and_counts_children(view):
    mids = engine_chunks(view, "mid")
    parent_id = mids[0].parent_id
    siblings = [m for m in mids if m.parent_id == parent_id]
    result = find_parents(view, [m.public_id for m in siblings[:2]])
    assert len(result.parents) == 1
    group = result.parents[0]
    assert group.parent.id == parent_id and group.children_total == len(siblings)
    assert group.children_hit == [m.public_id for m in siblings[:2]]


def test_auto_merging_replaces_children_only_above_the_threshold(view):
    mids = engine_chunks(view, "mid")
    by_parent = {}
    for m in mids:
        by_parent.setdefault(m.parent_id, []).append(m)
    full, other = [group for group in by_parent.values() if len(group) >= 2][:2]
    ids = [m.public_id for m in full] + [other[0].public_id]
    result = find_parents(view, ids, merge_threshold=0.6)
    assert [g.parent.id for g in result.parents] == [full[0].parent_id]
    assert [c.id for c in result.kept] == [other[0].id]


def test_get_parent_of_a_broad_chunk_is_an_error(view):
    broad = engine_chunks(view, "broad")[0]
    with pytest.raises(InvalidInputError, match="no parent"):
        find_parents(view, [broad.public_id])


def test_rerank_sorts_and_names_the_reranker(view):
    mids = view.snapshot.catalog.chunks_of_level("mid")
    result = rerank(view, "sailboat mainsail wind", [m.public_id for m in mids], top_n=3)
    assert result.reranker == "embedding-fallback:fake-hash-embedder"
    assert len(result.hits) == 3 and "sail" in result.hits[0].chunk.text
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_hrr_returns_broad_parents_with_their_mid_evidence(view):
    result = hrr_search(view, "knead the dough", k=3)
    assert result.hits and all(h.chunk.level == "broad" for h in result.hits)
    assert result.hits[0].chunk.doc_id == "cooking.txt"
    for hit in result.hits:
        evidence = view.resolve(hit.evidence, level="mid")
        assert all(m.parent_id == hit.chunk.id for m in evidence)


@pytest.mark.parametrize("bad", ["", "broad", "mid:abc", "leaf:3", "mid:-1", "narrow:1 2"])
def test_malformed_ids_get_an_error_that_says_what_ids_look_like(view, bad):
    with pytest.raises(InvalidInputError, match="ids look like"):
        view.get_chunks([bad])


def test_unknown_ids_and_ids_of_another_level_are_refused(view):
    with pytest.raises(UnknownChunkError, match="search again"):
        view.get_chunks([format_chunk_id("mid", 999999)])
    narrow = view.snapshot.catalog.chunks_of_level("narrow")[0]
    with pytest.raises(UnknownChunkError):
        view.get_chunks([f"mid:{narrow.id}"])
    with pytest.raises(InvalidInputError, match="is a narrow chunk; this needs mid"):
        view.resolve([narrow.public_id], level="mid")


@pytest.mark.parametrize("query", ["", "   \n", "x" * (MAX_QUERY_CHARS + 1)])
def test_bad_queries_are_refused(view, query):
    with pytest.raises(InvalidInputError):
        search_level(view, query, "narrow", 5)


def test_list_documents_filters_by_prefix_and_pages(view):
    docs, total = view.list_documents(None, 2, 0)
    assert total == 4 and [d.doc_id for d in docs] == ["astronomy.md", "cooking.txt"]
    docs, total = view.list_documents("notes/", 10, 0)
    assert total == 1 and docs[0].doc_id == "notes/sailing.md"
    docs, _ = view.list_documents(None, 10, 3)
    assert [d.doc_id for d in docs] == ["notes/sailing.md"]


def test_hrr_mid_stage_fuses_the_reranker_with_sentence_and_lexical_evidence(view):
    reranker, mids = hrr_candidates(view, "sailors trimmed the mainsail", rerank_n=5)
    assert reranker.startswith("embedding-fallback")  # the view of this module uses EmbeddingReranker
    assert mids[0].chunk.doc_id == "notes/sailing.md" and mids[0].chunk.level == "mid"
    assert {"rerank", "sentence_dense"} <= set(mids[0].sources)
    assert set().union(*(h.sources for h in mids)) <= {"rerank", "sentence_dense", "sentence_lexical", "mid_lexical"}
    assert sum(1 for h in mids if "rerank" in h.sources) <= 5
    with pytest.raises(InvalidInputError, match="unknown weight"):
        hrr_candidates(view, "x", weights={"broad_dense": 1})


def test_sentence_vectors_are_the_stored_vectors_of_each_chunks_sentences_in_order(view):
    broad = engine_chunks(view, "broad")[0]
    mid = engine_chunks(view, "mid")[1]
    narrow = engine_chunks(view, "narrow")[3]
    groups = view.sentence_vectors([mid, narrow, broad])
    narrow_of_engine = engine_chunks(view, "narrow")
    mids_of_broad = {m.id for m in engine_chunks(view, "mid") if m.parent_id == broad.id}
    expected = [
        [n for n in narrow_of_engine if n.parent_id == mid.id],
        [narrow],
        [n for n in narrow_of_engine if n.parent_id in mids_of_broad],
    ]
    for (vectors, tokens), sentences in zip(groups, expected):
        sentences = sorted(sentences, key=lambda n: n.seq)
        assert len(vectors) == len(sentences) > 0
        assert list(tokens) == [n.token_count for n in sentences]
        fresh = view.embedder.embed([n.text for n in sentences])
        assert (vectors * fresh).sum(axis=1).min() > 0.999  # the stored vector of each sentence, in order


def test_sentence_window_reranker_scores_indexed_chunks_from_stored_vectors(view):
    reranker = SentenceWindowReranker(view.embedder)
    sentence_view = View(view.snapshot, view.embedder, reranker)
    mids = view.snapshot.catalog.chunks_of_level("mid")
    embedded_before = view.embedder.calls
    result = rerank(sentence_view, "sailboat mainsail wind", [m.public_id for m in mids], top_n=3)
    assert view.embedder.calls - embedded_before <= 1  # the query at most: passages are not embedded
    assert result.reranker == "sentence-windows-fallback:fake-hash-embedder"
    assert "sail" in result.hits[0].chunk.text
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_ancestors_and_descendants_follow_the_stored_hierarchy(view):
    narrow = engine_chunks(view, "narrow")
    catalog = view.snapshot.catalog
    chunks = catalog.chunks([c.id for c in narrow] + [c.parent_id for c in narrow])
    up = view.ancestors([c.id for c in narrow] + [10**9], "broad")  # an unknown id is left out
    for c in narrow:
        mid = chunks[c.parent_id]
        assert view.ancestors([c.id], "mid") == {c.id: mid.id}
        assert up[c.id] == mid.parent_id
        assert catalog.outline([c.id, mid.id]) == {c.id: ("narrow", mid.id), mid.id: ("mid", mid.parent_id)}
    assert 10**9 not in up
    broad = engine_chunks(view, "broad")
    assert view.ancestors([b.id for b in broad], "mid") == {}  # nothing is above the top level
    members = view.descendants([b.id for b in broad], ["broad"] * len(broad), "narrow")
    for b, ids in zip(broad, members):
        assert ids and all(up[i] == b.id for i in ids)


def test_a_window_is_the_exact_document_text_even_with_multibyte_characters(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    text = " ".join(f"Zürich ünd 漢字 🙂 sentence {i} ends here." for i in range(40))
    (docs / "wide.md").write_text(text, encoding="utf-8")
    index(docs, tmp_path / "store")
    view = View(Snapshot.open(tmp_path / "store"), FakeEmbedder())
    catalog = view.snapshot.catalog
    stored = catalog.document_text("wide.md")
    for chunk in catalog.chunks_of_level("narrow")[::7]:
        window = expand_window(view, chunk.public_id, 2, 3)
        assert window.text == stored[window.start : window.end]
        assert chunk.text in window.text
    assert catalog.document_slice("wide.md", 5, 5) == "" and catalog.document_slice("missing.md", 0, 3) is None
