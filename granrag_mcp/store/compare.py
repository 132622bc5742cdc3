"""Whether two stores hold the same index: the same chunks under the same ids, and vectors within a cosine.

Two engines (local and Ray), or two devices, must build interchangeable stores; this is how that is checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from granrag_mcp.records import LEVELS
from granrag_mcp.store.store import Snapshot


@dataclass
class StoreComparison:
    same_chunks: bool  # same ids, documents, offsets, parents and texts at every level
    min_cosine: float  # lowest cosine between the two vectors of one chunk id, over all levels
    differences: list[str] = field(default_factory=list)  # a few of the chunks that differ, for the message


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
                cosines = np.sum(va * vb, axis=1) / (np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1))
                min_cosine = min(min_cosine, float(cosines.min()))
        return StoreComparison(not differences, min_cosine, differences)
    finally:
        a.close()
        b.close()
