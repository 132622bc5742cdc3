"""The label-free adaptation: pseudo-queries from a store's own sentences set its fusion weights."""

import dataclasses
import random

import numpy as np
import pytest

from granrag_mcp.indexing.adapt import (
    BatchVectors,
    Reference,
    adapt,
    alone_ranks,
    alone_reciprocal_rank,
    calibrated_share,
    drawn_sentences,
    fused_ranks,
    pseudo_queries,
    share_weights,
)
from granrag_mcp.indexing.fusion_shape import CUTOFF, RRF_KS, reciprocal_rank
from granrag_mcp.rerankers import load_reranker
from granrag_mcp.retrieval.ranking.model import shipped_ranker
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.adaptation import ADAPTATION_FILE, read_adaptation
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index

ANIMALS = "otter heron badger falcon salmon beaver lynx puffin walrus marmot tortoise gecko".split()
HABITATS = "river estuary forest cliff lake meadow tundra desert reef marsh glacier canyon".split()
FOODS = "crayfish minnows beetles voles krill berries roots seeds clams grasses lichens insects".split()
SEASONS = "spring summer autumn winter".split()


def nature_corpus(folder, template, seed):
    """Four documents of 30 sentences, each `template` filled with a random animal, habitat, food and season."""
    rng = random.Random(seed)
    folder.mkdir()
    for d in range(4):
        lines = []
        for _ in range(30):
            a, h, f, s = rng.choice(ANIMALS), rng.choice(HABITATS), rng.choice(FOODS), rng.choice(SEASONS)
            lines.append(template.format(a=a, h=h, f=f, s=s))
        (folder / f"nature-{d}.md").write_text(" ".join(lines))
    return folder


def prose_corpus(folder, seed=1):
    """Natural sentences with ordinary words: the embedding model understands them as well as BM25 matches them."""
    return nature_corpus(
        folder, "The {a} lives near the {h} and hunts for {f} during the {s} months before resting.", seed
    )


def code_corpus(folder, seed=2):
    """Part records told apart only by codes: a sentence is found by its codes, which the model barely reads."""
    rng = random.Random(seed)
    folder.mkdir()

    def code():
        return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2)) + str(rng.randint(1000, 9999))

    for d in range(4):
        lines = [
            f"Part {code()} ships from bin {code()} with gasket {code()} and valve {code()} under order {code()}."
            for _ in range(30)
        ]
        (folder / f"parts-{d}.md").write_text(" ".join(lines))
    return folder


class CodeBlindEmbedder(FakeEmbedder):
    """Reads words but not codes (tokens with digits), as a text model reads part numbers: a sentence's meaning
    without what tells the parts apart."""

    def _vector(self, text: str) -> np.ndarray:
        return super()._vector(" ".join(w for w in text.split() if not any(ch.isdigit() for ch in w)))


SHAPE = {
    "depths": {"rrf": {"narrow_dense": 10}, "level_narrow": {"narrow_dense": 40}},
    "rrf_ks": {"rrf": 20, "level_narrow": 30},
}


def adapted(tmp_path, corpus, embedder):
    index(corpus, tmp_path / "store", embedder)
    snapshot = Snapshot.open(tmp_path / "store")  # verifies the adaptation's checksum with the other files
    assert ADAPTATION_FILE in snapshot.manifest.files
    adaptation = read_adaptation(snapshot.folder)
    snapshot.close()
    assert adaptation is not None and adaptation.pseudo_queries >= 20
    return adaptation


def test_a_corpus_told_apart_by_codes_leans_on_bm25_more_than_one_told_apart_by_words(tmp_path):
    prose = adapted(tmp_path / "a", prose_corpus(tmp_path / "prose"), CodeBlindEmbedder())
    codes = adapted(tmp_path / "b", code_corpus(tmp_path / "codes"), CodeBlindEmbedder())
    for fusion in ("rrf", "hrr", "level_narrow"):
        assert codes.measured[fusion]["dense_mrr"] < prose.measured[fusion]["dense_mrr"], fusion
        assert codes.measured[fusion]["share"] < prose.measured[fusion]["share"], fusion
    assert codes.fusions["hrr"]["sentence_lexical"] > prose.fusions["hrr"]["sentence_lexical"]
    assert codes.fusions["rrf"]["narrow_dense"] < prose.fusions["rrf"]["narrow_dense"]
    # where the model cannot tell the records apart, reading its lists less deep costs less (their lower ranks are
    # noise), and their depth is never the deeper of the two
    shallow, usual = "10", "30"
    gains = [
        a.measured["rrf"]["mrr_by_depth"][shallow] - a.measured["rrf"]["mrr_by_depth"][usual] for a in (codes, prose)
    ]
    assert gains[0] > gains[1]
    for name in ("broad_dense", "mid_dense", "narrow_dense"):
        assert codes.depths["rrf"][name] <= prose.depths["rrf"][name], name
    for adaptation in (prose, codes):
        assert adaptation.measured["rrf"]["depth"] == adaptation.depths["rrf"]["narrow_dense"]
        assert adaptation.rrf_ks["rrf"] == adaptation.measured["rrf"]["rrf_k"] in RRF_KS


def test_pseudo_queries_are_seeded_halves_of_sentences_with_their_targets(tmp_path):
    index(prose_corpus(tmp_path / "prose"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    view = View(snapshot, FakeEmbedder())
    queries = pseudo_queries(view, 30, seed=3)
    assert len(queries) == 30 and [q.text for q in queries] == [q.text for q in pseudo_queries(view, 30, seed=3)]
    for query in queries:
        sentence = view.catalog.chunks([query.targets["narrow"]])[query.targets["narrow"]]
        assert set(query.text.split()) <= set(sentence.text.replace(".", "").split())
        assert view.ancestors([sentence.id], "mid")[sentence.id] == query.targets["mid"]
    snapshot.close()


def test_the_share_moves_with_the_dense_lists_advantage_and_a_tuned_extreme_stays():
    reference = Reference(
        "ref", {"rrf": 0.5, "level_mid": 0.0}, {"rrf": 0.8, "level_mid": 0.6}, {"rrf": 0.9, "level_mid": 0.9}
    )
    assert calibrated_share(reference, "rrf", 0.8, 0.9) == 0.5
    assert calibrated_share(reference, "rrf", 0.5, 0.9) < 0.5 < calibrated_share(reference, "rrf", 0.9, 0.9)
    assert calibrated_share(reference, "level_mid", 0.99, 0.5) == 0.0
    weights = share_weights(["rerank", "sentence_dense", "sentence_lexical", "mid_lexical"], 0.25)
    assert weights == {"rerank": 0.5, "sentence_dense": 0.5, "sentence_lexical": 1.5, "mid_lexical": 1.5}


def test_the_shipped_reference_names_a_share_for_every_fusion():
    reference = Reference.read()
    assert set(reference.shares) == {"rrf", "hrr", "level_broad", "level_mid", "level_narrow"}
    assert all(0.0 <= float(np.float64(s)) <= 1.0 for s in reference.shares.values())


def test_searches_use_the_adapted_weights_unless_the_caller_overrides_them(tmp_path):
    from granrag_mcp.retrieval.fusion import FusionRequest
    from granrag_mcp.retrieval.hrr import hrr_weights
    from granrag_mcp.retrieval.level_search import level_used, level_weights, search_level
    from granrag_mcp.retrieval.rrf import RRF_FACTORS, rrf_used, rrf_weights, search_rrf
    from granrag_mcp.store.adaptation import Adaptation

    index(prose_corpus(tmp_path / "prose"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    plain = View(snapshot, FakeEmbedder())
    adaptation = Adaptation(
        {
            "rrf": {"broad_dense": 0.0, "narrow_dense": 0.0, "mid_dense": 0.0},
            "level_mid": {"mid_dense": 0.0, "mid_lexical": 2.0},
            "hrr": {"rerank": 0.5},
        }
    )
    view = View(snapshot, FakeEmbedder(), adaptation=adaptation)
    assert level_weights(plain, "mid", None) is None  # no adaptation: dense alone, as before
    assert level_weights(view, "mid", None) == {"mid_dense": 0.0, "mid_lexical": 2.0}
    assert level_weights(view, "mid", False) is None
    assert rrf_weights(plain, None, True, "mid")["mid_lexical"] == RRF_FACTORS["mid_lexical"] > 1.0
    used = rrf_weights(view, {"narrow_dense": 2.0}, True, "mid")
    assert used["broad_dense"] == 0.0 and used["narrow_dense"] == 2.0 and used["broad_lexical"] == 1.0
    assert set(rrf_weights(view, None, True, "broad")) == {
        "broad_dense",
        "broad_lexical",
        "narrow_dense",
        "narrow_lexical",
    }
    assert rrf_weights(view, None, False, "mid") == {"broad_dense": 1.0, "mid_dense": 1.0, "narrow_dense": 1.0}
    assert hrr_weights(view)["rerank"] == 0.5 and hrr_weights(view, {"rerank": 2.0})["rerank"] == 2.0
    assert rrf_used(plain, 10, FusionRequest()).rrf_k == 60 and rrf_used(plain, 10, FusionRequest()).depths == {
        name: 30 for name in rrf_weights(plain, None, True, "mid")
    }
    shaped = View(snapshot, FakeEmbedder(), adaptation=dataclasses.replace(adaptation, **SHAPE))
    for k, narrow_depth in ((5, 10), (10, 10), (20, 20)):  # the adapted depth is for ten hits, in proportion above
        used_here = rrf_used(shaped, k, FusionRequest())
        assert used_here.depths["narrow_dense"] == narrow_depth and used_here.depths["mid_lexical"] == max(30, 3 * k)
    assert rrf_used(shaped, 10, FusionRequest()).rrf_k == 20 and rrf_used(shaped, 10, FusionRequest(rrf_k=7)).rrf_k == 7
    for hit in search_rrf(shaped, "otter river crayfish", 5):  # fused with the adapted constant
        for name, contribution in hit.sources.items():
            assert contribution.fused == pytest.approx(rrf_weights(shaped)[name] / (20 + contribution.rank))
            assert name != "narrow_dense" or contribution.rank <= 10
    level = level_used(shaped, "narrow", 10, True)
    assert level is not None and level.rrf_k == 30 and level.depths == {"narrow_dense": 40, "narrow_lexical": 20}

    query = "otter river crayfish"
    lexical_only = [h.chunk.id for h in search_level(view, query, "mid", 5, lexical=None)]
    assert lexical_only == [i for i, _ in view.lexical("mid", query, 15)][:5]  # the depth search_level reads
    for hit in search_rrf(view, query, 5):  # dense lists weigh nothing: every score comes from BM25 lists
        assert hit.score == pytest.approx(sum(c.fused for n, c in hit.sources.items() if n.endswith("_lexical")))
    snapshot.close()


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_a_list_alone_ranks_as_the_fusion_of_every_list_does(share):
    rng = np.random.default_rng(3)
    lists = {
        name: [(int(i), float(30 - r)) for r, i in enumerate(rng.choice(60, size=30, replace=False))]
        for name in ("mid_dense", "mid_lexical")
    }
    alone = alone_ranks(lists, share, 60)
    assert alone[:CUTOFF] == fused_ranks(lists, share, 60)[:CUTOFF]
    assert alone == [i for i, _ in lists["mid_dense" if share else "mid_lexical"]]


@pytest.mark.parametrize("factors", [None, {"mid_dense": 2.0}])
def test_a_lists_reciprocal_rank_alone_is_that_of_its_ranks(factors):
    rng = np.random.default_rng(5)
    for _ in range(200):
        names = ("broad_dense", "mid_dense", "narrow_dense", "mid_lexical", "narrow_lexical")
        # few chunk ids, so that the lists overlap and the fused scores tie
        lists = {n: [(int(i), 1.0) for i in rng.integers(0, 25, size=rng.integers(0, 20))] for n in names}
        for share in (0.0, 1.0):
            for target in range(26):
                ranked = alone_ranks(lists, share, 60, factors)
                assert alone_reciprocal_rank(lists, share, 60, factors, target) == reciprocal_rank(ranked, target)


def test_batch_vectors_hand_out_the_batch_and_embed_other_texts():
    inner = FakeEmbedder()
    batch = BatchVectors(inner, ["first query", "second query"])
    embedded = inner.texts_embedded
    vector = batch.embed(["second query"])[0]
    assert inner.texts_embedded == embedded  # from the batch, not the model
    assert np.array_equal(vector, FakeEmbedder().embed(["second query"])[0])
    assert np.array_equal(batch.embed(["a new text"]), FakeEmbedder().embed(["a new text"]))
    assert inner.texts_embedded == embedded + 1


@pytest.mark.parametrize("adapts", [False, True])
def test_the_rankers_factor_is_measured_only_for_a_ranker_that_takes_it(tmp_path, adapts):
    index(prose_corpus(tmp_path / "prose"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    embedder = FakeEmbedder()
    ranker = dataclasses.replace(shipped_ranker(False), adapts_reliance=adapts)
    view = View(snapshot, embedder, load_reranker("embedding", embedder), candidate_ranker=ranker)
    adaptation = adapt(view, n=40)
    snapshot.close()
    assert ("ranker_mrr" in adaptation.measured) is adapts
    if not adapts:
        assert adaptation.ranker_dense_scale == 1.0


def test_a_mix_below_one_of_its_own_lists_gives_way_to_it_and_only_to_its_own_levels_lists():
    from granrag_mcp.indexing.adapt import never_below_parts, own_level_lists
    from granrag_mcp.retrieval.rrf import RRF_LISTS

    mix = np.array([1.0, 0.5, 0.0] * 2)
    tie = {"a": np.array([1.0, 0.5, 0.0] * 2), "b": np.array([0.0, 0.5, 0.5] * 2)}
    assert never_below_parts(mix, tie) is None
    assert never_below_parts(mix, {"a": np.array([1.0, 1.0, 0.0] * 2), "b": np.array([1.0, 1.0, 0.5] * 2)}) == "b"
    assert never_below_parts(mix, {}) is None
    assert own_level_lists("rrf", RRF_LISTS) == ("mid_dense", "mid_lexical")  # the level it returns
    assert own_level_lists("level_narrow", ("narrow_dense", "narrow_lexical")) == ("narrow_dense", "narrow_lexical")


def test_query_forms_cut_seeded_short_queries_from_a_sentences_words():
    from granrag_mcp.indexing.adapt import QUERY_FORMS

    words = [f"w{i}" for i in range(20)]
    half = QUERY_FORMS["half"].words(words, np.random.default_rng(0))
    assert len(half) == 10 and half == sorted(half, key=words.index)  # in the sentence's order
    short = QUERY_FORMS["short"].words(words, np.random.default_rng(0))
    assert len(short) == 5 and set(short) <= set(words)
    assert QUERY_FORMS["short"].words(words, np.random.default_rng(0)) == short
    assert len(QUERY_FORMS["few"].words(words[:6], np.random.default_rng(1))) == 3


def test_searches_inside_chosen_documents_read_the_weights_adapted_for_them(tmp_path):
    from granrag_mcp.retrieval.filters import DocFilter
    from granrag_mcp.retrieval.level_search import level_weights
    from granrag_mcp.retrieval.rrf import rrf_weights
    from granrag_mcp.store.adaptation import Adaptation

    index(prose_corpus(tmp_path / "prose"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    adaptation = Adaptation(
        {
            "rrf": {"mid_lexical": 16.0},
            "level_mid": {"mid_dense": 1.0, "mid_lexical": 1.0},
            "level_mid@within": {"mid_dense": 0.0, "mid_lexical": 1.0},
        }
    )
    view = View(snapshot, FakeEmbedder(), adaptation=adaptation)
    doc_id = snapshot.catalog.documents()[0].doc_id
    assert level_weights(view, "mid", None) == {"mid_dense": 1.0, "mid_lexical": 1.0}
    for chosen in (DocFilter.of([doc_id]), DocFilter.of(doc_prefix="nature")):
        inside = view.filtered(chosen)
        assert level_weights(inside, "mid", None) == {"mid_dense": 0.0, "mid_lexical": 1.0}
        assert rrf_weights(inside)["mid_lexical"] == 16.0  # no weights of its own inside: the store's
    assert level_weights(view.filtered(DocFilter.of(language="en")), "mid", None)["mid_dense"] == 1.0
    snapshot.close()


def test_each_adapted_fusion_ranks_its_pseudo_queries_at_least_as_well_as_its_own_levels_lists(tmp_path):
    from granrag_mcp.indexing.adapt import FALLBACK_Z, own_level_lists

    adaptation = adapted(tmp_path, code_corpus(tmp_path / "codes"), CodeBlindEmbedder())
    for fusion in ("rrf", "level_broad", "level_mid", "level_narrow"):
        found = adaptation.measured[fusion]
        own = own_level_lists(fusion, list(found["alone_mrr"]))
        if found["fallback"] is None:  # not below its best list, against the reference's gain, beyond the noise
            bound = Reference.read().gain(fusion) - FALLBACK_Z * found["gain_se"]
            assert found["gain_over_best"] >= bound - 1e-4, fusion  # measured figures are rounded to 4 places
            best = max(found["alone_mrr"][name] for name in own)
            assert abs(found["mix_mrr"] - best - found["gain_over_best"]) <= 2e-4, fusion
        else:
            assert found["fallback"] in own
            assert adaptation.fusions[fusion] == {n: float(n == found["fallback"]) for n in adaptation.fusions[fusion]}
        assert "within" in found  # four documents: the pseudo-queries were asked inside their own too


def test_inside_documents_the_mix_must_beat_its_best_list_by_more_than_the_noise():
    from granrag_mcp.indexing.adapt import never_below_parts

    rng = np.random.default_rng(0)
    lexical = rng.random(200)
    slightly = {"mid_lexical": lexical}
    mix = lexical + rng.normal(0.0, 0.05, 200)
    mix += 0.001 - (mix - lexical).mean()  # above the list by 0.001 on average, give or take 0.05 a query
    assert never_below_parts(mix, slightly) is None  # across the store: above is enough
    assert never_below_parts(mix, slightly, clearly=True) == "mid_lexical"
    assert never_below_parts(mix + 0.2, slightly, clearly=True) is None


def test_inside_documents_the_list_the_mix_leans_on_replaces_it_not_the_pseudo_queries_best():
    from granrag_mcp.indexing.adapt import never_below_parts

    rng = np.random.default_rng(3)
    lexical = rng.random(200)
    lists = {"narrow_dense": lexical - 0.05, "narrow_lexical": lexical}
    mix = lexical.copy()
    assert never_below_parts(mix, lists, clearly=True) == "narrow_lexical"  # no weights: the best list
    leaning = {"narrow_dense": 1.8, "narrow_lexical": 0.2}
    assert never_below_parts(mix, lists, clearly=True, leaning=leaning) == "narrow_dense"
    assert never_below_parts(mix + 0.2, lists, clearly=True, leaning=leaning) is None  # clearly above: kept
    tied = {"narrow_dense": lexical, "narrow_lexical": lexical}  # told apart by nothing but their order
    assert never_below_parts(mix, tied, clearly=True, leaning={"narrow_dense": 0.2, "narrow_lexical": 1.8}) == (
        "narrow_lexical"
    )
    even = {"narrow_dense": 1.0, "narrow_lexical": 1.0}
    assert never_below_parts(mix, lists, clearly=True, leaning=even) == "narrow_lexical"
    # across the store the pseudo-queries' best list still replaces a mix far below it
    assert never_below_parts(mix - 0.2, lists, leaning=leaning) == "narrow_lexical"


def test_inside_documents_search_fused_follows_its_own_levels_choice(tmp_path):
    adaptation = adapted(tmp_path, code_corpus(tmp_path / "codes"), CodeBlindEmbedder())
    level_inside = adaptation.weights("level_mid", within_documents=True)
    fused_inside = adaptation.weights("rrf", within_documents=True)
    if "level_mid@within" in adaptation.fusions and adaptation.measured["rrf"]["within"]["fallback"] is None:
        assert fused_inside == {n: level_inside.get(n, 0.0) for n in adaptation.fusions["rrf"]}
    assert set(fused_inside) == set(adaptation.fusions["rrf"])


def _drawn(tmp_path, corpus, name, n=30):
    """(sentence text, pseudo-query text) of a store's seeded pseudo-queries in the order drawn, and the texts of
    all its sentences."""
    index(corpus, tmp_path / name, FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / name)
    try:
        view = View(snapshot, FakeEmbedder())
        queries = pseudo_queries(view, n, seed=5)
        sentences = view.catalog.chunks([q.targets["narrow"] for q in queries])
        every = {text for _, _, text in view.catalog.level_texts("narrow")}
        # a text held twice (the fixture's overlapping mid chunks clip some sentences into both) is one draw
        drawn = dict.fromkeys((sentences[q.targets["narrow"]].text, q.text) for q in queries)
        return list(drawn), every
    finally:
        snapshot.close()


def assert_other_draws_kept(before, after):
    """Draws on sentences both stores hold are the same, in the same order: those of `after` are the first of
    `before`'s, and only draws at the sample's edge went (as many as sentences new to `after` took)."""
    (drawn_before, texts_before), (drawn_after, texts_after) = before, after
    kept = [pair for pair in drawn_before if pair[0] in texts_after]
    others = [pair for pair in drawn_after if pair[0] in texts_before]
    assert len(others) >= 20 and others == kept[: len(others)]
    assert len(others) >= len(kept) - (len(drawn_after) - len(others))
    return [pair for pair in drawn_after if pair[0] not in texts_before]


def test_a_document_added_before_the_others_keeps_their_draws(tmp_path):
    corpus = prose_corpus(tmp_path / "prose")
    before = _drawn(tmp_path, corpus, "before")
    # sorted first, so every chunk id of the other documents shifts: a draw by position would change them all
    added = " ".join(
        f"The {a} swims past the {h} looking for {f} in deep water." for a, h, f in zip(ANIMALS, HABITATS, FOODS)
    )
    (corpus / "aaa-added.md").write_text(added)
    after = _drawn(tmp_path, corpus, "after")
    assert after[1] > before[1]  # every sentence of the other documents is still there
    assert assert_other_draws_kept(before, after)  # and the added document entered the sample


def short_corpus(folder, seed=3):
    """Short sentences with six content words each."""
    return nature_corpus(folder, "The {a} quietly hunts {f} near the {h} in {s}.", seed)


def test_a_sentence_parted_in_two_keeps_every_other_draw(tmp_path):
    corpus = short_corpus(tmp_path / "short")
    before = _drawn(tmp_path, corpus, "before")
    path = corpus / "nature-0.md"
    text = path.read_text()
    first = text.split(". ")[0] + "."
    path.write_text(text.replace(first, first.replace(" near", ". It stays near"), 1))
    after = _drawn(tmp_path, corpus, "after")
    # the parting moves the mid chunks' edges in its document, which clip a few sentences: those are changed text
    assert len(before[1] - after[1]) <= len(before[1]) // 6
    assert_other_draws_kept(before, after)


def test_the_draw_does_not_follow_the_order_of_the_chunk_ids(tmp_path):
    index(prose_corpus(tmp_path / "prose"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    view = View(snapshot, FakeEmbedder())
    drawn = [chunk_id for _, chunk_id in drawn_sentences(view, 20, seed=0)]
    assert drawn != sorted(drawn) and drawn != [chunk_id for _, chunk_id in drawn_sentences(view, 20, seed=1)]
    snapshot.close()


def test_across_the_store_a_list_replaces_the_mix_only_when_above_it_by_more_than_the_noise():
    from granrag_mcp.indexing.adapt import never_below_parts

    rng = np.random.default_rng(0)
    lexical = rng.random(200)
    mix = lexical + rng.normal(0.0, 0.05, 200)
    mix -= 0.001 + (mix - lexical).mean()  # below the list by 0.001 on average, give or take 0.05 a query
    assert never_below_parts(mix, {"mid_lexical": lexical}) is None  # within the sample's noise: not below
    assert never_below_parts(mix - 0.05, {"mid_lexical": lexical}) == "mid_lexical"
    # held to the gain the reference corpus measured: a mix 0.02 below its list where the reference's was too
    assert never_below_parts(mix - 0.02, {"mid_lexical": lexical}) == "mid_lexical"
    assert never_below_parts(mix - 0.02, {"mid_lexical": lexical}, expected=-0.02) is None


def test_a_share_keeps_the_reference_unless_the_calibration_moves_it_beyond_its_noise():
    from granrag_mcp.indexing.adapt import noise_aware_share

    reference = Reference("ref", {"rrf": 0.5}, {"rrf": 0.8}, {"rrf": 0.9})
    rng = np.random.default_rng(1)

    def hits(share_hit, n=200):  # reciprocal ranks of 1 or 0 with exactly this mean
        values = np.zeros(n)
        values[: round(share_hit * n)] = 1.0
        return rng.permutation(values)

    lexical = hits(0.9)
    near = hits(0.83)  # the calibration alone rounds to 0.55, within the noise of 200 queries
    assert calibrated_share(reference, "rrf", float(near.mean()), 0.9) == 0.55
    share, found = noise_aware_share(reference, "rrf", near, lexical)
    assert share == 0.5 and 0 < found["calibrated_se"] < 0.2
    far = hits(0.4)  # a corpus whose dense lists are far weaker than the reference's
    share, _ = noise_aware_share(reference, "rrf", far, lexical)
    assert share == calibrated_share(reference, "rrf", 0.4, 0.9) < 0.3


def test_a_store_reads_the_reference_tuned_with_its_own_model():
    from granrag_mcp.indexing.adapt import MODEL_REFERENCES

    english = Reference.read()
    assert Reference.read(model="sentence-transformers/all-MiniLM-L6-v2") == english
    assert Reference.read(model="another/model") == english  # a model without its own reads the English one's
    for model in MODEL_REFERENCES:
        own = Reference.read(model=model)
        assert own != english and set(own.shares) == set(english.shares)
        assert set(own.dense_mrr) == set(own.lexical_mrr) == set(english.dense_mrr)
        # the fusions tuned with neither model keep the English reference's figures
        for fusion in ("rrf", "hrr"):
            assert own.shares[fusion] == english.shares[fusion]
            assert own.dense_mrr[fusion] == english.dense_mrr[fusion] and own.gain(fusion) == english.gain(fusion)
        assert own.rrf_k("rrf") == english.rrf_k("rrf")


def test_the_multilingual_store_adapts_against_its_models_reference(tmp_path):
    from granrag_mcp.settings import MULTILINGUAL_MODEL

    index(prose_corpus(tmp_path / "prose"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    view = View(snapshot, FakeEmbedder())
    assert adapt(view).measured["reference"] == Reference.read().corpus
    identity = snapshot.manifest.identity.model_copy(update={"model": MULTILINGUAL_MODEL})
    manifest = snapshot.manifest.model_copy(update={"identity": identity})
    multilingual = Snapshot(snapshot.folder.parent, snapshot.folder, manifest)  # the same text, the other model's
    found = adapt(View(multilingual, FakeEmbedder())).measured["reference"]
    assert found == Reference.read(model=MULTILINGUAL_MODEL).corpus
    multilingual.close()
    snapshot.close()


def test_the_shipped_reference_names_the_rrf_constant_of_every_fusion_that_mixes_two_kinds_of_list():
    from granrag_mcp.indexing.adapt import MODEL_REFERENCES
    from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K
    from granrag_mcp.retrieval.hrr import HRR_FUSION

    for model in (None, *MODEL_REFERENCES):
        reference = Reference.read(model=model)
        mixing = [f for f, share in reference.shares.items() if 0.0 < share < 1.0 and f != HRR_FUSION]
        assert all(fusion in reference.rrf_ks for fusion in mixing), model
    reference = Reference.read()
    # hrr's constant is its own (HRR_RRF_K), not adapted; a share of 0 or 1 weighs one kind of list alone
    mixing = [f for f, share in reference.shares.items() if 0.0 < share < 1.0 and f != HRR_FUSION]
    assert sorted(mixing) == ["level_narrow", "rrf"]
    assert all(fusion in reference.rrf_ks for fusion in mixing)
    assert reference.rrf_k("rrf") == 20 and reference.rrf_k("level_narrow") == DEFAULT_RRF_K
    assert Reference("ref", {}, {}, {}).rrf_k("rrf") == DEFAULT_RRF_K


def test_the_rrf_constant_stays_at_its_default_unless_another_beats_it_beyond_the_noise():
    from granrag_mcp.indexing.fusion_shape import choose

    rng = np.random.default_rng(2)
    base = rng.random(200)
    by_k = {60: base - 0.05, 30: base + rng.normal(0.0, 0.05, 200), 20: base}
    assert choose(by_k, 20)[0] == 20  # 30 may be a little better on this sample, within its noise
    assert choose({**by_k, 30: base + 0.05}, 20)[0] == 30
