"""The extractive summary's choice: central sentences first, a near copy of one already taken passed over, the
token budget kept, headings and stubs left out while longer sentences remain."""

from __future__ import annotations

import numpy as np

from granrag_mcp.retrieval.summaries import select, span_prior


def _unit(rows: list[list[float]]) -> np.ndarray:
    vectors = np.array(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# Three sentences on the main theme (x), one a near copy of another, two on a second theme (y), one aside (z).
VECTORS = _unit(
    [
        [1.0, 0.1, 0.0],  # 0: main theme
        [1.0, 0.11, 0.0],  # 1: a near copy of 0
        [0.9, 0.3, 0.1],  # 2: main theme, said otherwise
        [0.2, 1.0, 0.0],  # 3: second theme
        [0.3, 1.0, 0.1],  # 4: second theme
        [0.0, 0.1, 1.0],  # 5: an aside
    ]
)


def test_the_most_central_sentence_comes_first_and_its_copy_is_passed_over() -> None:
    chosen = select(VECTORS, np.full(6, 10), budget=30)
    assert chosen[0] in (0, 1, 2)
    assert len(chosen) == 3
    assert not {0, 1} <= set(chosen)  # the near copy adds nothing
    assert set(chosen) & {3, 4}  # the second theme is covered


def test_the_budget_is_kept_and_a_sentence_too_long_for_what_is_left_is_skipped() -> None:
    tokens = np.array([50, 10, 10, 10, 10, 10])
    chosen = select(VECTORS, tokens, budget=25)
    assert sum(tokens[chosen]) <= 25 and 0 not in chosen and len(chosen) == 2
    assert select(VECTORS, tokens, budget=0) == [] and select(VECTORS[:0], tokens[:0], budget=100) == []


def test_short_sentences_are_left_out_while_longer_ones_remain() -> None:
    tokens = np.array([3, 3, 3, 12, 12, 12])  # the main theme's sentences are headings
    assert set(select(VECTORS, tokens, budget=1000)) == {3, 4, 5}
    assert select(VECTORS[:3], tokens[:3], budget=1000)  # a span of headings only still gets one


def test_a_given_centre_decides_what_is_central() -> None:
    assert select(VECTORS, np.full(6, 10), budget=10, centre=np.array([0.0, 0.0, 1.0]))[0] == 5


def test_the_span_prior_leans_to_the_opening_among_sentences_alike() -> None:
    same = _unit([[1.0, 0.0, 0.0]] * 4)
    prior = span_prior(4)
    assert prior[0] > prior[1] > prior[2] > prior[3] >= 0
    assert select(same, np.full(4, 10), budget=10, prior=prior) == [0]
    assert select(same, np.full(4, 10), budget=10, prior=prior[::-1].copy()) == [3]
