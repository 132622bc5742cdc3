"""What the concept-graph tools return: concepts, edges, paths and community reports, each pointing at the
sentences that state them, and those sentences once, within the caller's token budget."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import Field

from granrag_mcp.server.schemas.results import DATA_NOTICE, Budgeted, Hit, _Model, fence


class Concept(_Model):
    name: str = Field(description="The concept's name: pass it to concept_neighbourhood or concept_paths.")
    frequency: int = Field(description="Sentences that mention it.")
    degree: int = Field(description="Concepts it co-occurs with (edges kept after pruning).")
    community: int | None = Field(None, description="Its finest community (see graph_search reports); absent: none.")
    score: float | None = Field(None, description="How well it matches the query (1 = its exact name).")
    depth: int | None = Field(None, description="In a neighbourhood: hops from the centre concept.")
    mentions: list[str] = Field(description="A few sentence chunk ids that mention it (open with get_chunks).")


class GraphEdge(_Model):
    source: str
    target: str
    weight: float = Field(description="Strength: normalised PMI x log2(1 + count); higher is stronger.")
    count: int = Field(description="Sentences that mention both concepts.")
    evidence: list[str] = Field(description="Ids of sentences that state the link; their text is in `sentences`.")


class Sentence(_Model):
    chunk_id: str = Field(description="A narrow chunk id: expand_window or get_parent give its context.")
    doc_id: str
    start: int
    end: int
    text: str
    truncated: bool = False


class ChainName(_Model):
    written: str = Field(description="The name as asked.")
    found: str = Field(description="What the text holds for it (the name itself, an alias, or a part of it).")
    how: str = Field(description="exact, alias, meaning or partial.")
    sentences: int = Field(description="Sentences that name it.")


class ChainLink(_Model):
    via: str | None = Field(description="The name or term that bridges the two; absent: a sentence names both.")
    evidence: list[str] = Field(description="Sentence ids in chain order (A's side, then B's); text in `sentences`.")


class ChainSentence(Sentence):
    citation: str = Field(description="Document, pages and heading path of the sentence.")


class EvidenceChain(Budgeted):
    a: ChainName
    b: ChainName
    links: list[ChainLink] = Field(description="Direct links first, then bridges A - via - B, strongest first.")
    sentences: list[ChainSentence] = Field(description="The linking sentences in chain order, within max_tokens.")

    def as_text(self) -> str:
        head = (
            f"{len(self.links)} link(s) between {json.dumps(self.a.found, ensure_ascii=False)} ({self.a.how}) and "
            f"{json.dumps(self.b.found, ensure_ascii=False)} ({self.b.how}) | {_budget(self)}"
        )
        lines = [
            f"{'direct' if link.via is None else 'via ' + json.dumps(link.via, ensure_ascii=False)}: "
            + ", ".join(link.evidence)
            for link in self.links
        ]
        blocks = [head, "\n".join(lines) or "nothing found"]
        if self.sentences:
            blocks.append(DATA_NOTICE)
            blocks += [
                f"{s.chunk_id} | {s.citation} | chars {s.start}-{s.end}"
                f"{' | truncated to fit max_tokens' if s.truncated else ''}\n{fence(s.text)}"
                for s in self.sentences
            ]
        return "\n\n".join(blocks)


class ConceptList(_Model):
    generation: int
    concepts: list[Concept] = Field(description="Best match first.")


class Neighbourhood(Budgeted):
    concept: Concept
    neighbours: list[Concept] = Field(description="Strongest first within each depth.")
    edges: list[GraphEdge] = Field(description="The edge through which each neighbour was reached.")
    sentences: list[Sentence] = Field(description="Text of the evidence sentences, as far as max_tokens allows.")

    def as_text(self) -> str:
        return _neighbourhood_text(self)


class GraphPath(_Model):
    concepts: list[str] = Field(description="From source to target.")
    cost: float = Field(description="Sum of 1/weight over the hops; lower is stronger.")
    hops: list[GraphEdge]


class PathsResult(Budgeted):
    source: str
    target: str
    paths: list[GraphPath] = Field(
        description="Fewest hops first, then strongest; empty when no path of at most max_hops exists."
    )
    sentences: list[Sentence] = Field(description="Text of the evidence sentences, as far as max_tokens allows.")

    def as_text(self) -> str:
        return _paths_text(self)


class CommunityReport(_Model):
    community: int = Field(description="Community number.")
    level: int = Field(description="0 for top communities; a higher level is a finer split of its parent.")
    parent: int | None
    score: float = Field(description="Relevance to the query.")
    concepts: list[str] = Field(description="Its concepts, most central (PageRank) first.")
    documents: list[str] = Field(description="Documents whose sentences mention them most.")
    broad_chunks: list[str] = Field(description="Broad chunks where they are mentioned most: get_chunks for the text.")
    key_sentences: list[str] = Field(
        description="Representative, varied sentences (summary=true: its extractive summary within its share of "
        "max_tokens, in reading order); their text and citations are in `sentences`."
    )


class GraphSearchResult(Budgeted):
    mode: str
    communities: list[CommunityReport] = Field(description="mode=communities: reports, best first.")
    hits: list[Hit] = Field(description="mode=passages: sentences ranked by personalized PageRank, best first.")
    sentences: list[ChainSentence] = Field(
        description="Text and citation of the key sentences, as far as max_tokens allows."
    )

    def as_text(self) -> str:
        if self.mode == "passages":
            from granrag_mcp.server.schemas.results import SearchResult, render_hits

            return render_hits(
                SearchResult(
                    generation=self.generation, tokens_used=self.tokens_used, omitted=self.omitted, hits=self.hits
                )
            )
        head = f"{len(self.communities)} communities | {_budget(self)}"
        lines = [
            f"community {c.community} (level {c.level}, score {c.score:.3f}): concepts {', '.join(c.concepts)} | "
            f"documents {', '.join(json.dumps(d, ensure_ascii=False) for d in c.documents)} | broad chunks "
            f"{', '.join(c.broad_chunks)} | key sentences {', '.join(c.key_sentences)}"
            for c in self.communities
        ]
        return _with_sentences(head, lines, self.sentences)


def _budget(result: Budgeted) -> str:
    return f"generation {result.generation} | tokens_used {result.tokens_used} | omitted {result.omitted}"


def _edge_line(edge: GraphEdge) -> str:
    return (
        f"{json.dumps(edge.source, ensure_ascii=False)} -- {json.dumps(edge.target, ensure_ascii=False)} "
        f"(weight {edge.weight:.3f}, {edge.count} sentences; evidence {', '.join(edge.evidence) or 'none'})"
    )


def _with_sentences(head: str, lines: list[str], sentences: Sequence[Sentence]) -> str:
    blocks = [head, "\n".join(lines) or "nothing found"]
    if sentences:
        blocks.append(DATA_NOTICE)
        blocks += [
            f"{s.chunk_id} | "
            + (s.citation if isinstance(s, ChainSentence) else f"doc_id {json.dumps(s.doc_id, ensure_ascii=False)}")
            + f" | chars {s.start}-{s.end}"
            f"{' | truncated to fit max_tokens' if s.truncated else ''}\n{fence(s.text)}"
            for s in sentences
        ]
    return "\n\n".join(blocks)


def _neighbourhood_text(result: Neighbourhood) -> str:
    head = (
        f"neighbourhood of {json.dumps(result.concept.name, ensure_ascii=False)}: {len(result.neighbours)} "
        f"neighbours | {_budget(result)}"
    )
    return _with_sentences(head, [_edge_line(e) for e in result.edges], result.sentences)


def _paths_text(result: PathsResult) -> str:
    head = (
        f"{len(result.paths)} path(s) from {json.dumps(result.source, ensure_ascii=False)} to "
        f"{json.dumps(result.target, ensure_ascii=False)} | {_budget(result)}"
    )
    lines = []
    for number, path in enumerate(result.paths, 1):
        lines.append(f"path {number} (cost {path.cost:.3f}): " + " -> ".join(path.concepts))
        lines += ["  " + _edge_line(hop) for hop in path.hops]
    return _with_sentences(head, lines, result.sentences)
