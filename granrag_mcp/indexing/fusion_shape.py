"""The shape of a fusion besides its weights, chosen on pseudo-queries: how deep its dense lists are read and its RRF
rank constant (`adapt.py` sets the weights first and then this).

Each option is scored by the pseudo-queries' fused MRR@10 and kept only when it beats the default (the constant the
shipped reference names for the fusion, else the fixed one; the fusion's default depth) by more than the paired noise
of the sample (`choose`). The constant is chosen first, at the default depths, then the dense
lists' depth at that constant. The constants stop at 20: pseudo-queries made of a sentence's own words favour the
first ranks of the heaviest (BM25) list ever more as the constant falls, on every corpus, so the grid's end bounds
how far they may move the order away from fusion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K
from granrag_mcp.retrieval.view import Scored

CUTOFF = 10
RRF_KS = (60, 40, 30, 20)
"""The RRF constants tried; the first is the fixed default (a reference may ship another as its default)."""


def dense_depths(default: int) -> tuple[int, ...]:
    """The dense lists' depths for ten hits tried: a third of the fusion's default, the default, and twice it."""
    return (max(default // 3, 1), default, 2 * default)


Option = TypeVar("Option", int, float)

ByDepth = Mapping[int, Mapping[str, Scored]]
"""One pseudo-query's lists of a fusion, by the depth its dense lists were read to."""


def reciprocal_rank(ranked: Sequence[int], target: int) -> float:
    for rank, chunk_id in enumerate(ranked[:CUTOFF], start=1):
        if chunk_id == target:
            return 1.0 / rank
    return 0.0


def reciprocal_of_rank(rank: int | None) -> float:
    """A 1-based rank's reciprocal, 0 below the cutoff or where the target was not ranked."""
    return 1.0 / rank if rank is not None and rank <= CUTOFF else 0.0


def paired_noise(difference: np.ndarray) -> float:
    """The standard error of the mean of paired differences (each pseudo-query's score under two settings);
    infinite for fewer than two, where no difference is evidence."""
    return float(difference.std(ddof=1) / math.sqrt(len(difference))) if len(difference) > 1 else math.inf


def choose(by_option: Mapping[Option, np.ndarray], default: Option) -> tuple[Option, dict[str, float]]:
    """The option with the best mean, unless the default is within the paired standard error of it (then the
    default: a small sample must not move a tuned setting on noise). Also returns each option's mean."""
    means = {option: float(values.mean()) for option, values in by_option.items()}
    best = max(means, key=lambda option: (means[option], -abs(option - default)))
    difference = by_option[best] - by_option[default]
    noise = paired_noise(difference)
    chosen = default if means[best] - means[default] <= noise else best
    return chosen, {str(option): round(mean, 4) for option, mean in means.items()}


def is_dense(list_name_: str) -> bool:
    """Whether a fused list ranks by the embedding model (dense search or the bi-encoder reranker)."""
    return list_name_.endswith("_dense") or list_name_ == "rerank"


def target_rank(lists: Mapping[str, Scored], weights: Mapping[str, float], k: int, target: int) -> int | None:
    """The rank `reciprocal_rank_fusion` gives `target` (ties counted against it), None where no list holds it:
    its fused score against every other key's, without building the fused list."""
    scores: dict[int, float] = {}
    for name, ranked in lists.items():
        weight = weights.get(name, 0.0)
        for rank, key in enumerate(dict.fromkeys(key for key, _ in ranked), start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    if target not in scores:
        return None
    mine = scores.pop(target)
    return 1 + sum(1 for score in scores.values() if score >= mine)


def reciprocal_ranks(
    runs: Sequence[Mapping[str, Scored]], targets: Sequence[int], weights: Mapping[str, float], k: int
) -> np.ndarray:
    """Each run's reciprocal rank of its target in the weighted fusion, 0 below the cutoff."""
    ranks = (target_rank(lists, weights, k, target) for lists, target in zip(runs, targets))
    return np.array([reciprocal_of_rank(rank) for rank in ranks])


def choose_shape(
    runs: Sequence[ByDepth],
    targets: Sequence[int],
    weights: Mapping[str, float],
    default_depth: int,
    default_k: int = DEFAULT_RRF_K,
) -> tuple[int, dict[str, int], dict[str, object]] | None:
    """(the RRF constant, each dense list's depth for ten hits, what was measured) for a fusion with `weights`,
    each kept at its default (`default_k`: the constant the fusion ships with) unless another beats it by more than
    the paired noise; None where only one kind of list weighs anything (then neither the constant nor the depth
    changes the order)."""
    dense = [name for name, weight in weights.items() if is_dense(name) and weight > 0]
    if not dense or all(weights[name] <= 0 for name in weights if not is_dense(name)):
        return None
    at_default = [run[default_depth] for run in runs]
    grid = RRF_KS if default_k in RRF_KS else (*RRF_KS, default_k)
    rrf_k, by_k = choose({k: reciprocal_ranks(at_default, targets, weights, k) for k in grid}, default_k)
    by_depth_runs = {
        depth: reciprocal_ranks([run[depth] for run in runs], targets, weights, rrf_k)
        for depth in dense_depths(default_depth)
    }
    depth, by_depth = choose(by_depth_runs, default_depth)
    measured = {"rrf_k": int(rrf_k), "depth": int(depth), "mrr_by_rrf_k": by_k, "mrr_by_depth": by_depth}
    return int(rrf_k), {name: int(depth) for name in dense}, measured
