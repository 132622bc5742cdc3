"""Hierarchical Re-ranker Retriever: retrieve sentences and mid chunks, rerank at the mid level, return the broad
parents of the best mids, each with the mids that led to it as evidence.

Candidates come from sentences (dense and BM25, each mapped to its mid chunk) and from the mid level (dense and
BM25). The best `rerank_n` of them, by a first fusion, are reranked; the final order fuses the reranker's list
with the sentence lists and mid BM25 (weighted RRF), because a bi-encoder fallback alone orders 512-token chunks
worse than the sentences that point into them.

A question whose words cannot match the text (`View.words_match`: another language and script) is ranked from
vectors and its numbers: its BM25 lists are empty but for the mid level's, which searches the question's numbers
alone (years and counts are written in the same digits in either language); the mid dense list joins the final
fusion, and neither the store's adapted weights nor the candidate ranker apply, since both were fitted to
questions in the text's own language and, on English questions over Chinese, Hindi and Arabic text, put the right
passage first less often than plain fusion of the dense lists does (docs/evaluation.md, languages).
Such a question's sentence list searches with its vector moved toward its first mid hits (`retrieval/feedback.py`),
which finds the sentences of its topic more often; the mid list and the reranker keep the question's own vector,
which tells apart the passages of one topic better than the moved one does.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from granrag_mcp.levels import FINEST, Level, list_name, parent_of
from granrag_mcp.retrieval.candidate_ranking import rank_hrr_candidates
from granrag_mcp.retrieval.cross_lingual import numbers_of
from granrag_mcp.retrieval.feedback import Feedback, moved_query
from granrag_mcp.retrieval.fusion import reciprocal_rank_fusion
from granrag_mcp.retrieval.ranking.features import CandidateReads
from granrag_mcp.retrieval.rerank import RerankResult, require_reranker, rerank_chunks
from granrag_mcp.retrieval.rrf import check_weights
from granrag_mcp.retrieval.spans import dedupe_by_span
from granrag_mcp.retrieval.view import Scored, ScoredChunk, View, check_query

CANDIDATE_LEVEL: Level = parent_of(FINEST) or FINEST
"""The level HRR reranks at: the one above sentences."""
RESULT_LEVEL: Level = parent_of(CANDIDATE_LEVEL) or CANDIDATE_LEVEL
"""The level HRR returns: the parents of its candidates."""
SENTENCE_DENSE, SENTENCE_LEXICAL = "sentence_dense", "sentence_lexical"
CANDIDATE_LEXICAL, CANDIDATE_DENSE = list_name(CANDIDATE_LEVEL, "lexical"), list_name(CANDIDATE_LEVEL, "dense")
HRR_LISTS = ("rerank", SENTENCE_DENSE, SENTENCE_LEXICAL, CANDIDATE_LEXICAL)
"""The lists of the final fusion, and the names of their weights."""
CROSS_LINGUAL_LISTS = ("rerank", SENTENCE_DENSE, CANDIDATE_DENSE, CANDIDATE_LEXICAL)
"""The lists of the final fusion for a question whose words cannot match the text (its mid BM25 list searches the
question's numbers)."""
CROSS_LINGUAL_FEEDBACK: Feedback | None = Feedback(CANDIDATE_LEVEL, hits=3, weight=0.8)
"""How far the vector of a question whose words cannot match the text moves toward its first hits before HRR's
sentence list searches with it (`retrieval/feedback.py`); None leaves it where the model put it. Chosen on English
questions over Hindi, Arabic and Chinese text (in-sample for all three; docs/evaluation.md)."""
FEEDBACK_LISTS: tuple[str, ...] = (SENTENCE_DENSE,)
"""The dense lists that search with the moved vector; the others, the reranker and the candidate ranker use the
question's own. The sentence list gains from it; the mid list moved too lost mid HR@5 on the Chinese and Arabic
text (docs/decisions.md)."""
HRR_FUSION = "hrr"
"""The name of this fusion's weights in a store's adaptation."""
HRR_RRF_K = 10  # HRR fuses short, precise lists: a small k lets their first ranks count (docs/evaluation.md)


def hrr_weights(view: View, weights: Mapping[str, float] | None = None, query: str | None = None) -> dict[str, float]:
    """The weight of every list of HRR's final fusion: the adapted ones, overridden by `weights`, else 1.0; for a
    `query` whose words cannot match the text, the lists it fuses then (no adapted weights; its numbers' BM25 list)."""
    given = check_weights(weights, HRR_LISTS)
    if query is not None and not view.words_match(query):
        return {name: (given or {}).get(name, 1.0) for name in CROSS_LINGUAL_LISTS}
    chosen = view.fusion_weights(HRR_FUSION, given)
    return {name: chosen.get(name, 1.0) for name in HRR_LISTS}


def hrr_lists(
    view: View,
    query: str,
    vector: np.ndarray,
    sentence_k: int = 50,
    mid_k: int = 20,
    rerank_n: int = 20,
    rrf_k: int = HRR_RRF_K,
    moved: np.ndarray | None = None,
) -> tuple[dict[str, Scored], CandidateReads]:
    """The lists of the final fusion (HRR_LISTS) and what was read of the candidates: the sentence lists mapped to
    the candidate level, its BM25 list, and the reranker's order of the first fusion's best `rerank_n`. The dense
    lists of FEEDBACK_LISTS search with `moved` where it is given."""
    sentences = {
        SENTENCE_DENSE: view.dense(FINEST, _searched_with(SENTENCE_DENSE, vector, moved), sentence_k),
        SENTENCE_LEXICAL: view.lexical(FINEST, query, sentence_k),
    }
    words = view.words_match(query)
    evidence = {
        **view.map_lists(sentences, FINEST, CANDIDATE_LEVEL, vector),
        CANDIDATE_LEXICAL: view.lexical(CANDIDATE_LEVEL, query, mid_k) if words else _numbers(view, query, mid_k),
    }
    lists = {
        **evidence,
        CANDIDATE_DENSE: view.dense(CANDIDATE_LEVEL, _searched_with(CANDIDATE_DENSE, vector, moved), mid_k),
    }
    first = reciprocal_rank_fusion(lists, k=rrf_k)
    candidates = [item.key for item in first[:rerank_n]]
    reads = CandidateReads(view)
    # Every chunk the final fusion may return (the candidates and the evidence lists' chunks), in one catalog query.
    chunks = reads.chunks(candidates + [chunk_id for scored in evidence.values() for chunk_id, _ in scored])
    reranked = rerank_chunks(view, query, [chunks[i] for i in candidates if i in chunks], reads.sentence_vectors)
    final = {"rerank": [(h.chunk.id, h.score or 0.0) for h in reranked], **evidence}
    if not words:
        final = {name: final.get(name, lists.get(name, [])) for name in CROSS_LINGUAL_LISTS}
    return final, reads


def _searched_with(name: str, vector: np.ndarray, moved: np.ndarray | None) -> np.ndarray:
    """The vector the dense list `name` searches with: `moved` where there is one and the list is in FEEDBACK_LISTS."""
    return moved if moved is not None and name in FEEDBACK_LISTS else vector


def _numbers(view: View, query: str, k: int) -> Scored:
    """The candidate level's BM25 list of the query's numbers alone (empty when it has none): on the first 200
    English questions over Hindi, Chinese and Arabic text, hrr_search broad MRR@5 rose by 0.005-0.022 with it."""
    numbers = numbers_of(query)
    if not numbers:
        return []
    return view.snapshot.lexical[CANDIDATE_LEVEL].search(numbers, k, view.allowed(CANDIDATE_LEVEL))


def hrr_candidates(
    view: View,
    query: str,
    sentence_k: int = 50,
    mid_k: int = 20,
    rerank_n: int = 20,
    weights: Mapping[str, float] | None = None,
    rrf_k: int = HRR_RRF_K,
    ranked: bool = True,
) -> tuple[str, list[ScoredChunk]]:
    """The candidate stage: (the reranker's name, candidate-level chunks best first). With `ranked` and a candidate
    ranker on the view, the fused head is reordered by it (the name then says so). `weights` override the store's
    adapted weights list by list."""
    query = check_query(query)
    reranker = require_reranker(view)
    words = view.words_match(query)
    weights = hrr_weights(view, weights, query)
    vector = view.query_vector(query)
    moved = None
    if not words and CROSS_LINGUAL_FEEDBACK is not None:
        moved = moved_query(view, vector, CROSS_LINGUAL_FEEDBACK)
    lists, reads = hrr_lists(view, query, vector, sentence_k, mid_k, rerank_n, rrf_k, moved)
    fused = reciprocal_rank_fusion(lists, weights=weights, k=rrf_k)
    chunks = reads.chunks([item.key for item in fused])
    out = [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in fused]
    if ranked and words and view.candidate_ranker is not None:
        out = rank_hrr_candidates(view, query, vector, out, view.candidate_ranker, reads=reads)
        return f"{view.candidate_ranker.name}+{reranker.name}", out
    return reranker.name, out


def hrr_search(
    view: View,
    query: str,
    k: int = 5,
    sentence_k: int = 50,
    mid_k: int = 20,
    rerank_n: int = 20,
    weights: Mapping[str, float] | None = None,
    ranked: bool = True,
) -> RerankResult:
    reranker, candidates = hrr_candidates(view, query, sentence_k, mid_k, rerank_n, weights, ranked=ranked)
    parents = view.catalog.chunks(list({h.chunk.parent_id for h in candidates if h.chunk.parent_id is not None}))
    out: dict[int, ScoredChunk] = {}
    for hit in candidates:
        parent_id = hit.chunk.parent_id
        if parent_id not in out:
            out[parent_id] = ScoredChunk(parents[parent_id], hit.score, hit.sources)  # type: ignore[index]
        out[parent_id].evidence.append(hit.chunk.public_id)  # type: ignore[index]
    return RerankResult(reranker, dedupe_by_span(list(out.values()), k))
