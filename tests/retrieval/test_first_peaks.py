"""The best of each run of scores, all runs at once: what `np.argmax` gives run by run, ties and NaN included."""

from __future__ import annotations

import numpy as np

from granrag_mcp.retrieval.view import first_peaks


def argmax_of_each(scores: np.ndarray, lengths: np.ndarray) -> list[int]:
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return [int(start + np.argmax(scores[start : start + n])) for start, n in zip(starts, lengths)]


def test_a_tie_goes_to_the_first_of_its_run() -> None:
    scores = np.array([0.5, 0.9, 0.9, 0.1, 0.1, 0.3], dtype=np.float32)
    assert first_peaks(scores, np.array([3, 2, 1])) == [1, 3, 5]


def test_the_same_as_argmax_run_by_run() -> None:
    rng = np.random.default_rng(0)
    for trial in range(500):
        lengths = rng.integers(1, 9, size=int(rng.integers(1, 8)))
        scores = rng.integers(0, 4, size=int(lengths.sum())).astype(np.float32)  # small integers: many ties
        if trial % 5 == 0:
            scores[int(rng.integers(0, len(scores)))] = np.nan
        assert first_peaks(scores, lengths) == argmax_of_each(scores, lengths)
