"""Hand-computed HR@k and MRR@k."""

from __future__ import annotations

import math

import pytest

from granrag_mcp.evaluation.metrics import contains, first_hit_rank, hit_rate, mrr, summarise

DOC = "a.txt"


def test_contains_is_half_open_and_per_document() -> None:
    assert contains((DOC, 10, 20), DOC, 10)
    assert contains((DOC, 10, 20), DOC, 19)
    assert not contains((DOC, 10, 20), DOC, 20)  # end is exclusive
    assert not contains((DOC, 10, 20), DOC, 9)
    assert not contains(("b.txt", 10, 20), DOC, 15)


def test_first_hit_rank_is_one_based_and_takes_the_first_hit() -> None:
    spans = [("b.txt", 0, 100), (DOC, 0, 50), (DOC, 40, 90), (DOC, 0, 100)]
    assert first_hit_rank(spans, DOC, 45) == 2
    assert first_hit_rank(spans, DOC, 60) == 3
    assert first_hit_rank(spans, DOC, 95) == 4
    assert first_hit_rank(spans, DOC, 100) is None
    assert first_hit_rank([], DOC, 0) is None


# Five questions with first hits at ranks 1, 2, 4, 11 and none.
RANKS = [1, 2, 4, 11, None]


@pytest.mark.parametrize(("k", "expected"), [(1, 1 / 5), (3, 2 / 5), (5, 3 / 5), (10, 3 / 5), (11, 4 / 5)])
def test_hit_rate(k: int, expected: float) -> None:
    assert hit_rate(RANKS, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 1.0 / 5),
        (3, (1 + 1 / 2) / 5),
        (5, (1 + 1 / 2 + 1 / 4) / 5),  # 0.35
        (10, (1 + 1 / 2 + 1 / 4) / 5),
        (11, (1 + 1 / 2 + 1 / 4 + 1 / 11) / 5),
    ],
)
def test_mrr(k: int, expected: float) -> None:
    assert mrr(RANKS, k) == pytest.approx(expected)


def test_mrr_at_5_is_0_35() -> None:
    assert math.isclose(mrr(RANKS, 5), 0.35)


def test_empty_rank_lists_score_zero() -> None:
    assert hit_rate([], 5) == 0.0
    assert mrr([], 5) == 0.0


def test_all_misses_and_all_first() -> None:
    assert summarise([None, None]) == {f"{m}@{k}": 0.0 for m in ("HR", "MRR") for k in (1, 3, 5, 10)}
    assert summarise([1, 1, 1]) == {f"{m}@{k}": 1.0 for m in ("HR", "MRR") for k in (1, 3, 5, 10)}


def test_summarise_names_and_order() -> None:
    values = summarise(RANKS)
    assert list(values) == ["HR@1", "HR@3", "HR@5", "HR@10", "MRR@1", "MRR@3", "MRR@5", "MRR@10"]
    assert values["HR@10"] == pytest.approx(0.6)
    assert values["MRR@3"] == pytest.approx(0.3)


def test_mrr_never_exceeds_hit_rate() -> None:
    for k in (1, 3, 5, 10):
        assert mrr(RANKS, k) <= hit_rate(RANKS, k)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_k_is_rejected(k) -> None:
    with pytest.raises(ValueError, match="k must be"):
        hit_rate(RANKS, k)
    with pytest.raises(ValueError, match="k must be"):
        mrr(RANKS, k)


def test_the_eval_parsers_default_names_every_strategy() -> None:
    from granrag_mcp.evaluation.arguments import ALL_STRATEGIES
    from granrag_mcp.evaluation.strategies import STRATEGIES

    assert ALL_STRATEGIES.split(",") == list(STRATEGIES)
