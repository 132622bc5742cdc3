"""The fusion methods of `search_fused`: one module each, behind one registry.

A method is a module (or any object) with `SUMMARY`, `search(view, query, depth, request)` and
`used(view, depth, request)`; the tool's `method` argument and its description are built from `FUSION_METHODS`, so a
new method is a new module in this package and its line below (plus its test in tests/retrieval/).
"""

from __future__ import annotations

from typing import Protocol

from granrag_mcp.retrieval import rrf, union
from granrag_mcp.retrieval.fusion import FusionRequest, FusionUsed
from granrag_mcp.retrieval.view import ScoredChunk, View


class FusionMethod(Protocol):
    SUMMARY: str
    """What the method returns, in one clause for the tool's description."""

    def search(self, view: View, query: str, depth: int, request: FusionRequest) -> list[ScoredChunk]:
        """The best `depth` hits, best first."""
        ...

    def used(self, view: View, depth: int, request: FusionRequest) -> FusionUsed | None:
        """The weights, depths and RRF constant a search for `depth` hits fused with (None: it fuses no lists)."""
        ...


FUSION_METHODS: dict[str, FusionMethod] = {
    "rrf": rrf,
    "union": union,
}
"""Method name -> method, in the order the tool describes them."""
DEFAULT_FUSION_METHOD = "rrf"


def methods_description() -> str:
    """The tool's description of its `method` argument: "rrf: ...; union: ..."."""
    return "; ".join(f"{name}: {method.SUMMARY}" for name, method in FUSION_METHODS.items()) + "."
