import json

import numpy as np
import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.rerankers import SentenceWindowReranker
from granrag_mcp.retrieval.candidate_ranking import hrr_table, rank_hrr_candidates
from granrag_mcp.retrieval.hrr import hrr_candidates, hrr_search
from granrag_mcp.retrieval.ranking.features import (
    ALL_FEATURES,
    INSIDE_FEATURES,
    RANK_FEATURES,
    RANKED_FEATURES,
    TOKEN_FEATURES,
    QueryTerms,
    Sentences,
    inside_features,
    order_by,
    rank_features,
    stem,
)
from granrag_mcp.retrieval.ranking.model import LinearModel, read_ranker, shipped_ranker
from granrag_mcp.retrieval.rerank import rerank
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder, FakeTokenEmbedder
from tests.helpers import index, write_corpus


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranker")
    index(write_corpus(root / "docs"), root / "store")
    embedder = FakeEmbedder()
    snapshot = Snapshot.open(root / "store")
    reranker = SentenceWindowReranker(embedder)
    return View(snapshot, embedder, reranker), View(snapshot, embedder, reranker, candidate_ranker=shipped_ranker())


def test_stemming_folds_word_forms_together():
    assert stem(["running", "runs", "run"]) == ["run", "run", "run"]
    assert stem(["observed", "observing"]) == ["observ", "observ"]


def test_the_shipped_ranker_reads_and_round_trips(tmp_path):
    ranker = shipped_ranker()
    assert set(ranker.hrr.features) <= set(ALL_FEATURES) and set(ranker.chunks.features) <= set(INSIDE_FEATURES)
    assert (
        ranker.cross_validation["hrr"]["fitted"]["broad MRR@5"] > ranker.cross_validation["hrr"]["HRR"]["broad MRR@5"]
    )
    ranker.write(tmp_path / "r.json")
    again = read_ranker(tmp_path / "r.json")
    assert again.name == ranker.name and np.array_equal(again.hrr.coef, ranker.hrr.coef)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.update(format="other"),
        lambda d: d["models"]["hrr"].update(coef=[1.0]),
        lambda d: d["models"]["chunks"]["features"].append("no_such_feature"),
        lambda d: d["models"]["hrr"].update(scale=[0.0] * len(d["models"]["hrr"]["features"])),
    ],
)
def test_a_damaged_ranker_file_is_refused_with_what_to_do(tmp_path, damage):
    data = shipped_ranker().to_json()
    damage(data)
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match="--fit-ranker"):
        read_ranker(tmp_path / "r.json")


def test_a_linear_model_scores_standardised_features():
    model = LinearModel(
        ("cover_1", "bm25_best"), np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.array([1.0, -1.0]), 0.5
    )
    scores = model.score({"cover_1": np.array([3.0, 1.0]), "bm25_best": np.array([0.0, 2.0]), "other": np.zeros(2)})
    assert scores.tolist() == [1.5, -1.5]


def test_equal_scores_keep_the_given_order():
    assert order_by(np.array([0.2, 0.5, 0.2, 0.5])) == [1, 3, 0, 2]


def _sentences(texts_per_candidate):
    texts = [t for texts in texts_per_candidate for t in texts]
    bounds, begin = [], 0
    for texts_of in texts_per_candidate:
        bounds.append((begin, begin + len(texts_of)))
        begin += len(texts_of)
    vectors = np.eye(len(texts), 4, dtype=np.float32)
    return Sentences(texts, vectors, np.ones(len(texts), np.float32), bounds)


def test_coverage_counts_query_words_in_one_to_three_consecutive_sentences():
    query = QueryTerms(
        stem(["telescop", "quasar", "redshift"]), np.array([1.0, 2.0, 1.0]), [tuple(stem(["quasar", "redshift"]))]
    )
    sentences = _sentences(
        [
            ["The telescopes saw a quasar and its redshift.", "Nothing else."],  # all three in one sentence
            ["The telescope was new.", "A quasar shone.", "Its redshift was large."],  # spread over three
            ["Bread rises in the oven."],  # none
        ]
    )
    out = inside_features(query, np.array([1, 0, 0, 0], np.float32), sentences, [0.3, 0.2, 0.1])
    assert out["cover_1"].tolist() == [1.0, 0.5, 0.0]
    assert out["cover_2"][1] == 0.75 and out["cover_3"][1] == 1.0 and out["cover_all"][1] == 1.0
    assert out["bigram_best"].tolist() == [1.0, 0.0, 0.0]  # stopwords dropped: "quasar and its redshift" is a pair
    assert out["bm25_best"][0] > out["bm25_best"][1] > out["bm25_best"][2] == 0.0
    assert out["cover_gap"].tolist() == [0.0, 0.0, -1.0]
    assert out["rerank_gap"].tolist() == pytest.approx([0.0, -0.1, -0.2])
    assert out["dense_best"].tolist() == [1.0, 0.0, 0.0] and out["sentences"].tolist() == [2, 3, 1]


def test_rank_features_give_each_signal_its_order_among_the_query_s_candidates():
    table = {name: np.array([0.1, 0.7, 0.7, -2.0]) for name in RANKED_FEATURES}
    table["bm25_best"] = np.array([3.0, 0.0, 9.0, 1.0])
    out = rank_features(table)
    assert set(out) == set(RANK_FEATURES)
    assert out["rank_dense_best"].tolist() == [1 / 3, 1.0, 0.5, 0.25]  # equal values: the earlier candidate first
    assert out["rank_bm25_best"].tolist() == [0.5, 0.25, 1.0, 1 / 3]
    # A monotone change of scale, as between corpora, leaves them as they are.
    scaled = rank_features({**table, "bm25_best": 10.0 * table["bm25_best"] - 4.0})
    assert scaled["rank_bm25_best"].tolist() == out["rank_bm25_best"].tolist()


def test_the_shipped_ranker_reads_rank_features_from_hrr_s_table(views):
    plain, ranked = views
    assert set(RANK_FEATURES) <= set(shipped_ranker().hrr.features)
    query = "knead the dough overnight"
    hits = hrr_candidates(plain, query)[1][:5]
    table = hrr_table(plain, query, plain.query_vector(query), hits)
    best = int(np.argmax(table["cover_all"]))
    assert table["rank_cover_all"][best] == 1.0 and sorted(table["rank_cover_all"])[0] == 1 / len(hits)


def test_word_pairs_count_when_adjacent():
    query = QueryTerms(stem(["quasar", "redshift"]), np.array([1.0, 1.0]), [tuple(stem(["quasar", "redshift"]))])
    out = inside_features(
        query, np.zeros(4, np.float32), _sentences([["The quasar redshift."], ["Redshift, quasar."]]), [0.0, 0.0]
    )
    assert out["bigram_best"].tolist() == [1.0, 0.0]


def test_hrr_with_the_ranker_reorders_its_candidates_and_says_so(views):
    plain, ranked = views
    name, before = hrr_candidates(plain, "knead the dough overnight")
    ranked_name, after = hrr_candidates(ranked, "knead the dough overnight")
    assert name == plain.reranker.name and ranked_name == f"{shipped_ranker().name}+{name}"
    assert sorted(h.chunk.id for h in before) == sorted(h.chunk.id for h in after)
    assert [h.score for h in after] == sorted((h.score for h in after), reverse=True)
    assert "dough" in after[0].chunk.text.lower()
    result = hrr_search(ranked, "knead the dough overnight", k=3)
    assert result.reranker == ranked_name and result.hits[0].chunk.doc_id == "cooking.txt"
    assert hrr_candidates(ranked, "knead the dough overnight", ranked=False)[1][0].chunk.id == before[0].chunk.id


def test_hrr_reads_each_chunk_and_sentence_vector_once_and_ranks_as_fresh_reads_would(views, monkeypatch):
    plain, ranked = views
    queries = ["knead the dough overnight", "sailors trimmed the mainsail", "the comet's tail in spring"]
    fresh = {}
    for query in queries:  # the ranker's order from reads of its own, as a separate stage would read them
        vector = plain.query_vector(query)
        candidates = hrr_candidates(ranked, query, ranked=False)[1]
        fresh[query] = [
            (h.chunk.id, h.score) for h in rank_hrr_candidates(ranked, query, vector, candidates, shipped_ranker())
        ]
    chunk_reads, vector_reads = [], []
    catalog_chunks, sentence_index = ranked.catalog.chunks, ranked.snapshot.vectors["narrow"]
    reconstruct = sentence_index.reconstruct
    monkeypatch.setattr(ranked.catalog, "chunks", lambda ids: chunk_reads.extend(ids) or catalog_chunks(ids))
    monkeypatch.setattr(sentence_index, "reconstruct", lambda ids: vector_reads.extend(ids) or reconstruct(ids))
    for query in queries:
        chunk_reads.clear()
        vector_reads.clear()
        shared = [(h.chunk.id, h.score) for h in hrr_candidates(ranked, query)[1]]
        assert shared == fresh[query]
        assert vector_reads and len(vector_reads) == len(set(vector_reads))
        assert len(chunk_reads) == len(set(chunk_reads))
    chunk_reads.clear()
    hrr_search(ranked, queries[0])
    assert len(chunk_reads) == len(set(chunk_reads))


def test_rerank_offers_the_ranker_and_the_reranker_alone(views):
    plain, ranked = views
    mids = [m.public_id for m in plain.snapshot.catalog.chunks_of_level("mid")]
    by_ranker = rerank(ranked, "sailors trimmed the mainsail", mids, top_n=3)
    assert by_ranker.reranker.startswith(shipped_ranker().name) and "mainsail" in by_ranker.hits[0].chunk.text
    assert all(0.0 < h.score < 1.0 for h in by_ranker.hits)
    alone = rerank(ranked, "sailors trimmed the mainsail", mids, top_n=3, method="reranker")
    assert alone.reranker == plain.reranker.name
    assert rerank(plain, "sailors trimmed the mainsail", mids, top_n=3).reranker == plain.reranker.name
    with pytest.raises(InvalidInputError, match="method='reranker'"):
        rerank(plain, "sailors", mids, top_n=3, method="candidate-ranker")


@pytest.fixture(scope="module")
def token_view(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranker-tokens")
    index(write_corpus(root / "docs"), root / "store", FakeTokenEmbedder(), token_vector_dims=64)
    embedder = FakeTokenEmbedder()
    snapshot = Snapshot.open(root / "store")
    return View(snapshot, embedder, SentenceWindowReranker(embedder), candidate_ranker=shipped_ranker(tokens=True))


def test_the_shipped_maxsim_ranker_adds_token_features():
    ranker = shipped_ranker(tokens=True)
    assert ranker.hrr.needs_tokens and ranker.chunks.needs_tokens and not shipped_ranker().hrr.needs_tokens
    assert set(TOKEN_FEATURES) <= set(ranker.hrr.features)


def test_hrr_with_token_vectors_uses_maxsim_from_the_forward_that_embedded_the_query(token_view):
    embedder = token_view.embedder
    forwards = embedder.token_forwards
    name, hits = hrr_candidates(token_view, "knead the dough overnight")
    assert name.startswith(shipped_ranker(tokens=True).name) and "dough" in hits[0].chunk.text.lower()
    # The query's vector and token vectors came from one forward; no separate `embed` of the query ran.
    assert embedder.token_forwards == forwards + 1 and "knead the dough overnight" not in embedder.texts
    table = hrr_table(
        token_view, "knead the dough overnight", token_view.query_vector("knead the dough overnight"), hits, tokens=True
    )
    best = int(np.argmax(table["maxsim_best"]))
    assert "dough" in hits[best].chunk.text.lower() and table["maxsim_gap"].max() == 0.0


def test_a_maxsim_ranker_on_a_store_without_token_vectors_says_what_to_do(views):
    plain, _ = views
    view = View(plain.snapshot, plain.embedder, plain.reranker, candidate_ranker=shipped_ranker(tokens=True))
    with pytest.raises(InvalidInputError, match="--token-vectors"):
        hrr_candidates(view, "knead the dough overnight")
