"""Bridge questions from independent names (`bridge_spans`) asked through the MCP tools, as an agent calls them,
over the in-memory MCP client: flat search against the graph's paths and passages. Every tool's returned texts
are packed, in order, into the same token budget before the answer check."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import numpy as np

from granrag_mcp.evaluation.bridge_spans import (
    NameBridge,
    answered,
    bridges,
    frequent_names,
    names_by_sentence,
    proper_names,
    span_names,
)
from granrag_mcp.packing import TokenCounter, pack
from granrag_mcp.retrieval import graph as techniques
from granrag_mcp.retrieval.view import View

BUDGET = 2000
PATHS = {"k": 5, "evidence": 2, "max_hops": 3}  # an agent asking for the evidence of a link, within the budget

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]


def _texts(result: dict[str, Any] | None) -> list[str]:
    if result is None:
        return []
    return [h["text"] for h in result.get("hits", [])] + [s["text"] for s in result.get("sentences", [])]


async def _two_step(call: Call, bridge: NameBridge) -> dict[str, Any] | None:
    """find_concepts for each name, then concept_paths between the top concepts."""
    found = []
    for name in (bridge.a, bridge.b):
        result = await call("find_concepts", {"query": name, "k": 1})
        if not result or not result["concepts"]:
            return None
        found.append(result["concepts"][0]["name"])
    return await call("concept_paths", {"source": found[0], "target": found[1], "max_tokens": BUDGET, **PATHS})


METHODS: dict[str, Callable[[Call, NameBridge], Awaitable[dict[str, Any] | None]]] = {
    "search_narrow lexical=true k=20 (BM25)": lambda call, q: call(
        "search_narrow", {"query": q.question, "k": 20, "lexical": True, "max_tokens": BUDGET}
    ),
    "search_fused level=narrow k=20": lambda call, q: call(
        "search_fused", {"query": q.question, "k": 20, "level": "narrow", "max_tokens": BUDGET}
    ),
    "graph_search mode=passages k=20": lambda call, q: call(
        "graph_search", {"query": q.question, "mode": "passages", "k": 20, "max_tokens": BUDGET}
    ),
    "concept_paths(A, B), names as written": lambda call, q: call(
        "concept_paths", {"source": q.a, "target": q.b, "max_tokens": BUDGET, **PATHS}
    ),
    "find_concepts(A), find_concepts(B), concept_paths": _two_step,
}


def independent_bridges(view: View, answers: list[str], n: int, seed: int) -> tuple[list[NameBridge], dict[str, Any]]:
    """The bridge questions of a store and the names' coverage by its concept graph."""
    seen: set[tuple[str, int, int]] = set()
    sentences = []
    for chunk in view.catalog.chunks_of_level("narrow"):
        if (chunk.doc_id, chunk.start, chunk.end) not in seen:  # overlapping broad chunks repeat a sentence
            seen.add((chunk.doc_id, chunk.start, chunk.end))
            sentences.append(chunk.text)
    names = proper_names(span_names(answers), sentences)
    held = names_by_sentence(sentences, names)
    frequent = frequent_names(names, held)
    _, queries = techniques.graph_of(view)
    exact = [name for name in frequent if queries.names.exact(name) is not None]
    resolved = 0
    for name in frequent:
        try:
            techniques.resolve_concept(view, queries, name)
            resolved += 1
        except techniques.UnknownConceptError:
            pass
    coverage = {
        "names": len(names),
        "names_in_two_sentences": len(frequent),
        "concepts": len(exact) / max(len(frequent), 1),
        "resolved": resolved / max(len(frequent), 1),
        "not_concepts": sorted(set(frequent) - set(exact))[:30],
    }
    return bridges(names, held, n, seed), coverage


def run_bridges(server: Any, questions: list[NameBridge], tokens: TokenCounter) -> dict[str, Any]:
    """Each method's share of questions answered, its refusals (tool errors) and p50 through the MCP client."""
    from mcp.client import Client

    rows: dict[str, Any] = {}

    async def main() -> None:
        async with Client(server) as client:
            errors: list[str] = []

            async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    errors.append(" ".join(getattr(c, "text", "") for c in result.content)[:200])
                    return None
                return result.structured_content

            for method, ask in METHODS.items():
                errors.clear()
                hits, seconds = 0, []
                for bridge in questions:
                    start = time.perf_counter()
                    result = await ask(call, bridge)
                    seconds.append(time.perf_counter() - start)
                    texts = [p.text for p in pack(_texts(result), BUDGET, tokens).pieces]
                    hits += answered(bridge, texts)
                rows[method] = {
                    "answered": hits / max(len(questions), 1),
                    "refused": len(errors),
                    "p50_ms": 1000 * float(np.median(seconds)) if seconds else 0.0,
                    "example_refusals": errors[:3],
                }

    anyio.run(main)
    return rows
