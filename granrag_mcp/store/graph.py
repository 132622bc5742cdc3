"""The stored concept graph of a generation: its arrays (`graph.npz`) and each document's concepts
(`doc_concepts.json`), both written into the generation folder and checksummed by its manifest like every other index.

The format only: the concepts are extracted by `granrag_mcp.text.concepts` and the graph is built (co-occurrence
edges, communities, reports) by `granrag_mcp.indexing.graph`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GRAPH_FILE = "graph.npz"
PHRASES_FILE = "doc_concepts.json"  # "concepts.json" held keyphrases: a store that has it is extracted anew once

DocPhrases = dict[str, list[tuple[str, str]]]


def ragged(lists: list[list[int]] | list[np.ndarray], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and flat values of a list of lists (CSR style)."""
    lengths = np.array([len(x) for x in lists], dtype=np.int64)
    pointer = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = np.concatenate([np.asarray(x, dtype=dtype) for x in lists]) if lists and pointer[-1] else np.zeros(0, dtype)
    return pointer, flat.astype(dtype)


@dataclass(eq=False)  # compared and hashed by identity: query-time caches are keyed by the graph
class ConceptGraph:
    """The graph as arrays; concept n is row n everywhere. Sentences are narrow chunk ids."""

    keys: np.ndarray  # str, concept keys
    names: np.ndarray  # str, display names
    frequency: np.ndarray  # int32, sentences that mention the concept
    pagerank: np.ndarray  # float32
    vectors: np.ndarray  # float32 (concepts x dimension), embedding of the display name
    mention_ptr: np.ndarray  # int64 (concepts + 1)
    mention_ids: np.ndarray  # int64, sorted sentence ids per concept
    adj_ptr: np.ndarray  # int64 (concepts + 1), symmetric adjacency
    adj_idx: np.ndarray  # int32
    adj_weight: np.ndarray  # float32
    adj_count: np.ndarray  # int32
    sentence_ids: np.ndarray  # int64 sorted, sentences that mention a concept
    sentence_ptr: np.ndarray  # int64
    sentence_concepts: np.ndarray  # int32
    sentence_doc: np.ndarray  # int32 index into docs
    docs: np.ndarray  # str
    concept_cluster: np.ndarray  # int32, finest community (-1: no edge, no community)
    cluster_level: np.ndarray  # int32
    cluster_parent: np.ndarray  # int32 (-1 at the top)
    cluster_ptr: np.ndarray  # int64
    cluster_members: np.ndarray  # int32, by PageRank, best first
    cluster_sent_ptr: np.ndarray
    cluster_sentences: np.ndarray  # int64, key sentences
    cluster_broad_ptr: np.ndarray
    cluster_broad: np.ndarray  # int64, broad chunk ids
    cluster_doc_ptr: np.ndarray
    cluster_docs: np.ndarray  # int32 index into docs
    cluster_centroid: np.ndarray  # float32 (clusters x dimension)

    # --- persistence ---------------------------------------------------------------------------------------------

    def write(self, folder: Path) -> None:
        with open(folder / GRAPH_FILE, "wb") as handle:
            np.savez(handle, **{name: getattr(self, name) for name in self.__dataclass_fields__})

    @classmethod
    def read(cls, folder: Path) -> ConceptGraph | None:
        """The stored graph, or None in a generation built without one."""
        path = folder / GRAPH_FILE
        if not path.exists():
            return None
        with np.load(path, allow_pickle=False) as data:
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    # --- shape -----------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def n_edges(self) -> int:
        return len(self.adj_idx) // 2

    @property
    def n_clusters(self) -> int:
        return len(self.cluster_level)

    def mentions(self, concept: int) -> np.ndarray:
        return self.mention_ids[self.mention_ptr[concept] : self.mention_ptr[concept + 1]]

    def neighbours(self, concept: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        span = slice(self.adj_ptr[concept], self.adj_ptr[concept + 1])
        return self.adj_idx[span], self.adj_weight[span], self.adj_count[span]

    def degree(self, concept: int) -> int:
        return int(self.adj_ptr[concept + 1] - self.adj_ptr[concept])

    def members(self, cluster: int) -> np.ndarray:
        return self.cluster_members[self.cluster_ptr[cluster] : self.cluster_ptr[cluster + 1]]

    def key_sentences(self, cluster: int) -> np.ndarray:
        return self.cluster_sentences[self.cluster_sent_ptr[cluster] : self.cluster_sent_ptr[cluster + 1]]

    def broad_chunks(self, cluster: int) -> np.ndarray:
        return self.cluster_broad[self.cluster_broad_ptr[cluster] : self.cluster_broad_ptr[cluster + 1]]

    def cluster_doc_ids(self, cluster: int) -> list[str]:
        rows = self.cluster_docs[self.cluster_doc_ptr[cluster] : self.cluster_doc_ptr[cluster + 1]]
        return [str(self.docs[r]) for r in rows]

    def sentence_concepts_of(self, sentence_rows: np.ndarray) -> list[np.ndarray]:
        return [self.sentence_concepts[self.sentence_ptr[r] : self.sentence_ptr[r + 1]] for r in sentence_rows]


def has_graph(folder: Path) -> bool:
    """Whether a generation folder holds a concept graph (one indexed with the graph off holds none)."""
    return (folder / GRAPH_FILE).exists()


def read_phrases(folder: Path) -> DocPhrases | None:
    path = folder / PHRASES_FILE
    if not path.exists():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {doc: [(key, surface) for key, surface in pairs] for doc, pairs in raw.items()}


def write_phrases(folder: Path, phrases: Mapping[str, list[tuple[str, str]]]) -> None:
    data = {doc: [list(pair) for pair in pairs] for doc, pairs in sorted(phrases.items())}
    (folder / PHRASES_FILE).write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
