"""The reranker a setting asks for."""

from __future__ import annotations

import logging

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.errors import ModelLoadError
from granrag_mcp.rerankers.base import Reranker
from granrag_mcp.rerankers.cross_encoder import CrossEncoderReranker, stored_locally
from granrag_mcp.rerankers.embedding_windows import EmbeddingReranker
from granrag_mcp.rerankers.sentence_vectors import SentenceWindowReranker
from granrag_mcp.settings import DEFAULT_CROSS_ENCODER

log = logging.getLogger(__name__)


def load_reranker(spec: str, embedder: Embedder, cross_encoder_model: str = DEFAULT_CROSS_ENCODER) -> Reranker:
    """Build the reranker a setting asks for.

    "auto": the cross-encoder if its weights are available locally, else the sentence-window fallback (logged at
    INFO: the fallback is the documented default, not a fault). "embedding": the sentence-window fallback.
    "embedding-windows": the fallback that embeds each passage's windows. "cross-encoder": `cross_encoder_model`,
    failing if it cannot be loaded. Anything else: a cross-encoder name or local path.
    """
    if spec == "embedding":
        return SentenceWindowReranker(embedder)
    if spec == "embedding-windows":
        return EmbeddingReranker(embedder)
    if spec == "cross-encoder":
        return CrossEncoderReranker(cross_encoder_model)
    if spec == "auto":
        try:
            if not stored_locally(cross_encoder_model):  # importing sentence-transformers only to fail costs seconds
                raise ModelLoadError(f"{cross_encoder_model!r} is neither a local path nor in the Hugging Face cache")
            return CrossEncoderReranker(cross_encoder_model)
        except ModelLoadError as exc:
            log.info(
                "cross-encoder %r is not available locally; reranking with the embedding fallback (%s)",
                cross_encoder_model,
                embedder.name,
            )
            log.debug("cross-encoder load failure: %s", exc)
            return SentenceWindowReranker(embedder)
    return CrossEncoderReranker(spec)
