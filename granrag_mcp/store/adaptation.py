"""The ranking settings a generation adapted to its own text (`indexing/adapt.py`): its file and format.

The file lies in the generation folder beside the indexes, so the manifest lists and checksums it and a reader
never sees settings of another generation's text. A generation without one (written before adaptation, or by a
run that skipped it) ranks with the fixed defaults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ADAPTATION_FILE = "adaptation.json"
ADAPTATION_FORMAT = "granrag-adaptation"
ADAPTATION_FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1 has no depths and rank constants: those fusions keep the fixed ones
WITHIN_DOCUMENTS = "@within"
"""The suffix of a fusion's weights for searches inside chosen documents (a `doc_ids` or `doc_prefix` filter),
where they differ from its weights across the store."""


@dataclass(frozen=True)
class Adaptation:
    """Weights of each fusion's lists by name (`fusions`: fusion name -> list name -> weight), the candidate
    ranker's scale on its embedding features against its lexical ones, what the pseudo-queries measured, and each
    fusion's list depths (fusion name -> list name -> depth for ten hits) and RRF rank constant."""

    fusions: Mapping[str, Mapping[str, float]]
    ranker_dense_scale: float = 1.0
    pseudo_queries: int = 0
    measured: Mapping[str, Any] = field(default_factory=dict)
    depths: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    rrf_ks: Mapping[str, int] = field(default_factory=dict)

    def weights(self, fusion: str, within_documents: bool = False) -> dict[str, float] | None:
        """The fusion's weights; `within_documents`: those for a search inside chosen documents where the store
        adapted its own, else the same."""
        found = self.fusions.get(fusion + WITHIN_DOCUMENTS) if within_documents else None
        found = found if found is not None else self.fusions.get(fusion)
        return dict(found) if found is not None else None

    def list_depths(self, fusion: str) -> dict[str, int]:
        """Each list's depth for ten hits where the store adapted it (lists not named keep the fusion's own)."""
        return dict(self.depths.get(fusion, {}))

    def rrf_k(self, fusion: str) -> int | None:
        return self.rrf_ks.get(fusion)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": ADAPTATION_FORMAT,
            "format_version": ADAPTATION_FORMAT_VERSION,
            "fusions": {name: dict(w) for name, w in self.fusions.items()},
            "ranker_dense_scale": self.ranker_dense_scale,
            "pseudo_queries": self.pseudo_queries,
            "measured": dict(self.measured),
            "depths": {name: dict(d) for name, d in self.depths.items()},
            "rrf_k": dict(self.rrf_ks),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Adaptation:
        if data.get("format") != ADAPTATION_FORMAT or data.get("format_version") not in READABLE_VERSIONS:
            raise ValueError(f"not a {ADAPTATION_FORMAT} file of version {' or '.join(map(str, READABLE_VERSIONS))}")
        fusions = {str(n): {str(k): float(v) for k, v in w.items()} for n, w in data["fusions"].items()}
        depths = {str(n): {str(k): int(v) for k, v in d.items()} for n, d in data.get("depths", {}).items()}
        rrf_ks = {str(n): int(v) for n, v in data.get("rrf_k", {}).items()}
        return cls(
            fusions,
            float(data["ranker_dense_scale"]),
            int(data["pseudo_queries"]),
            dict(data["measured"]),
            depths,
            rrf_ks,
        )


def write_adaptation(folder: Path, adaptation: Adaptation) -> None:
    (folder / ADAPTATION_FILE).write_text(json.dumps(adaptation.to_json(), indent=1) + "\n", encoding="utf-8")


def read_adaptation(folder: Path) -> Adaptation | None:
    """The generation's adaptation, None where it has none (the file was checksummed when the snapshot opened)."""
    path = folder / ADAPTATION_FILE
    if not path.is_file():
        return None
    return Adaptation.from_json(json.loads(path.read_text(encoding="utf-8")))
