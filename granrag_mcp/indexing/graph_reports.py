"""Community reports of the concept graph, extractive: each community's key sentences (nearest the centroid of
the sentences that mention its concepts, picked by maximal marginal relevance for variety), its documents and its
broad chunks."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np

from granrag_mcp.store.graph import ConceptGraph, ragged

MAX_CLUSTER_SIZE = 10
KEY_SENTENCES = 3
REPORT_CANDIDATES = 64
REPORT_DOCS = 5
REPORT_BROAD = 5


def fill_reports(
    graph: ConceptGraph,
    sentence_broad: np.ndarray,
    sentence_vectors: Callable[[np.ndarray], np.ndarray],
    dimension: int,
) -> None:
    """Each community's key sentences, centroid, documents and broad chunks (filled into `graph`)."""
    sentence_row = {int(s): r for r, s in enumerate(graph.sentence_ids.tolist())}
    key_lists, broad_lists, doc_lists = [], [], []
    centroids = np.zeros((graph.n_clusters, dimension), np.float32)
    for cluster in range(graph.n_clusters):
        top = graph.members(cluster)[:MAX_CLUSTER_SIZE]
        covered: Counter[int] = Counter()
        for concept in top:
            covered.update(graph.mentions(int(concept)).tolist())
        candidates = [s for s, _ in covered.most_common(REPORT_CANDIDATES)]
        rows = np.array([sentence_row[s] for s in candidates], np.int64)
        vectors = sentence_vectors(np.array(candidates, np.int64)) if candidates else np.zeros((0, dimension))
        centroid = (vectors * np.array([covered[s] for s in candidates], np.float32)[:, None]).sum(0)
        norm = float(np.linalg.norm(centroid))
        if norm > 0:
            centroids[cluster] = centroid / norm
        key_lists.append([candidates[i] for i in _varied(vectors, centroids[cluster], KEY_SENTENCES)])
        broad_lists.append([b for b, _ in Counter(sentence_broad[rows].tolist()).most_common(REPORT_BROAD) if b >= 0])
        doc_lists.append([d for d, _ in Counter(graph.sentence_doc[rows].tolist()).most_common(REPORT_DOCS)])
    graph.cluster_sent_ptr, graph.cluster_sentences = ragged(key_lists, np.int64)
    graph.cluster_broad_ptr, graph.cluster_broad = ragged(broad_lists, np.int64)
    graph.cluster_doc_ptr, graph.cluster_docs = ragged(doc_lists, np.int32)
    graph.cluster_centroid = centroids


def _varied(vectors: np.ndarray, centroid: np.ndarray, k: int, balance: float = 0.7) -> list[int]:
    """Rows near the centroid, each next one also unlike those already picked (maximal marginal relevance)."""
    if len(vectors) == 0:
        return []
    relevance = vectors @ centroid
    chosen: list[int] = []
    while len(chosen) < min(k, len(vectors)):
        if chosen:
            redundancy = (vectors @ vectors[chosen].T).max(axis=1)
            score = balance * relevance - (1 - balance) * redundancy
        else:
            score = relevance.copy()
        score[chosen] = -math.inf
        chosen.append(int(np.argmax(score)))
    return chosen
