"""The candidate ranker's model and file: a logistic regression over named features, two of them in one ranker
file (`hrr` for HRR's candidates, `chunks` for any chunk ids), and the ranker shipped in the package."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.retrieval.ranking.features import KNOWN_FEATURES, TOKEN_FEATURES

RANKER_FORMAT = "granrag-candidate-ranker"
RANKER_FORMAT_VERSION = 1
SHIPPED_RANKER = "candidate_ranker.json"
"""The ranker shipped in this package, beside this module."""
SHIPPED_TOKEN_RANKER = "candidate_ranker_tokens.json"
"""The shipped ranker for stores with token vectors: the same features plus MaxSim."""


@dataclass(frozen=True)
class LinearModel:
    """Logistic regression over standardised features: score = coef . (x - mean) / scale + intercept."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def score(self, table: Mapping[str, np.ndarray]) -> np.ndarray:
        x = np.column_stack([np.asarray(table[name], dtype=np.float64) for name in self.features])
        return ((x - self.mean) / self.scale) @ self.coef + self.intercept

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": float(self.intercept),
        }

    @property
    def needs_tokens(self) -> bool:
        return any(f in TOKEN_FEATURES for f in self.features)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinearModel:
        features = tuple(data["features"])
        unknown = [f for f in features if f not in KNOWN_FEATURES]
        arrays = [np.asarray(data[key], dtype=np.float64) for key in ("mean", "scale", "coef")]
        if unknown or any(a.shape != (len(features),) for a in arrays) or np.any(arrays[1] <= 0):
            raise ValueError(
                f"a model needs known features {unknown or ''} and one positive scale, mean and coefficient for each"
            )
        mean, scale, coef = arrays
        return cls(features, mean, scale, coef, float(data["intercept"]))


@dataclass(frozen=True)
class CandidateRanker:
    name: str
    hrr: LinearModel
    chunks: LinearModel
    fitted_on: str = ""
    cross_validation: Mapping[str, Any] = field(default_factory=dict)
    adapts_reliance: bool = True
    """Whether a store's adapted factor on the embedding coefficients (reliance.py) applies to this ranker: not for
    one whose figures on labelled questions were best at factor 1 on every corpus it was checked on."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RANKER_FORMAT,
            "format_version": RANKER_FORMAT_VERSION,
            "name": self.name,
            "fitted_on": self.fitted_on,
            "cross_validation": dict(self.cross_validation),
            "adapts_reliance": self.adapts_reliance,
            "models": {"hrr": self.hrr.to_json(), "chunks": self.chunks.to_json()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CandidateRanker:
        if data.get("format") != RANKER_FORMAT or data.get("format_version") != RANKER_FORMAT_VERSION:
            raise ValueError(f"not a {RANKER_FORMAT} file of version {RANKER_FORMAT_VERSION}")
        models = data["models"]
        return cls(
            str(data["name"]),
            LinearModel.from_json(models["hrr"]),
            LinearModel.from_json(models["chunks"]),
            str(data.get("fitted_on", "")),
            dict(data.get("cross_validation", {})),
            bool(data.get("adapts_reliance", True)),
        )

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")


def read_ranker(path: Path) -> CandidateRanker:
    """A ranker file; InvalidInputError with what to do when it cannot be used."""
    try:
        return CandidateRanker.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(
            f"cannot use the candidate ranker {path} ({type(exc).__name__}: {exc}); fit a new "
            "one with `granrag-mcp eval --fit-ranker`, or use the shipped one"
        ) from None


def shipped_ranker(tokens: bool = False) -> CandidateRanker:
    """The ranker fitted on SQuAD-A and shipped in the package; with `tokens`, the one that adds MaxSim features
    (for stores with token vectors). The same object on every call."""
    return _read_shipped(SHIPPED_TOKEN_RANKER if tokens else SHIPPED_RANKER)


@lru_cache(maxsize=2)
def _read_shipped(name: str) -> CandidateRanker:
    data = resources.files("granrag_mcp.retrieval").joinpath(name).read_text(encoding="utf-8")
    return CandidateRanker.from_json(json.loads(data))
