"""Bridge and overview questions built from an indexed corpus, to compare the concept graph with flat search.

Bridge questions: two concepts A and B that never share a sentence but are both linked to a third concept C
("How is A connected to B?"). A method answers one when the text it returns within `BUDGET` tokens holds a
sentence that mentions A and C and one that mentions C and B, for some such C: the two linking sentences.

Overview questions: one per document ("What are the main themes of <title>?"). A method's coverage is the share
of the document's ten most frequent concepts that the text it returns within `BUDGET` tokens mentions.

Methods: `search_narrow` (dense sentences), `search_narrow` with BM25, `search_fused` (RRF, narrow level),
graph `concept_paths` (A to B, 3 paths of at most 4 hops, 2 evidence sentences a hop) and graph_search
passages (personalized PageRank); for overviews, graph_search communities within the document against
search_fused and search_broad. Every method's returned texts are packed into the same budget in their order.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from granrag_mcp.levels import FINEST
from granrag_mcp.packing import TokenCounter, pack
from granrag_mcp.retrieval import graph as techniques
from granrag_mcp.retrieval.level_search import search_level
from granrag_mcp.retrieval.rrf import search_rrf
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.graph import ConceptGraph
from granrag_mcp.text.concepts import ConceptMatcher

BUDGET = 2000
TOP_CONCEPTS = 10


@dataclass(frozen=True)
class Bridge:
    a: int
    b: int
    links: tuple[int, ...]  # concepts linked to both

    def question(self, graph: ConceptGraph) -> str:
        return f"How is {graph.names[self.a]} connected to {graph.names[self.b]}?"


def bridge_questions(graph: ConceptGraph, n: int, seed: int = 0) -> list[Bridge]:
    """Up to n bridge pairs: A and B share no sentence and no edge, and have at least one common neighbour."""
    rng = random.Random(seed)
    hubs = [c for c in range(len(graph)) if graph.degree(c) >= 2]
    rng.shuffle(hubs)
    out: dict[tuple[int, int], Bridge] = {}
    for hub in hubs:
        if len(out) >= n:
            break
        neighbours = graph.neighbours(hub)[0].tolist()
        a, b = sorted(rng.sample(neighbours, 2))
        if (a, b) in out or b in set(graph.neighbours(a)[0].tolist()):
            continue
        if np.intersect1d(graph.mentions(a), graph.mentions(b)).size:
            continue
        links = tuple(sorted(set(graph.neighbours(a)[0].tolist()) & set(graph.neighbours(b)[0].tolist())))
        out[(a, b)] = Bridge(a, b, links)
    return list(out.values())


def answered(bridge: Bridge, found: list[set[int]]) -> bool:
    """Whether the returned sentences (each as the set of concepts it mentions) hold both linking sentences."""
    for link in bridge.links:
        first = any(bridge.a in s and link in s for s in found)
        if first and any(link in s and bridge.b in s for s in found):
            return True
    return False


def _budgeted(texts: list[str], tokens: TokenCounter) -> list[str]:
    return [p.text for p in pack(texts, BUDGET, tokens).pieces]


def _concepts_of(matcher: ConceptMatcher, texts: list[str]) -> list[set[int]]:
    """Concepts of each sentence in the texts (a text longer than a sentence counts as one unit)."""
    return [set(matcher.find(t)) for t in texts]


def evaluate(view: View, tokens: TokenCounter, n_bridges: int = 200, seed: int = 0) -> dict:
    graph, queries = techniques.graph_of(view)
    matcher = queries.matcher
    bridges = bridge_questions(graph, n_bridges, seed)

    def texts_of(ids: list[int]) -> list[str]:
        chunks = view.catalog.chunks(ids)
        return [chunks[i].text for i in ids if i in chunks]

    def paths(bridge: Bridge) -> list[str]:
        found = techniques.strongest_paths(view, str(graph.keys[bridge.a]), str(graph.keys[bridge.b]), 4, 3, 2)
        return texts_of(list(dict.fromkeys(i for p in found for hop in p.hops for i in hop.evidence)))

    methods: dict[str, Callable[[Bridge, str], list[str]]] = {
        "search_narrow (dense)": lambda _, q: [h.chunk.text for h in search_level(view, q, FINEST, 60)],
        "search_narrow (dense + BM25)": lambda _, q: [
            h.chunk.text for h in search_level(view, q, FINEST, 60, lexical=True)
        ],
        "search_fused (rrf, narrow)": lambda _, q: [h.chunk.text for h in search_rrf(view, q, 60, level=FINEST)],
        "graph_search (passages)": lambda _, q: [h.chunk.text for h in techniques.ppr_passages(view, q, 60)],
        "concept_paths": lambda b, _: paths(b),
    }
    bridge_rows = {}
    for name, method in methods.items():
        hits, seconds = 0, []
        for bridge in bridges:
            start = time.perf_counter()
            texts = _budgeted(method(bridge, bridge.question(graph)), tokens)
            seconds.append(time.perf_counter() - start)
            hits += answered(bridge, _concepts_of(matcher, texts))
        bridge_rows[name] = {"answered": hits / max(len(bridges), 1), "p50_ms": 1000 * float(np.median(seconds))}

    overview_rows = _overviews(view, tokens, graph, matcher)
    return {
        "bridge_questions": len(bridges),
        "budget_tokens": BUDGET,
        "bridge": bridge_rows,
        "overview_documents": len(graph.docs),
        "overview": overview_rows,
        "graph": {"concepts": len(graph), "edges": graph.n_edges, "communities": graph.n_clusters},
    }


def _overviews(view: View, tokens: TokenCounter, graph: ConceptGraph, matcher: ConceptMatcher) -> dict:
    rows: dict[str, list[float]] = {
        "graph_search (communities, doc_id)": [],
        "search_fused (rrf, mid)": [],
        "search_broad": [],
    }
    doc_rows = {str(d): n for n, d in enumerate(graph.docs)}
    for doc, row in doc_rows.items():
        counts = np.zeros(len(graph), np.int64)
        for sentence_row in np.flatnonzero(graph.sentence_doc == row):
            counts[
                graph.sentence_concepts[graph.sentence_ptr[sentence_row] : graph.sentence_ptr[sentence_row + 1]]
            ] += 1
        top = set(np.argsort(-counts)[:TOP_CONCEPTS].tolist())
        title = Path(doc).stem.replace("_", " ")
        query = f"What are the main themes of {title}?"
        reports = techniques.communities(view, query, 5, doc)
        report_texts = []
        for c in reports:
            ids = [int(i) for i in graph.key_sentences(c.cluster)]
            report_texts.append(" ; ".join(str(graph.names[m]) for m in c.members[:10]))
            report_texts += [ch.text for ch in view.catalog.chunks(ids).values()]
        methods = {
            "graph_search (communities, doc_id)": report_texts,
            "search_fused (rrf, mid)": [h.chunk.text for h in search_rrf(view, query, 20, level="mid")],
            "search_broad": [h.chunk.text for h in search_level(view, query, "broad", 5)],
        }
        for name, texts in methods.items():
            mentioned = set().union(*_concepts_of(matcher, _budgeted(texts, tokens)))
            rows[name].append(len(top & mentioned) / max(len(top), 1))
    return {name: {"coverage": float(np.mean(v)) if v else 0.0} for name, v in rows.items()}


def graph_report(engine, settings, n_bridges: int, seed: int, progress, notes: list[str]) -> dict | None:
    """The bridge and overview questions above, and the bridge questions of the protocol (`bridge_protocol`: names
    from the text, not the graph) asked through the MCP tools (`bridge_tools`); None with a note when the store
    has no graph."""
    from granrag_mcp.evaluation.bridge_tools import independent_bridges, run_bridges
    from granrag_mcp.retrieval.graph import NoGraphError
    from granrag_mcp.server.app import build_server

    view = engine.view()
    progress.message(f"concept graph: {n_bridges} bridge questions and one overview question per document")
    try:
        result = evaluate(view, engine.tokenizer, n_bridges, seed)
        questions, coverage = independent_bridges(view, n_bridges, seed)
        progress.message(f"concept graph: {len(questions)} bridge questions of the protocol, through the tools")
        result["independent"] = {
            "questions": len(questions),
            "coverage": coverage,
            "bridge": run_bridges(build_server(settings, lambda _: engine), questions, engine.tokenizer),
        }
        return result
    except NoGraphError:
        notes.append("the store has no concept graph (indexed with GRANRAG_GRAPH=false): no bridge or overview table")
        return None


GRAPH_METHOD = (
    "Questions built from the store's own concept graph (in-sample: the graph's vocabulary picks them). A bridge "
    "question names two concepts A and B that never "
    f"share a sentence but both share one with a third concept C; it is answered when the text a method returns "
    f"within {BUDGET} tokens holds a sentence naming A and C and one naming C and B. An overview question asks for "
    f"the main themes of one document; its coverage is the share of the document's {TOP_CONCEPTS} most frequent "
    "concepts that the returned text names. p50: milliseconds per question in process, the question's embedding "
    "included once."
)


def graph_table(result: dict) -> str:
    """One table of every method: bridge questions answered, their p50, overview coverage (markdown)."""
    rows: dict[str, list[str]] = {}
    for name, row in result["bridge"].items():
        rows[name] = [f"{row['answered']:.3f}", f"{row['p50_ms']:.1f}", "-"]
    for name, row in result["overview"].items():
        rows.setdefault(name, ["-", "-", "-"])[2] = f"{row['coverage']:.3f}"
    lines = [
        f"| method | bridge answered ({result['bridge_questions']}) | bridge p50 ms | "
        f"overview coverage ({result['overview_documents']} documents) |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | " + " | ".join(values) + " |" for name, values in rows.items()]
    independent = result.get("independent")
    if independent:
        coverage = independent["coverage"]
        lines += [
            "",
            f"Bridge questions of the protocol ({independent['questions']}: names from the text, not the graph), "
            f"through the MCP tools, {BUDGET} tokens per tool path; of their {coverage['names']} names, graph "
            f"concepts as written {coverage['concepts']:.3f}, resolved {coverage['resolved']:.3f}",
            "",
            "| tool call | answered | refused | p50 ms |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {name} | {row['answered']:.3f} | {row['refused']} | {row['p50_ms']:.1f} |"
            for name, row in independent["bridge"].items()
        ]
    return "\n".join(lines)
