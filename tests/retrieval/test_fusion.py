from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from granrag_mcp.retrieval.fusion import Contribution, FusedItem, fused_rank, reciprocal_rank_fusion


def by_key(items: list[FusedItem[str]]) -> dict[str, FusedItem[str]]:
    return {item.key: item for item in items}


def test_hand_computed_scores_with_default_k() -> None:
    fused = reciprocal_rank_fusion(
        {
            "dense": [("a", 0.9), ("b", 0.8), ("c", 0.7)],
            "sparse": [("b", 12.0), ("d", 9.0)],
        }
    )

    assert [item.key for item in fused] == ["b", "a", "d", "c"]
    scores = {item.key: item.score for item in fused}
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63)


def test_contributions_record_rank_score_and_share() -> None:
    fused = by_key(reciprocal_rank_fusion({"dense": [("a", 0.9), ("b", 0.8)], "sparse": [("b", 12.0)]}, k=10))

    assert fused["b"].contributions == {
        "dense": Contribution(rank=2, score=0.8, fused=pytest.approx(1 / 12)),
        "sparse": Contribution(rank=1, score=12.0, fused=pytest.approx(1 / 11)),
    }
    assert set(fused["a"].contributions) == {"dense"}


def test_weights_scale_each_list() -> None:
    fused = by_key(
        reciprocal_rank_fusion(
            {"dense": [("a", 0.9), ("b", 0.5)], "sparse": [("b", 3.0), ("a", 1.0)]},
            weights={"dense": 2.0, "sparse": 0.5},
            k=1,
        )
    )

    assert fused["a"].score == pytest.approx(2.0 / 2 + 0.5 / 3)
    assert fused["b"].score == pytest.approx(2.0 / 3 + 0.5 / 2)


def test_missing_weight_defaults_to_one() -> None:
    lists = {"dense": [("a", 1.0)], "sparse": [("a", 1.0)]}
    fused = by_key(reciprocal_rank_fusion(lists, weights={"dense": 3.0}, k=1))

    assert fused["a"].score == pytest.approx(3.0 / 2 + 1.0 / 2)


def test_zero_weight_list_reports_but_adds_nothing() -> None:
    lists = {"dense": [("a", 1.0)], "muted": [("a", 5.0), ("z", 4.0)]}
    fused = by_key(reciprocal_rank_fusion(lists, weights={"muted": 0}))

    assert fused["a"].score == pytest.approx(1 / 61)
    assert fused["a"].contributions["muted"] == Contribution(rank=1, score=5.0, fused=0.0)
    assert fused["z"].score == 0.0


def test_unknown_weight_name_is_rejected_with_valid_names() -> None:
    with pytest.raises(ValueError, match="dense, sparse"):
        reciprocal_rank_fusion({"dense": [], "sparse": []}, weights={"bm25": 1.0})


@pytest.mark.parametrize("weight", [-0.1, math.nan, math.inf])
def test_invalid_weight_is_rejected(weight: float) -> None:
    with pytest.raises(ValueError, match="dense"):
        reciprocal_rank_fusion({"dense": [("a", 1.0)]}, weights={"dense": weight})


@pytest.mark.parametrize("k", [0, -5])
def test_k_below_one_is_rejected(k: int) -> None:
    with pytest.raises(ValueError, match="k"):
        reciprocal_rank_fusion({"dense": [("a", 1.0)]}, k=k)


def test_key_repeated_in_one_list_counts_once_at_its_first_rank() -> None:
    fused = by_key(reciprocal_rank_fusion({"dense": [("a", 0.9), ("b", 0.8), ("a", 0.7), ("c", 0.6)]}, k=1))

    assert fused["a"].score == pytest.approx(1 / 2)
    assert fused["a"].contributions["dense"] == Contribution(rank=1, score=0.9, fused=pytest.approx(1 / 2))
    # The dropped repeat does not push "c" down.
    assert fused["c"].contributions["dense"].rank == 3


def test_empty_inputs() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"dense": [], "sparse": []}) == []
    assert [item.key for item in reciprocal_rank_fusion({"dense": [], "sparse": [("a", 1.0)]})] == ["a"]


def test_exact_tie_is_broken_by_best_rank() -> None:
    # With k=1, "edge" (ranks 5 and 1) scores 1/6 + 1/2 = 2/3 and "even" (ranks 2 and 2) 1/3 + 1/3 = 2/3.
    lists = {
        "x": [("f1", 0.0), ("even", 0.0), ("f2", 0.0), ("f3", 0.0), ("edge", 0.0)],
        "y": [("edge", 0.0), ("even", 0.0)],
    }
    fused = reciprocal_rank_fusion(lists, k=1)
    scores = by_key(fused)
    assert scores["even"].score == pytest.approx(scores["edge"].score)

    order = [item.key for item in fused]
    # "even" appears first, but "edge" has the better best rank (1 against 2).
    assert order.index("edge") < order.index("even")


def test_exact_tie_with_equal_best_rank_goes_to_first_appearance() -> None:
    fused = reciprocal_rank_fusion({"x": [("a", 1.0), ("b", 1.0)], "y": [("b", 1.0), ("a", 1.0)]})
    assert [item.key for item in fused] == ["a", "b"]

    swapped = reciprocal_rank_fusion({"y": [("b", 1.0), ("a", 1.0)], "x": [("a", 1.0), ("b", 1.0)]})
    assert [item.key for item in swapped] == ["b", "a"]


@pytest.mark.parametrize("k", [2, 5, 13])  # k values where the three float sums differ in the last bit
def test_three_list_symmetric_tie_is_stable_despite_float_rounding(k: int) -> None:
    lists = {
        "x": [("a", 0.0), ("b", 0.0), ("c", 0.0)],
        "y": [("b", 0.0), ("c", 0.0), ("a", 0.0)],
        "z": [("c", 0.0), ("a", 0.0), ("b", 0.0)],
    }
    assert [item.key for item in reciprocal_rank_fusion(lists, k=k)] == ["a", "b", "c"]


def test_inputs_are_not_modified() -> None:
    lists = {"dense": [("a", 0.9), ("b", 0.8), ("a", 0.1)], "sparse": [("b", 3.0)]}
    weights = {"dense": 2.0}
    lists_before, weights_before = copy.deepcopy(lists), copy.deepcopy(weights)

    reciprocal_rank_fusion(lists, weights)

    assert lists == lists_before
    assert weights == weights_before


def test_contributions_cannot_be_modified() -> None:
    (item,) = reciprocal_rank_fusion({"dense": [("a", 1.0)]})
    with pytest.raises(TypeError):
        item.contributions["other"] = Contribution(rank=1, score=0.0, fused=0.0)  # type: ignore[index]


def test_works_with_non_string_keys() -> None:
    fused = reciprocal_rank_fusion({"dense": [((1, "x"), 1.0), (7, 0.5)], "sparse": [(7, 2.0)]})
    assert [item.key for item in fused] == [7, (1, "x")]


# --- properties -------------------------------------------------------------------------

keys = st.integers(min_value=0, max_value=30)
ranked_lists = st.lists(st.tuples(keys, st.floats(allow_nan=False, allow_infinity=False)), max_size=25)
list_sets = st.dictionaries(st.sampled_from(["dense", "sparse", "title", "mid"]), ranked_lists, max_size=4)


@given(list_sets, st.integers(min_value=1, max_value=200))
def test_output_keys_are_the_union_of_input_keys(lists, k) -> None:
    fused = reciprocal_rank_fusion(lists, k=k)

    expected = {key for ranked in lists.values() for key, _ in ranked}
    assert len(fused) == len(expected)
    assert {item.key for item in fused} == expected


@given(list_sets, st.dictionaries(st.sampled_from(["dense", "sparse"]), st.floats(0, 10)), st.integers(1, 200))
def test_score_is_the_sum_of_contributions(lists, weights, k) -> None:
    weights = {name: weight for name, weight in weights.items() if name in lists}
    for item in reciprocal_rank_fusion(lists, weights, k=k):
        assert item.score == pytest.approx(sum(c.fused for c in item.contributions.values()))
        for name, contribution in item.contributions.items():
            assert contribution.fused == pytest.approx(weights.get(name, 1.0) / (k + contribution.rank))


@given(list_sets, st.integers(1, 200))
def test_output_is_sorted_by_fused_score(lists, k) -> None:
    scores = [item.score for item in reciprocal_rank_fusion(lists, k=k)]
    assert all(earlier >= later - 1e-12 for earlier, later in zip(scores, scores[1:]))


@given(
    st.lists(st.lists(keys, unique=True, max_size=10), min_size=1, max_size=4),
    st.integers(min_value=31, max_value=40),
    st.integers(1, 200),
)
def test_item_first_in_every_list_ends_first(tails, winner, k) -> None:
    lists = {f"list{i}": [(winner, 1.0), *((key, 0.5) for key in tail)] for i, tail in enumerate(tails)}

    assert reciprocal_rank_fusion(lists, k=k)[0].key == winner


# Few keys and few ranks, so that lists share keys, repeat them and tie on fused scores; weights include 0.
_ranked_lists = st.dictionaries(
    st.sampled_from(["dense", "lexical", "mid_dense", "mid_lexical"]),
    st.lists(st.tuples(st.integers(0, 12), st.floats(-1.0, 1.0)), max_size=10),
    min_size=1,
)


@given(_ranked_lists, st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=4, max_size=4), st.integers(1, 70))
def test_fused_rank_is_the_rank_the_fusion_gives_the_key(lists, weight_values, k) -> None:
    weights = dict(zip(lists, weight_values))
    fused = [item.key for item in reciprocal_rank_fusion(lists, weights=weights, k=k)]
    for key in range(14):  # every key the lists hold, and some they do not
        assert fused_rank(lists, weights, k, key) == (fused.index(key) + 1 if key in fused else None)


def test_fused_rank_breaks_an_exact_tie_as_the_fusion_does() -> None:
    lists = {"a": [(1, 0.9), (2, 0.8)], "b": [(2, 0.9), (1, 0.8)]}  # 1 and 2 tie on score and best rank
    assert [item.key for item in reciprocal_rank_fusion(lists, k=60)] == [1, 2]
    assert (fused_rank(lists, {}, 60, 1), fused_rank(lists, {}, 60, 2)) == (1, 2)
