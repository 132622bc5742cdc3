"""Bridge questions of the protocol (`bridge_protocol`) asked through the MCP tools, as an agent calls them, over
the in-memory MCP client: one-call evidence chains and the graph's paths and passages against flat search. Every
tool path's returned texts are packed, in order, into the same token budget before the answer check."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import numpy as np

from granrag_mcp.evaluation.bridge_protocol import Bridge, answered, find_bridges, unique_sentences
from granrag_mcp.levels import FINEST
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


async def _two_step(call: Call, bridge: Bridge) -> dict[str, Any] | None:
    """find_concepts for each name, then concept_paths between the top concepts."""
    found = []
    for name in (bridge.a, bridge.b):
        result = await call("find_concepts", {"query": name, "k": 1})
        if not result or not result["concepts"]:
            return None
        found.append(result["concepts"][0]["name"])
    return await call("concept_paths", {"source": found[0], "target": found[1], "max_tokens": BUDGET, **PATHS})


METHODS: dict[str, Callable[[Call, Bridge], Awaitable[dict[str, Any] | None]]] = {
    "evidence_chain(question)": lambda call, q: call("evidence_chain", {"question": q.question, "max_tokens": BUDGET}),
    "evidence_chain(a, b), names as written": lambda call, q: call(
        "evidence_chain", {"a": q.a, "b": q.b, "max_tokens": BUDGET}
    ),
    "search_narrow lexical=true k=20 (BM25)": lambda call, q: call(
        "search_narrow", {"query": q.question, "k": 20, "lexical": True, "max_tokens": BUDGET}
    ),
    "search_fused level=narrow k=20": lambda call, q: call(
        "search_fused", {"query": q.question, "k": 20, "level": "narrow", "max_tokens": BUDGET}
    ),
    "search_narrow lexical=true k=60 (BM25, the budget full)": lambda call, q: call(
        "search_narrow", {"query": q.question, "k": 60, "lexical": True, "max_tokens": BUDGET}
    ),
    "search_fused level=narrow k=60 (the budget full)": lambda call, q: call(
        "search_fused", {"query": q.question, "k": 60, "level": "narrow", "max_tokens": BUDGET}
    ),
    "graph_search mode=passages k=20": lambda call, q: call(
        "graph_search", {"query": q.question, "mode": "passages", "k": 20, "max_tokens": BUDGET}
    ),
    "concept_paths(A, B), names as written": lambda call, q: call(
        "concept_paths", {"source": q.a, "target": q.b, "max_tokens": BUDGET, **PATHS}
    ),
    "find_concepts(A), find_concepts(B), concept_paths": _two_step,
}


FLAT = tuple(name for name in METHODS if name.startswith("search_"))
ONE_CALL = ("evidence_chain(question)", "evidence_chain(a, b), names as written", "graph_search mode=passages k=20")


def independent_bridges(view: View, n: int, seed: int) -> tuple[list[Bridge], dict[str, Any]]:
    """The protocol's bridge questions of a store, and how many of their names the concept graph holds as they
    are written (by key, as `find_concepts` looks a name up) or resolves (key, alias or meaning)."""
    sentences = unique_sentences(c.text for c in view.catalog.chunks_of_level(FINEST))
    questions = find_bridges(sentences, n, seed)
    names = sorted({name for q in questions for name in (q.a, q.b)})
    exact = resolved = 0
    try:
        _, queries = techniques.graph_of(view)
    except techniques.NoGraphError:
        queries = None
    if queries is not None:
        for name in names:
            exact += queries.names.exact(name) is not None
            try:
                techniques.resolve_concept(view, queries, name)
                resolved += 1
            except techniques.UnknownConceptError:
                pass
    coverage = {
        "sentences": len(sentences),
        "names": len(names),
        "concepts": exact / max(len(names), 1),
        "resolved": resolved / max(len(names), 1),
    }
    return questions, coverage


def run_bridges(server: Any, questions: list[Bridge], tokens: TokenCounter) -> dict[str, Any]:
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
