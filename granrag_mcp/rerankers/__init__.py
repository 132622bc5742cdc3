"""Rerankers: score (query, passage) pairs, higher meaning more relevant. One module per reranker.

A real cross-encoder (`cross_encoder`), loaded from local files only, and two embedding-similarity fallbacks for
when no cross-encoder weights are available offline: `sentence_vectors` (the default fallback: windows pooled from
the sentence vectors already in the index, no model work per passage) and `embedding_windows` (embeds each
passage's windows). `factory.load_reranker` builds the one a setting asks for. Nothing is loaded at import time.
"""

from granrag_mcp.rerankers.base import Reranker, sentence_windows, window_score
from granrag_mcp.rerankers.cross_encoder import CrossEncoderReranker, stored_locally
from granrag_mcp.rerankers.embedding_windows import EmbeddingReranker
from granrag_mcp.rerankers.factory import load_reranker
from granrag_mcp.rerankers.sentence_vectors import SentenceWindowReranker

__all__ = [
    "CrossEncoderReranker",
    "EmbeddingReranker",
    "Reranker",
    "SentenceWindowReranker",
    "load_reranker",
    "sentence_windows",
    "stored_locally",
    "window_score",
]
