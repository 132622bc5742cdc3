"""Whether two stores hold the same index: the same chunks under the same ids, and vectors within a cosine; the
same concept graph, with name vectors within a cosine.

Two engines (local and Ray), or two devices, must build interchangeable stores; this is how that is checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from granrag_mcp.records import LEVELS
from granrag_mcp.store.graph import ConceptGraph
from granrag_mcp.store.store import Snapshot


@dataclass
class StoreComparison:
    same_chunks: bool  # same ids, documents, offsets, parents and texts at every level
    min_cosine: float  # lowest cosine between the two vectors of one chunk id, over all levels
    differences: list[str] = field(default_factory=list)  # a few of the chunks that differ, for the message
    same_concepts: bool = True  # the same concepts (keys, names, mentioning sentences) and edges, or no graph in either
    concept_min_cosine: float = 1.0  # lowest cosine between a concept's two name vectors (0 where one has none)
    # Documents cut differently (their spans at some level differ, ids aside): chunk ids are numbered across
    # documents, so one document cut differently renumbers every later one, and this says which it was.
    documents_cut_differently: list[str] = field(default_factory=list)


def _cosines(va: np.ndarray, vb: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1)
    return np.sum(va * vb, axis=1) / np.maximum(norms, 1e-12)


def compare_graphs(a: ConceptGraph | None, b: ConceptGraph | None) -> tuple[bool, float, list[str]]:
    """(same concepts and edges, lowest name-vector cosine, what differs) of two generations' graphs."""
    if a is None or b is None:
        return a is None and b is None, 1.0, [] if a is None and b is None else ["graph: only one store has one"]
    differences = [
        f"graph: different {name}"
        for name in ("keys", "names", "mention_ptr", "mention_ids", "adj_ptr", "adj_idx", "adj_count")
        if not np.array_equal(getattr(a, name), getattr(b, name))
    ]
    if differences or not len(a):
        return not differences, 1.0, differences
    return True, float(_cosines(a.vectors, b.vectors).min()), []


def _spans_by_document(snapshot: Snapshot) -> dict[str, list[tuple[str, int, int]]]:
    spans: dict[str, list[tuple[str, int, int]]] = {}
    for level in LEVELS:
        for c in snapshot.catalog.chunks_of_level(level):
            spans.setdefault(c.doc_id, []).append((level, c.start, c.end))
    return {doc: sorted(found) for doc, found in spans.items()}


def compare_stores(first: Path, second: Path, most_differences: int = 5) -> StoreComparison:
    a, b = Snapshot.open(first), Snapshot.open(second)
    try:
        differences: list[str] = []
        min_cosine = 1.0
        for level in LEVELS:
            rows_a, rows_b = (
                {
                    c.id: (c.doc_id, c.seq, c.start, c.end, c.parent_id, c.text)
                    for c in snapshot.catalog.chunks_of_level(level)
                }
                for snapshot in (a, b)
            )
            for chunk_id in sorted(set(rows_a) | set(rows_b)):
                if rows_a.get(chunk_id) != rows_b.get(chunk_id) and len(differences) < most_differences:
                    differences.append(f"{level}:{chunk_id}")
            if rows_a.keys() != rows_b.keys():
                differences = differences or [f"{level}: different ids"]
                continue
            ids = np.array(sorted(rows_a), dtype=np.int64)
            if len(ids):
                va, vb = a.vectors[level].reconstruct(ids), b.vectors[level].reconstruct(ids)
                min_cosine = min(min_cosine, float(_cosines(va, vb).min()))
        same_chunks = not differences
        spans_a, spans_b = _spans_by_document(a), _spans_by_document(b)
        cut_differently = sorted(d for d in set(spans_a) | set(spans_b) if spans_a.get(d) != spans_b.get(d))
        same_concepts, concept_cosine, graph_differences = compare_graphs(
            ConceptGraph.read(a.folder), ConceptGraph.read(b.folder)
        )
        return StoreComparison(
            same_chunks, min_cosine, differences + graph_differences, same_concepts, concept_cosine, cut_differently
        )
    finally:
        a.close()
        b.close()
