"""The candidate ranker at work: HRR's candidates, or any chunks, reordered by a model's scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.ranking.features import (
    CandidateReads,
    Sentences,
    candidate_sentences,
    inside_features,
    list_features,
    order_by,
    query_terms,
    rank_features,
    token_features,
)
from granrag_mcp.retrieval.ranking.model import CandidateRanker
from granrag_mcp.retrieval.view import ScoredChunk

RANKED_HEAD = 20
"""How many of HRR's candidates the ranker reorders (HRR reranks this many); the rest keep their places."""


def reranker_scores(
    view: Any,
    query: str,
    vector: np.ndarray,
    chunks: Sequence[Chunk],
    sentences: Sentences,
    known: Mapping[int, float] | None = None,
) -> list[float]:
    """The view's reranker score of each chunk: from `known` (chunk id -> score) where given, else computed (from
    the sentence vectors already read when the reranker reads those, else from the texts)."""
    known = known or {}
    missing = [n for n, c in enumerate(chunks) if c.id not in known]
    computed: dict[int, float] = {}
    reranker = view.reranker
    if missing and reranker is not None:
        if reranker.reads_sentence_vectors:
            values = reranker.score_sentences(vector, [sentences.of(n) for n in missing])
        else:
            values = reranker.score(query, [chunks[n].text for n in missing])
        computed = {n: float(v) for n, v in zip(missing, values)}
    floor = min(known.values(), default=0.0)
    return [known[c.id] if c.id in known else computed.get(n, floor) for n, c in enumerate(chunks)]


def hrr_table(
    view: Any,
    query: str,
    vector: np.ndarray,
    candidates: Sequence[Any],
    tokens: bool = False,
    reads: CandidateReads | None = None,
) -> dict[str, np.ndarray]:
    """Every feature of HRR's candidates (ScoredChunks in HRR's order); with `tokens`, the MaxSim ones too.
    `reads`: what the query has read of its candidates already (HRR's reranker read their sentences)."""
    chunks = [hit.chunk for hit in candidates]
    sentences = (reads or CandidateReads(view)).sentences(chunks)
    known = {hit.chunk.id: hit.sources["rerank"].score for hit in candidates if "rerank" in hit.sources}
    scores = reranker_scores(view, query, vector, chunks, sentences, known)
    table = {**list_features(candidates), **inside_features(query_terms(view, query), vector, sentences, scores)}
    table.update(rank_features(table))
    if tokens:
        table.update(token_features(view, query, sentences))
    return table


def rank_hrr_candidates(
    view: Any,
    query: str,
    vector: np.ndarray,
    candidates: Sequence[Any],
    ranker: CandidateRanker,
    head: int = RANKED_HEAD,
    reads: CandidateReads | None = None,
) -> list[Any]:
    """HRR's candidates with the first `head` reordered by the ranker's `hrr` model (scores: its probabilities);
    the rest follow in HRR's order."""
    ranked = list(candidates[:head])
    if not ranked:
        return list(candidates)
    scores = ranker.hrr.score(hrr_table(view, query, vector, ranked, ranker.hrr.needs_tokens, reads))
    probabilities = 1.0 / (1.0 + np.exp(-scores))
    out = [
        ScoredChunk(ranked[i].chunk, float(probabilities[i]), ranked[i].sources, ranked[i].evidence)
        for i in order_by(scores)
    ]
    floor = min(h.score or 0.0 for h in out)
    for hit in candidates[head:]:  # below every ranked one, in HRR's order
        out.append(ScoredChunk(hit.chunk, floor * 0.5, hit.sources, hit.evidence))
        floor *= 0.5
    return out


def rank_chunks(view: Any, query: str, chunks: Sequence[Chunk], ranker: CandidateRanker) -> list[Any]:
    """Any chunks best first by the ranker's `chunks` model (scores: its probabilities)."""
    if not chunks:
        return []
    vector = view.query_vector(query)
    sentences = candidate_sentences(view, chunks)
    table = inside_features(
        query_terms(view, query), vector, sentences, reranker_scores(view, query, vector, chunks, sentences)
    )
    if ranker.chunks.needs_tokens:
        table.update(token_features(view, query, sentences))
    scores = ranker.chunks.score(table)
    probabilities = 1.0 / (1.0 + np.exp(-scores))
    return [ScoredChunk(chunks[i], float(probabilities[i])) for i in order_by(scores)]
