"""Rerank: chunks of any levels reordered by the reranker (a cross-encoder, or the embedding fallback that
scores a chunk from the stored vectors of its sentences)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.records import Chunk
from granrag_mcp.rerankers import Reranker
from granrag_mcp.retrieval.view import ScoredChunk, View, check_query


@dataclass
class RerankResult:
    reranker: str
    hits: list[ScoredChunk]


def require_reranker(view: View) -> Reranker:
    if view.reranker is None:
        raise InvalidInputError("no reranker is configured on this server")
    return view.reranker


def rerank_chunks(
    view: View,
    query: str,
    chunks: Sequence[Chunk],
    sentence_vectors: Callable[[Sequence[Chunk]], list[tuple[np.ndarray, np.ndarray]]] | None = None,
) -> list[ScoredChunk]:
    """`chunks` best first by the view's reranker; `sentence_vectors` reads their sentences' vectors where the
    reranker scores from those (default `View.sentence_vectors`; a technique that reads them again later passes
    its own reads)."""
    reranker = require_reranker(view)
    if not chunks:
        return []
    if reranker.reads_sentence_vectors:
        vectors = (sentence_vectors or view.sentence_vectors)(chunks)
        scores = reranker.score_sentences(view.query_vector(query), vectors)  # type: ignore[attr-defined]
    else:
        scores = reranker.score(query, [c.text for c in chunks])
    return sorted((ScoredChunk(c, float(s)) for c, s in zip(chunks, scores)), key=lambda h: -(h.score or 0.0))


def rerank(view: View, query: str, public_ids: Sequence[str], top_n: int, method: str = "auto") -> RerankResult:
    """method: "reranker" (the reranker alone), "candidate-ranker" (the candidate ranker's features, the
    reranker's score among them), or "auto" (the candidate ranker where the view has one)."""
    query = check_query(query)
    reranker = require_reranker(view)
    chunks = view.resolve(public_ids)
    if method != "reranker" and view.candidate_ranker is not None:
        from granrag_mcp.retrieval.candidate_ranking import rank_chunks

        hits = rank_chunks(view, query, chunks, view.candidate_ranker)[:top_n]
        return RerankResult(f"{view.candidate_ranker.name}+{reranker.name}", hits)
    if method == "candidate-ranker":
        raise InvalidInputError(
            "this server runs without a candidate ranker (candidate_ranker=off): use method='reranker'"
        )
    return RerankResult(reranker.name, rerank_chunks(view, query, chunks)[:top_n])
