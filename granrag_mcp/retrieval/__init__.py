"""Retrieval: a `View` of one snapshot (ids, single-level searches, hierarchy walks) and one module per technique.

| module | technique |
|---|---|
| `level_search` | one level, dense or dense + BM25 by RRF |
| `union` | top-level and fine hits united by score (dual granularity) |
| `rrf` | weighted RRF of dense and BM25 lists across levels, mapped to one level |
| `hrr` | Hierarchical Re-ranker Retriever |
| `window` | a chunk with its neighbours (sentence window) |
| `parents` | enclosing chunks, auto-merging by share of children |
| `rerank` | chunks reordered by the reranker |

The server, the CLI and the evaluation call these functions; `fusion` and `spans` are their shared pure parts.
"""
