"""The candidate ranker's reliance on the embedding model against word counts: one factor on the coefficients of
its embedding features, which a store adapts to its text (`indexing/adapt.py`) where the ranker allows it
(`CandidateRanker.adapts_reliance`)."""

from __future__ import annotations

import numpy as np

from granrag_mcp.retrieval.ranking.model import LinearModel

DENSE_FEATURES = frozenset(
    {"rerank_score", "rerank_gap", "dense_best", "dense_top3", "dense_gap", "rr_rerank", "rr_sentence_dense"}
    | {"rank_rerank_score", "rank_dense_best", "rank_dense_top3"}
    | {"maxsim_best", "maxsim_top3", "maxsim_gap"}
)
"""The candidate ranker's features that come from the embedding model; the others count words."""


def scaled_model(model: LinearModel, scale: float) -> LinearModel:
    """`model` with its embedding features' coefficients multiplied by `scale`."""
    if scale == 1.0:
        return model
    factors = np.array([scale if f in DENSE_FEATURES else 1.0 for f in model.features])
    return LinearModel(model.features, model.mean, model.scale, model.coef * factors, model.intercept)
