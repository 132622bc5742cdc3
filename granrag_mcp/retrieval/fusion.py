"""Weighted reciprocal rank fusion of several ranked lists into one, and the arguments of a fused search.

Pure functions: no I/O, and the inputs are never modified.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

from granrag_mcp.levels import Level

K = TypeVar("K", bound=Hashable)

DEFAULT_RRF_K = 60
TEN_HITS = 10
"""A list's depth is stored for a search of this many hits and grows in proportion for more."""


def list_depth(per_ten: int, k: int) -> int:
    """The depth of a list whose depth for ten hits is `per_ten`, in a search for `k` hits (at least `k`)."""
    return max(k, math.ceil(per_ten * max(k, TEN_HITS) / TEN_HITS))


@dataclass(frozen=True)
class FusionRequest:
    """What a caller of a fused search may choose, read by each fusion method as far as it applies."""

    level: Level = "mid"  # the level of the returned chunks (union: its fine level)
    weights: Mapping[str, float] | None = None  # list name -> weight, over the store's adapted ones
    rrf_k: int | None = None  # None: the store's adapted constant (DEFAULT_RRF_K where it has none)
    lexical: bool = True  # include the BM25 lists


@dataclass(frozen=True)
class FusionUsed:
    """What a fused search ran with, for its result: each list's weight and depth, and the RRF constant."""

    weights: Mapping[str, float]
    depths: Mapping[str, int]
    rrf_k: int


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one ranked list said about one key."""

    rank: int  # 1-based rank in that list
    score: float  # the score the key had in that list
    fused: float  # what this list added to the fused score: weight / (k + rank)


@dataclass(frozen=True, slots=True)
class FusedItem(Generic[K]):
    key: K
    score: float
    contributions: Mapping[str, Contribution]  # list name -> contribution; only lists holding the key


def reciprocal_rank_fusion(
    lists: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_RRF_K,
) -> list[FusedItem[K]]:
    """Fuse best-first `(key, score)` lists: fused(key) = sum of weight / (k + rank) over lists holding key.

    A key repeated within one list counts once, at its first (best) rank, and later repeats are
    dropped before ranking, so they do not push the keys behind them down. A list without a
    weight has weight 1.0. The result is sorted by fused score, highest first; ties go to the
    key with the best rank in any list, then to the key that appeared first (lists in mapping
    order, each read best-first).
    """
    _check_k(k)
    resolved_weights = _resolve_weights(lists, weights or {})

    contributions: dict[K, dict[str, Contribution]] = {}
    best_rank: dict[K, int] = {}  # each key's best rank in any list, kept as the lists are read
    for list_name, ranked in lists.items():
        weight = resolved_weights[list_name]
        for rank, (key, score) in enumerate(_first_occurrences(ranked), start=1):
            by_list = contributions.get(key)
            if by_list is None:
                contributions[key] = by_list = {}
                best_rank[key] = rank
            elif rank < best_rank[key]:
                best_rank[key] = rank
            by_list[list_name] = Contribution(rank=rank, score=float(score), fused=weight / (k + rank))

    # dicts keep insertion order, so enumeration order is the order of first appearance.
    keyed = [
        ((-_tie_insensitive(score), best_rank[key], appearance), key, score, by_list)
        for appearance, (key, by_list) in enumerate(contributions.items())
        for score in (_sum_contributions(by_list),)
    ]
    keyed.sort(key=_first)
    return [
        FusedItem(key=key, score=score, contributions=MappingProxyType(by_list)) for _, key, score, by_list in keyed
    ]


def fused_rank(
    lists: Mapping[str, Sequence[tuple[K, float]]], weights: Mapping[str, float], k: int, target: K
) -> int | None:
    """The 1-based rank `reciprocal_rank_fusion(lists, weights, k)` gives `target` (its ties broken as there), None
    where no list holds it, without building the fused list: a caller that scores many queries by where one key
    lands (the index run's adaptation) then does a fraction of the work."""
    _check_k(k)
    resolved_weights = _resolve_weights(lists, weights)
    scores: dict[K, float] = {}
    best_rank: dict[K, int] = {}
    appearance: dict[K, int] = {}
    for list_name, ranked in lists.items():
        weight = resolved_weights[list_name]
        for rank, (key, _) in enumerate(_first_occurrences(ranked), start=1):
            fused = weight / (k + rank)
            if key in scores:  # added in list order, as `_sum_contributions` adds them: the same float
                scores[key] += fused
                if rank < best_rank[key]:
                    best_rank[key] = rank
            else:
                scores[key] = fused
                best_rank[key] = rank
                appearance[key] = len(appearance)
    if target not in scores:
        return None
    mine = scores[target]
    # Only scores within rounding of the target's need the tie-insensitive comparison; the rest order as they are.
    margin = abs(mine) * 1e-9
    place = (-_tie_insensitive(mine), best_rank[target], appearance[target])
    before = 0
    for key, score in scores.items():
        if score > mine + margin:
            before += 1
        elif score >= mine - margin and key != target:
            before += (-_tie_insensitive(score), best_rank[key], appearance[key]) < place
    return before + 1


def _first(entry: tuple) -> tuple:
    return entry[0]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"the RRF constant k must be an integer >= 1, got {k!r}")


def _resolve_weights(lists: Mapping[str, object], weights: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(weights) - set(lists))
    if unknown:
        valid = ", ".join(sorted(lists)) or "(none)"
        raise ValueError(f"weights given for unknown lists {unknown}; valid list names are: {valid}")
    resolved = {}
    for list_name in lists:
        weight = float(weights.get(list_name, 1.0))
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight of list {list_name!r} must be a finite number >= 0, got {weight!r}")
        resolved[list_name] = weight
    return resolved


def _first_occurrences(ranked: Sequence[tuple[K, float]]) -> list[tuple[K, float]]:
    seen: set[K] = set()
    unique = []
    for key, score in ranked:
        if key not in seen:
            seen.add(key)
            unique.append((key, score))
    return unique


def _sum_contributions(by_list: Mapping[str, Contribution]) -> float:
    return sum(contribution.fused for contribution in by_list.values())


def _tie_insensitive(score: float) -> float:
    # Equal sums added in another order can differ in the last bit; round so that they still tie.
    return float(f"{score:.12g}")
