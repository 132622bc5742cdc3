"""The defaults' comparison with their own lists is paired question by question: a default below a list of its own
level by more than the paired noise is named, a gap within the noise or against another level's list is not."""

from __future__ import annotations

from benchmarks.suite.eval_defaults import K, paired, versus


def test_paired_gains_count_the_same_questions() -> None:
    default = [1, 1, None, 2, 6]
    other = [2, 1, 1, 2, None]
    found = paired(default, other)
    # reciprocal ranks at 5: default 1, 1, 0, 0.5, 0; other 0.5, 1, 1, 0.5, 0
    assert found[f"mrr{K}_gain"] == round((0.5 - 1.0) / 5, 4)
    assert found[f"hr{K}_gain"] == round(-1 / 5, 4)
    assert (found[f"mrr{K}_wins"], found[f"mrr{K}_losses"]) == (1, 1) and found[f"mrr{K}_sign_p"] == 1.0
    assert (found[f"hr{K}_wins"], found[f"hr{K}_losses"]) == (0, 1)


def test_a_clear_loss_to_an_own_level_list_is_named_and_noise_is_not() -> None:
    n = 200
    ranks = {
        "search_level @ mid: default": [2] * n,
        "search_level @ mid: mid_dense": [1] * n,  # ahead on every question: a loss beyond any noise
        "search_level @ mid: mid_lexical": [2] * (n - 1) + [1],  # one question apart: noise
        "search_fused @ mid: default": [3] * n,
        "search_fused @ mid: narrow_lexical": [1] * n,  # another level's list: not the default's own part
        "search_fused @ mid: mid_lexical": [3] * n,
        "hrr_search @ broad: default": [1] * (n - 5) + [2] * 5,
        "hrr_search @ broad: mid_lexical": [1] * n,  # five questions apart: beyond 2 SE, not the sign test
        "search_level @ mid: default (half)": [1] * n,
    }
    table, below = versus(ranks)
    assert below == ["search_level @ mid: default < mid_dense"]
    assert table["search_fused @ mid: default"]["narrow_lexical"]["own_level"] is False
    assert table["search_fused @ mid: default"]["mid_lexical"]["own_level"] is True
    assert table["search_level @ mid: default"]["mid_dense"][f"mrr{K}_losses"] == n
    assert table["search_level @ mid: default (half)"]["stored default"][f"mrr{K}_gain"] == 0.5
    five = table["hrr_search @ broad: default"]["mid_lexical"]
    assert five[f"mrr{K}_gain"] < -2 * five[f"mrr{K}_se"] and five[f"mrr{K}_sign_p"] > 0.05
