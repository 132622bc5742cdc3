"""Sentence-transformers' input preparation and mean pooling, shared by every encoder that runs without it."""

from __future__ import annotations

from typing import Any


def sentence_texts(texts: list[str], lower_case: bool) -> list[str]:
    """Texts as sentence-transformers hands them to its transformer: stripped, lower-cased if the model says so."""
    texts = [t.strip() for t in texts]
    return [t.lower() for t in texts] if lower_case else texts


def mean_pool(tokens: Any, attention_mask: Any) -> Any:
    """Token vectors (torch) averaged over the attention mask, as sentence-transformers' Pooling does."""
    mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
    return (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
