"""Pure retrieval metrics: the rank of the first hit, hit rate at k and mean reciprocal rank at k.

A retrieved span *hits* when it is in the answer's document and contains the answer's start:
``doc_id == answer_doc and start <= answer_start < end``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

KS: tuple[int, ...] = (1, 3, 5, 10)

Span = tuple[str, int, int]  # (doc_id, start, end), end exclusive


def contains(span: Span, doc_id: str, position: int) -> bool:
    span_doc, start, end = span
    return span_doc == doc_id and start <= position < end


def first_hit_rank(spans: Iterable[Span], doc_id: str, position: int) -> int | None:
    """1-based rank of the first span containing `position` of `doc_id`, or None when none does."""
    for rank, span in enumerate(spans, 1):
        if contains(span, doc_id, position):
            return rank
    return None


def hit_rate(ranks: Sequence[int | None], k: int) -> float:
    """Share of queries whose first hit is at rank k or better (0.0 for no queries)."""
    _check_k(k)
    if not ranks:
        return 0.0
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def mrr(ranks: Sequence[int | None], k: int) -> float:
    """Mean of 1/rank over queries, a query counting 0 when its first hit is missing or below rank k."""
    _check_k(k)
    if not ranks:
        return 0.0
    return sum(1.0 / r for r in ranks if r is not None and r <= k) / len(ranks)


def summarise(ranks: Sequence[int | None], ks: Sequence[int] = KS) -> dict[str, float]:
    """{"HR@k": ..., "MRR@k": ...} for every k, hit rates first."""
    out = {f"HR@{k}": hit_rate(ranks, k) for k in ks}
    out.update({f"MRR@{k}": mrr(ranks, k) for k in ks})
    return out


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
