"""Concept-graph tools: find concepts, a concept's neighbourhood, paths between two concepts, and global search
(community reports, or passages ranked by personalized PageRank). Every answer names the sentences that state it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST, TOP
from granrag_mcp.packing import TokenCounter, pack
from granrag_mcp.records import Chunk, format_chunk_id
from granrag_mcp.retrieval import evidence_chain as chains
from granrag_mcp.retrieval import graph as techniques
from granrag_mcp.retrieval import summaries
from granrag_mcp.retrieval.view import View
from granrag_mcp.server.schemas.arguments import MaxTokens, Query
from granrag_mcp.server.schemas.graph import (
    ChainLink,
    ChainName,
    ChainSentence,
    CommunityReport,
    Concept,
    ConceptList,
    EvidenceChain,
    GraphEdge,
    GraphPath,
    GraphSearchResult,
    Neighbourhood,
    PathsResult,
    Sentence,
)
from granrag_mcp.server.tools.base import CurrentView, Tokens, read_only_tool
from granrag_mcp.server.tools.presenting import cited_sentences, hits_result
from granrag_mcp.store.graph import ConceptGraph

ConceptName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A name as the documents write it (any case or plural, an acronym, a surname).",
    ),
]
Evidence = Annotated[int, Field(ge=1, le=5, description="Evidence sentences per edge (1-5).")]


def _concept(graph: ConceptGraph, concept: int, score: float | None = None, depth: int | None = None) -> Concept:
    cluster = int(graph.concept_cluster[concept])
    return Concept(
        name=str(graph.names[concept]),
        frequency=int(graph.frequency[concept]),
        degree=graph.degree(concept),
        community=cluster if cluster >= 0 else None,
        score=None if score is None else round(score, 4),
        depth=depth,
        mentions=[format_chunk_id(FINEST, int(i)) for i in graph.mentions(concept)[:3]],
    )


def _edge(graph: ConceptGraph, edge: techniques.Edge) -> GraphEdge:
    return GraphEdge(
        source=str(graph.names[edge.source]),
        target=str(graph.names[edge.target]),
        weight=round(edge.weight, 4),
        count=edge.count,
        evidence=[format_chunk_id(FINEST, i) for i in edge.evidence],
    )


def _found(view: View, ids: Iterable[int]) -> list[Chunk]:
    """The sentences, each once, in the order first named."""
    ordered = list(dict.fromkeys(ids))
    chunks = view.catalog.chunks(ordered)
    return [chunks[i] for i in ordered if i in chunks]


def _sentences(
    view: View, tokens: TokenCounter, ids: Iterable[int], max_tokens: int
) -> tuple[list[Sentence], int, int]:
    """The sentences within the budget; tokens used and sentences omitted."""
    found = _found(view, ids)
    packing = pack([c.text for c in found], max_tokens, tokens)
    out = [
        Sentence(chunk_id=c.public_id, doc_id=c.doc_id, start=c.start, end=c.end, text=p.text, truncated=p.truncated)
        for c, p in zip(found, packing.pieces)
    ]
    return out, packing.tokens_used, packing.omitted


def _cited(
    view: View, tokens: TokenCounter, ids: Iterable[int], max_tokens: int
) -> tuple[list[ChainSentence], int, int]:
    """`_sentences` with each one's citation (document, pages, heading path)."""
    out, packing = cited_sentences(view, tokens, _found(view, ids), max_tokens, ChainSentence)
    return out, packing.tokens_used, packing.omitted


def _chain_name(named: chains.Named) -> ChainName:
    return ChainName(written=named.written, found=named.found, how=named.how, sentences=len(named.rows))


def register(server: MCPServer, budget: int) -> None:
    """Add the concept-graph tools; `budget` is the default of every max_tokens argument."""

    @read_only_tool(server, "Find concepts")
    def find_concepts(
        query: Query,
        ctx: Context[Any, Any],
        view: CurrentView,
        k: Annotated[int, Field(ge=1, le=50, description="Number of concepts (1-50).")] = 10,
    ) -> ConceptList:
        """Find concepts of the index's concept graph by name (fuzzy) or meaning (the name's embedding): noun
        phrases and names found in the documents, with how many sentences mention them (frequency), how many
        concepts they co-occur with (degree), their community and a few sentence ids. Start here for multi-hop
        questions ("how is A related to B"): then concept_paths(A, B) or concept_neighbourhood(A).
        """
        graph, _ = techniques.graph_of(view)
        found = techniques.find_concepts(view, query, k)
        return ConceptList(
            generation=view.snapshot.generation, concepts=[_concept(graph, m.concept, m.score) for m in found]
        )

    @read_only_tool(server, "Concept neighbourhood")
    def concept_neighbourhood(
        concept: ConceptName,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        depth: Annotated[int, Field(ge=1, le=techniques.MAX_DEPTH, description="Hops from the concept (1-2).")] = 1,
        max_nodes: Annotated[int, Field(ge=2, le=50, description="Most concepts returned, the centre included.")] = 15,
        evidence: Evidence = 1,
        max_tokens: MaxTokens = budget,
    ) -> Neighbourhood:
        """The concepts that co-occur with one concept in the documents (depth 1) and their own neighbours (depth
        2), strongest links first, each link with the sentences that state it (ids in `evidence`, text in
        `sentences`). An unknown name is an error listing the closest names.
        """
        graph, _ = techniques.graph_of(view)
        found = techniques.neighbourhood(view, concept, depth, max_nodes, evidence)
        sentences, used, omitted = _sentences(view, tokens, (i for e in found.edges for i in e.evidence), max_tokens)
        return Neighbourhood(
            generation=view.snapshot.generation,
            tokens_used=used,
            omitted=omitted,
            concept=_concept(graph, found.center, depth=0),
            neighbours=[_concept(graph, c, depth=d) for c, d in found.nodes[1:]],
            edges=[_edge(graph, e) for e in found.edges],
            sentences=sentences,
        )

    @read_only_tool(server, "Paths between concepts")
    def concept_paths(
        source: ConceptName,
        target: ConceptName,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        max_hops: Annotated[int, Field(ge=1, le=techniques.MAX_HOPS, description="Longest path in hops (1-4).")] = 3,
        k: Annotated[int, Field(ge=1, le=10, description="Number of paths (1-10).")] = 3,
        evidence: Evidence = 1,
        max_tokens: MaxTokens = budget,
    ) -> PathsResult:
        """The strongest chains of co-occurrence linking two concepts (at most max_hops hops), each hop with the
        sentence that states it: evidence for multi-hop questions such as "how is A connected to B". Paths go
        through different intermediate concepts; links of one or two hops are found through the sentences that
        mention both names. Names are taken as written; an unknown one is an error listing near names.
        """
        graph, _ = techniques.graph_of(view)
        paths = techniques.strongest_paths(view, source, target, max_hops, k, evidence)
        ids = (i for p in paths for hop in p.hops for i in hop.evidence)
        sentences, used, omitted = _sentences(view, tokens, ids, max_tokens)
        a, b = (paths[0].concepts[0], paths[0].concepts[-1]) if paths else (None, None)
        return PathsResult(
            generation=view.snapshot.generation,
            tokens_used=used,
            omitted=omitted,
            source=str(graph.names[a]) if a is not None else source,
            target=str(graph.names[b]) if b is not None else target,
            paths=[
                GraphPath(
                    concepts=[str(graph.names[c]) for c in p.concepts],
                    cost=round(p.cost, 4),
                    hops=[_edge(graph, h) for h in p.hops],
                )
                for p in paths
            ],
            sentences=sentences,
        )

    @read_only_tool(server, "Evidence chain between two names")
    def evidence_chain(
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        question: Annotated[
            str | None,
            Field(
                max_length=2000,
                description="A question naming two things, such as 'How is A connected to B?'; or pass a and b.",
            ),
        ] = None,
        a: Annotated[
            str | None, Field(max_length=200, description="The first name, as the documents write it.")
        ] = None,
        b: Annotated[
            str | None, Field(max_length=200, description="The second name, as the documents write it.")
        ] = None,
        k: Annotated[int, Field(ge=1, le=50, description="Most links returned (1-50).")] = 20,
        max_tokens: MaxTokens = budget,
    ) -> EvidenceChain:
        """The sentences that link two names, in one call: "How is A connected to B?" (or a and b). Each name is
        found in every sentence (any case or accents, the graph's aliases, else its longest part); the answer is
        the sentences naming both, then chains A - C - B through a third name or term C, each as the sentence
        with A and C followed by the one with C and B, with their citations, within max_tokens. No concept ids
        needed; works without the concept graph too (it adds its concepts and longer paths).
        """
        if a is None or b is None:
            if a is not None or b is not None or not question:
                raise InvalidInputError(
                    "pass a question naming two things ('How is A connected to B?') or both a and b"
                )
            a, b = chains.names_of_question(question, view)
        chain = chains.evidence_chain(view, a, b, k)
        sentences, used, omitted = _cited(view, tokens, (i for link in chain.links for i in link.sentences), max_tokens)
        return EvidenceChain(
            generation=view.snapshot.generation,
            tokens_used=used,
            omitted=omitted,
            a=_chain_name(chain.a),
            b=_chain_name(chain.b),
            links=[
                ChainLink(via=link.via, evidence=[format_chunk_id(FINEST, i) for i in link.sentences])
                for link in chain.links
            ],
            sentences=sentences,
        )

    @read_only_tool(server, "Global search over the concept graph")
    def graph_search(
        query: Query,
        ctx: Context[Any, Any],
        view: CurrentView,
        tokens: Tokens,
        mode: Annotated[
            Literal["communities", "passages"],
            Field(
                description="communities: reports on groups of related concepts, for overview and 'main themes' "
                "questions; passages: sentences ranked by personalized PageRank from the query's concepts."
            ),
        ] = "communities",
        k: Annotated[int, Field(ge=1, le=30, description="Number of reports or passages (1-30).")] = 5,
        doc_id: Annotated[
            str | None, Field(max_length=1000, description="Only within this document (a doc_id of list_documents).")
        ] = None,
        summary: Annotated[
            bool,
            Field(
                description="mode=communities: each community's extractive summary (its central sentences with "
                "their citations; with doc_id, that document's) within an equal share of max_tokens, in place of "
                "its three key sentences."
            ),
        ] = False,
        max_tokens: MaxTokens = budget,
    ) -> GraphSearchResult:
        """Global search over the concept graph. mode='communities' returns community reports ranked for the
        query (optionally within one document): each report's central concepts, documents, broad chunks and
        representative sentences; use it for "explain the whole chapter" or "what are the main themes", then open
        broad_chunks with get_chunks; summary=true fills max_tokens with each community's central sentences, each
        with its citation, for theme questions. mode='passages' returns sentences linked to the query's concepts
        through the graph (multi-hop evidence a plain similarity search misses).
        """
        graph, _ = techniques.graph_of(view)
        if mode == "passages":
            hits = hits_result(view, tokens, techniques.ppr_passages(view, query, k, doc_id), max_tokens)
            return GraphSearchResult(
                generation=hits.generation,
                tokens_used=hits.tokens_used,
                omitted=hits.omitted,
                mode=mode,
                communities=[],
                hits=hits.hits,
                sentences=[],
            )
        found = techniques.communities(view, query, k, doc_id)
        if summary and found:
            share = max(max_tokens // len(found), 1)
            made = [summaries.community_summary(view, graph, c.cluster, share, tokens.count, doc_id) for c in found]
            key = {c.cluster: [s.id for s in m.sentences] for c, m in zip(found, made)}
        else:
            key = {c.cluster: [int(i) for i in graph.key_sentences(c.cluster)] for c in found}
        reports = [
            CommunityReport(
                community=c.cluster,
                level=int(graph.cluster_level[c.cluster]),
                parent=int(graph.cluster_parent[c.cluster]) if graph.cluster_parent[c.cluster] >= 0 else None,
                score=round(c.score, 4),
                concepts=[str(graph.names[m]) for m in c.members[:10]],
                documents=graph.cluster_doc_ids(c.cluster),
                broad_chunks=[format_chunk_id(TOP, int(i)) for i in graph.broad_chunks(c.cluster)],
                key_sentences=[format_chunk_id(FINEST, i) for i in key[c.cluster]],
            )
            for c in found
        ]
        sentences, used, omitted = _cited(view, tokens, (i for c in found for i in key[c.cluster]), max_tokens)
        return GraphSearchResult(
            generation=view.snapshot.generation,
            tokens_used=used,
            omitted=omitted,
            mode=mode,
            communities=reports,
            hits=[],
            sentences=sentences,
        )
