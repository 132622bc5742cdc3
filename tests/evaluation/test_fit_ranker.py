import numpy as np

from granrag_mcp.evaluation.fit_ranker import Dataset, beats, cross_validate, fit_model, fit_ranker, ranks
from granrag_mcp.retrieval.ranking.features import (
    ALL_FEATURES,
    INSIDE_FEATURES,
    KNOWN_FEATURES,
    LIST_FEATURES,
    RANK_FEATURES,
    TOKEN_FEATURES,
)


def synthetic(questions=120, candidates=8, seed=0):
    """HRR puts the answer at a random place; the feature cover_1 tells where it is (with noise)."""
    rng = np.random.default_rng(seed)
    rows, question, position, hit = [], [], [], []
    for q in range(questions):
        answer = int(rng.integers(candidates))
        for p in range(candidates):
            x = rng.normal(size=len(ALL_FEATURES))
            x[ALL_FEATURES.index("cover_1")] += 3.0 if p == answer else 0.0
            rows.append(x)
            question.append(q)
            position.append(p)
            hit.append(p == answer)
    n = len(hit)
    return Dataset(
        np.array(rows),
        np.array(question, np.int32),
        np.array(position, np.int32),
        np.array(hit),
        np.arange(n, dtype=np.int64),
        np.array(hit),
        np.array([f"doc{q % 6}" for q in range(questions)]),
    )


def test_a_feature_that_tells_the_answer_is_learned_across_documents():
    data = synthetic()
    figures = cross_validate(data, seeds=(0,))
    assert figures["documents"] == 6 and figures["questions"] == 120
    assert figures["fitted"]["mid MRR@5"] > figures["HRR"]["mid MRR@5"] + 0.3
    model = fit_model(data, np.ones(len(data.question), bool), ALL_FEATURES)
    assert model.coef[ALL_FEATURES.index("cover_1")] == max(model.coef)


def test_ranks_follow_hrr_order_without_a_model():
    data = synthetic(questions=10)
    mid, broad = ranks(data, np.arange(10), None)
    assert mid == [int(np.flatnonzero(data.mid_hit[data.question == q])[0]) + 1 for q in range(10)]
    assert mid == broad  # every candidate has its own parent here


def test_a_fit_is_used_only_when_it_wins_at_both_levels():
    shipped = {"broad MRR@5": 0.95, "mid MRR@5": 0.91}
    assert beats({"broad MRR@5": 0.96, "mid MRR@5": 0.91}, shipped)
    assert not beats({"broad MRR@5": 0.97, "mid MRR@5": 0.90}, shipped)
    assert not beats(shipped, shipped)


def test_data_from_a_store_with_token_vectors_fits_the_maxsim_variant():
    data = synthetic()
    assert not Dataset(
        np.hstack([data.features, np.full((len(data.features), len(TOKEN_FEATURES)), np.nan)]), *fields(data)[1:]
    ).has_tokens
    rng = np.random.default_rng(1)
    maxsim = rng.normal(size=(len(data.features), len(TOKEN_FEATURES)))
    maxsim[:, 0] += 3.0 * data.mid_hit  # maxsim_best tells the answer
    data.features[:, ALL_FEATURES.index("cover_1")] = rng.normal(size=len(data.features))  # cover_1 no longer does
    with_tokens = Dataset(np.hstack([data.features, maxsim]), *fields(data)[1:])
    assert with_tokens.has_tokens
    hrr_features, chunk_features = with_tokens.feature_sets()
    assert hrr_features == ALL_FEATURES + TOKEN_FEATURES and chunk_features[-3:] == TOKEN_FEATURES
    ranker = fit_ranker(with_tokens, "t", "synthetic")
    assert ranker.hrr.needs_tokens and ranker.hrr.coef[hrr_features.index("maxsim_best")] == max(ranker.hrr.coef)
    figures = ranker.cross_validation["hrr"]
    assert figures["fitted"]["mid MRR@5"] > figures["HRR"]["mid MRR@5"] + 0.3


def fields(data):
    return [getattr(data, name) for name in data.__dataclass_fields__]


def test_a_saved_dataset_reads_back_its_columns_by_name_whatever_list_it_was_written_with(tmp_path):
    data = synthetic(questions=12)
    data.save(tmp_path / "now.npz")  # the features without MaxSim, as a store without token vectors gives them
    now = Dataset.load(tmp_path / "now.npz").features
    assert np.array_equal(now[:, : len(ALL_FEATURES)], data.features) and np.isnan(now[:, len(ALL_FEATURES) :]).all()
    # A file of the feature list before the rank features, written before files named their columns.
    older = LIST_FEATURES + INSIDE_FEATURES + TOKEN_FEATURES
    columns = np.random.default_rng(2).normal(size=(len(data.features), len(older)))
    np.savez(tmp_path / "older.npz", **{**dict(zip(data.__dataclass_fields__, fields(data))), "features": columns})
    loaded = Dataset.load(tmp_path / "older.npz")
    for j, name in enumerate(older):
        assert np.array_equal(loaded.features[:, KNOWN_FEATURES.index(name)], columns[:, j]), name
    assert np.isnan(loaded.features[:, [KNOWN_FEATURES.index(name) for name in RANK_FEATURES]]).all()
    assert loaded.has_tokens
