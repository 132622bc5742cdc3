"""Links between two concepts found at query time, through the sentences that mention them.

The index keeps only the stronger co-occurrence edges (positive PMI, the weakest share pruned), so two concepts
may be one sentence apart in the text and further, or unlinked, in the graph. At query time the sentences that
mention each of them give every concept named beside it; those named beside both are the middles of two-hop
paths, weighted as the index weighs an edge (normalised PMI x log2(1 + count)) but over all co-occurrences
(LazyGraphRAG's point: test relevance when a question comes rather than trust what the index kept).
"""

from __future__ import annotations

import numpy as np

from granrag_mcp.store.graph import ConceptGraph
from granrag_mcp.text.words import CONNECTORS

LEAST_WEIGHT = 1e-3  # a co-occurrence no more frequent than chance still links, at a high cost


def cooccurrence_weight(count: np.ndarray, first: int | np.ndarray, second: np.ndarray, n: int) -> np.ndarray:
    """The index's edge weight for concepts in `first` and `second` sentences, `count` of them shared, of `n`."""
    count = np.asarray(count, np.float64)
    p_pair = count / n
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log(p_pair / ((np.asarray(first) / n) * (np.asarray(second) / n)))
        npmi = np.where(p_pair < 1, pmi / -np.log(p_pair), 1.0)
    return np.clip(np.nan_to_num(npmi, nan=0.0), LEAST_WEIGHT, 1.0) * np.log2(1 + count)


def _key_words(graph: ConceptGraph, concept: int) -> set[str]:
    return set(str(graph.keys[concept]).split()) - CONNECTORS


def _counts_beside(graph: ConceptGraph, sentence_matrix, concept: int) -> np.ndarray:  # noqa: ANN001 -- scipy
    """How many of the concept's sentences mention each concept."""
    rows = np.searchsorted(graph.sentence_ids, graph.mentions(concept))
    return np.asarray(sentence_matrix[rows].sum(axis=0)).ravel()


def direct_link(graph: ConceptGraph, a: int, b: int) -> tuple[float, int] | None:
    """Weight and count of the sentences that mention both, or None when none does."""
    count = len(np.intersect1d(graph.mentions(a), graph.mentions(b), assume_unique=True))
    if count == 0:
        return None
    n = len(graph.sentence_ids)
    weight = cooccurrence_weight(np.array([count]), int(graph.frequency[a]), graph.frequency[[b]], n)
    return float(weight[0]), count


def middles(graph: ConceptGraph, sentence_matrix, a: int, b: int, k: int) -> list[tuple[int, float, float]]:  # noqa: ANN001
    """Up to k concepts named in a sentence with `a` and in one with `b`, as (middle, weight to a, weight to b),
    cheapest path first (cost = 1/weight + 1/weight). A middle that shares a word with a or b is left out: it is
    part of the same name ("Tesla" in "Nikola Tesla"), not a link."""
    beside_a = _counts_beside(graph, sentence_matrix, a)
    beside_b = _counts_beside(graph, sentence_matrix, b)
    both = np.flatnonzero((beside_a > 0) & (beside_b > 0))
    both = both[(both != a) & (both != b)]
    if len(both) == 0:
        return []
    n = len(graph.sentence_ids)
    to_a = cooccurrence_weight(beside_a[both], int(graph.frequency[a]), graph.frequency[both], n)
    to_b = cooccurrence_weight(beside_b[both], int(graph.frequency[b]), graph.frequency[both], n)
    order = np.argsort(1 / to_a + 1 / to_b, kind="stable")
    own = _key_words(graph, a) | _key_words(graph, b)
    out: list[tuple[int, float, float]] = []
    for i in order.tolist():
        if len(out) >= k:
            break
        if not (_key_words(graph, int(both[i])) & own):
            out.append((int(both[i]), float(to_a[i]), float(to_b[i])))
    return out
