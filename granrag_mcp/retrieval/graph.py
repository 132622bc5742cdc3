"""Graph techniques over the concept graph of a view's snapshot (see `granrag_mcp.store.graph`).

Find concepts by name or meaning, a concept's neighbourhood, the strongest paths between two concepts, community
reports for overview questions, and passages ranked by personalized PageRank from the query's concepts. Every
answer names the sentence (narrow chunk) ids that state it, so the agent can open them with the context tools.

Longer than most modules because the four graph techniques share the graph's walks (reach, evidence
sentences, community ranking).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.pagerank import personalized_system, solve_personalized
from granrag_mcp.retrieval.concept_names import ConceptNames, UnknownConceptError
from granrag_mcp.retrieval.graph_paths import direct_link, middles
from granrag_mcp.retrieval.graph_vectors import inner_products, nearest, refined_index
from granrag_mcp.retrieval.view import ScoredChunk, View, check_query
from granrag_mcp.store.graph import ConceptGraph
from granrag_mcp.text.concepts import ConceptMatcher

MAX_DEPTH = 2
MAX_HOPS = 4
PATH_FANOUT = 40  # strongest neighbours followed from each concept while searching paths
PPR_ALPHA = 0.5  # HippoRAG's damping: a walk stays near the query's concepts; the system solves in fewer steps
PPR_STEPS = 6  # conjugate gradient steps: the top 10 passages those of the converged ranks on 400 of 400 queries
SEED_SIMILARITY = 0.55  # a concept name this close to the query (cosine) seeds the PageRank
SEEDS_BY_MEANING = 5
PPR_TOP = 50  # passages are the sentences that mention one of the concepts of highest personalized PageRank
NAMED_IN_QUERY = 0.99  # find_concepts: a concept whose whole name appears in a longer query
COMMUNITY_WEIGHT = 1.0  # graph_search communities: weight of a community's share of the mentions
FUZZY_CUTOFF = 60.0  # find_concepts: least edit similarity (0-100) of a name taken as a misspelling
QUERIES = "graph queries"  # the name of a generation's GraphQueries among what its views reuse


__all__ = ["UnknownConceptError"]  # raised by resolve_concept; defined with the name lookups


class NoGraphError(InvalidInputError):
    """The generation has no concept graph."""


@dataclass
class ConceptMatch:
    concept: int
    score: float


@dataclass
class Edge:
    source: int
    target: int
    weight: float
    count: int
    evidence: list[int]  # sentence ids that mention both


@dataclass
class Neighbourhood:
    center: int
    nodes: list[tuple[int, int]]  # (concept, depth), the center first
    edges: list[Edge]


@dataclass
class Path:
    concepts: list[int]
    hops: list[Edge]
    cost: float


@dataclass
class Community:
    cluster: int
    score: float
    members: list[int] = field(default_factory=list)


class GraphQueries:
    """What a query needs besides the stored arrays, built once per graph: name lookups, a FAISS index of the
    concept names (8-bit codes, the best candidates scored again exactly; see `graph_vectors`), the community
    centroids, the personalized PageRank system and the sentence-by-concept matrix."""

    def __init__(self, graph: ConceptGraph) -> None:
        from scipy import sparse

        self.graph = graph
        self.matcher = ConceptMatcher(str(k) for k in graph.keys)
        self.names = ConceptNames(graph, self.matcher)
        self.names_index = refined_index(graph.vectors)
        self.centroids = np.ascontiguousarray(graph.cluster_centroid, dtype=np.float32)
        n = len(graph)
        rows = np.repeat(np.arange(n), np.diff(graph.adj_ptr))
        self.pagerank = personalized_system(n, rows, graph.adj_idx, graph.adj_weight, PPR_ALPHA)
        # sentence row x concept, 1 where the sentence mentions the concept: a passage's score is one product
        n_rows = len(graph.sentence_ids)
        self.sentence_matrix = sparse.csr_matrix(
            (np.ones(len(graph.sentence_concepts)), graph.sentence_concepts, graph.sentence_ptr), shape=(n_rows, n)
        )
        self.concept_rows = self.sentence_matrix.T.tocsr()  # concept x sentence row: the rows that mention it
        self.cluster_of_doc_entry = np.repeat(np.arange(graph.n_clusters), np.diff(graph.cluster_doc_ptr))
        self.membership = sparse.csr_matrix(  # community x concept, 1 where the concept is a member
            (np.ones(len(graph.cluster_members)), graph.cluster_members, graph.cluster_ptr),
            shape=(graph.n_clusters, n),
        )


def doc_row(graph: ConceptGraph, doc_id: str) -> int:
    """The graph's row of a document (-1 when no sentence of it mentions a concept)."""
    found = np.flatnonzero(graph.docs == doc_id)
    return int(found[0]) if len(found) else -1


def graph_of(view: View) -> tuple[ConceptGraph, GraphQueries]:
    graph = view.snapshot.graph
    if graph is None or len(graph) == 0:
        if graph is None:
            raise NoGraphError(
                f"the index (generation {view.snapshot.generation}) has no concept graph: it was indexed with the "
                "graph off (GRANRAG_GRAPH=false or `index --no-graph`) or before graphs existed. Build it with "
                "`granrag-mcp index PATH` and the graph on (it reads the stored documents; none is re-embedded); "
                "search_narrow and search_fused work without it"
            )
        raise NoGraphError(
            f"the concept graph of generation {view.snapshot.generation} is empty: no concept is named in two "
            "sentences of the documents; use search_narrow or search_fused"
        )
    return graph, view.per_generation.get(view.snapshot, QUERIES, lambda: GraphQueries(graph))


# --- concepts ----------------------------------------------------------------------------------------------------


def resolve_concept(view: View, queries: GraphQueries, name: str) -> int:
    """The concept `name` stands for, as the agent writes it (see `concept_names`)."""
    return queries.names.resolve(
        name, view.query_vector, lambda vector, k: nearest(queries.names_index, vector, k)
    ).concept


def find_concepts(view: View, query: str, k: int) -> list[ConceptMatch]:
    """Concepts whose name matches `query` (fuzzy) or whose name's embedding is close to it, best first."""
    query = check_query(query)
    graph, queries = graph_of(view)
    from rapidfuzz import fuzz, process

    scores: dict[int, float] = {}
    exact = queries.names.exact(query)
    if exact is None:
        exact = queries.names.alias(query)  # an acronym, a surname, a known name inside a longer one
    if exact is not None:
        scores[exact] = 1.0
    for named in queries.matcher.find(query):  # names inside a longer query
        scores.setdefault(named, NAMED_IN_QUERY)
    # A misspelt name: whole-name edit similarity (QRatio), 50x cheaper than WRatio's partial and token variants,
    # whose work the two lookups above and the meaning search below do on a longer query.
    for _, score, index in process.extract(
        query.lower(), queries.names.lower_names, scorer=fuzz.QRatio, limit=k, score_cutoff=FUZZY_CUTOFF
    ):
        scores[index] = max(scores.get(index, 0.0), 0.99 * score / 100)
    rows, similarity = nearest(queries.names_index, view.query_vector(query), k)
    for index, value in zip(rows.tolist(), similarity.tolist()):
        scores[index] = max(scores.get(index, 0.0), value)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], -int(graph.frequency[item[0]])))[:k]
    return [ConceptMatch(concept, score) for concept, score in ranked]


def edge_evidence(graph: ConceptGraph, a: int, b: int, limit: int) -> list[int]:
    """Sentences that mention both concepts, those naming fewest other concepts first (they state the link)."""
    both = np.intersect1d(graph.mentions(a), graph.mentions(b), assume_unique=True)
    if len(both) <= limit:
        return both.tolist()
    rows = np.searchsorted(graph.sentence_ids, both)
    crowd = np.diff(graph.sentence_ptr)[rows]
    return both[np.argsort(crowd, kind="stable")[:limit]].tolist()


# --- neighbourhood and paths ---------------------------------------------------------------------------------------


def neighbourhood(view: View, name: str, depth: int, max_nodes: int, evidence: int) -> Neighbourhood:
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidInputError(f"depth {depth} is out of bounds: pass 1 or {MAX_DEPTH}")
    graph, queries = graph_of(view)
    center = resolve_concept(view, queries, name)
    seen = {center: 0}
    edges: list[Edge] = []
    frontier = [center]
    for level in range(1, depth + 1):
        candidates: list[tuple[float, int, int, float, int]] = []
        for node in frontier:
            targets, weights, counts = graph.neighbours(node)
            for target, weight, count in zip(targets.tolist(), weights.tolist(), counts.tolist()):
                if target not in seen:
                    candidates.append((-weight, node, target, weight, count))
        candidates.sort()
        frontier = []
        for _, source, target, weight, count in candidates:
            if len(seen) >= max_nodes:
                break
            if target in seen:
                continue
            seen[target] = level
            frontier.append(target)
            edges.append(Edge(source, target, weight, count, edge_evidence(graph, source, target, evidence)))
    return Neighbourhood(center, list(seen.items()), edges)


def _reach(graph: ConceptGraph, start: int, depth: int) -> dict[int, tuple[float, list[int]]]:
    """Cheapest path (cost = sum of 1/weight) from `start` to each concept within `depth` hops."""
    best: dict[int, tuple[float, list[int]]] = {start: (0.0, [start])}
    heap = [(0.0, start, [start])]
    while heap:
        cost, node, path = heapq.heappop(heap)
        if best.get(node, (math.inf,))[0] < cost or len(path) > depth:
            continue
        targets, weights, _ = graph.neighbours(node)
        for target, weight in zip(targets[:PATH_FANOUT].tolist(), weights[:PATH_FANOUT].tolist()):
            if target in path:
                continue
            new_cost = cost + 1.0 / max(weight, 1e-6)
            if new_cost < best.get(target, (math.inf,))[0]:
                best[target] = (new_cost, path + [target])
                heapq.heappush(heap, (new_cost, target, path + [target]))
    return best


def strongest_paths(view: View, source: str, target: str, max_hops: int, k: int, evidence: int) -> list[Path]:
    """Up to `k` simple paths of at most `max_hops` hops, fewest hops first, then cheapest (cost = sum of
    1/weight), each through a different middle concept. One and two hops are found at query time through the
    sentences that mention the two concepts (`graph_paths`), so a link the index pruned is still found; longer
    paths follow the index's edges."""
    if not 1 <= max_hops <= MAX_HOPS:
        raise InvalidInputError(f"max_hops {max_hops} is out of bounds: pass 1 to {MAX_HOPS}")
    graph, queries = graph_of(view)
    a, b = resolve_concept(view, queries, source), resolve_concept(view, queries, target)
    if a == b:
        raise InvalidInputError(f"{source!r} and {target!r} are the same concept: pass two different ones")
    found: dict[tuple[int, ...], float] = {}
    direct = direct_link(graph, a, b)
    if direct is not None:
        found[(a, b)] = 1.0 / direct[0]
    if max_hops >= 2:
        for middle, to_a, to_b in middles(graph, queries.sentence_matrix, a, b, k):
            found[(a, middle, b)] = 1.0 / to_a + 1.0 / to_b
    if max_hops >= 3 and len(found) < k:
        from_a = _reach(graph, a, (max_hops + 1) // 2)
        from_b = _reach(graph, b, max_hops // 2)
        for middle, (cost_b, path_b) in from_b.items():
            if middle not in from_a:
                continue
            cost_a, path_a = from_a[middle]
            path = path_a + path_b[::-1][1:]
            if len(set(path)) == len(path) and 3 <= len(path) - 1 <= max_hops:
                found[tuple(path)] = min(found.get(tuple(path), math.inf), cost_a + cost_b)
    best = sorted(found.items(), key=lambda item: (len(item[0]), item[1]))[:k]  # the most direct link first
    return [
        Path(list(path), [_hop(graph, x, y, evidence) for x, y in zip(path, path[1:])], cost) for path, cost in best
    ]


def _hop(graph: ConceptGraph, x: int, y: int, evidence: int) -> Edge:
    """One hop of a path: the index's edge, or the link found at query time where the index has none."""
    targets, weights, counts = graph.neighbours(x)
    at = np.flatnonzero(targets == y)
    if len(at):
        weight, count = float(weights[at[0]]), int(counts[at[0]])
    else:
        weight, count = direct_link(graph, x, y) or (0.0, 0)
    return Edge(x, y, weight, count, edge_evidence(graph, x, y, evidence))


# --- global search -------------------------------------------------------------------------------------------------


def query_concepts(
    view: View, graph: ConceptGraph, queries: GraphQueries, query: str, vector: np.ndarray
) -> dict[int, float]:
    """Concepts named in the query (weight 1) and those whose name means nearly the same (their cosine)."""
    seeds = {concept: 1.0 for concept in queries.matcher.find(query)}
    rows, similarity = nearest(queries.names_index, vector, SEEDS_BY_MEANING)
    for index, value in zip(rows.tolist(), similarity.tolist()):
        if value >= SEED_SIMILARITY:
            seeds.setdefault(index, value)
    return seeds


def communities(view: View, query: str, k: int, doc_id: str | None) -> list[Community]:
    """Community reports ranked for a query: the report centroid's cosine with the query, plus the share of the
    query's concepts among its members, plus the community's weight (GraphRAG ranks its reports by size too): the
    share of the mentions, in the document or in the whole index, that name one of its concepts. Within one
    document (`doc_id`), a report lists its concepts by how often the document names them."""
    graph, queries = graph_of(view)
    vector = view.query_vector(query)
    if graph.n_clusters == 0:
        return []
    scores = inner_products(queries.centroids, vector).astype(np.float64)
    if doc_id is not None:  # mentions of each concept within the document
        in_doc = (graph.sentence_doc == doc_row(graph, doc_id)).astype(np.float64)
        mentions = np.asarray(queries.sentence_matrix.T @ in_doc).ravel()
    else:
        mentions = graph.frequency.astype(np.float64)
    scores += COMMUNITY_WEIGHT * (queries.membership @ mentions) / max(float(mentions.sum()), 1.0)
    seeds = query_concepts(view, graph, queries, query, vector)
    if seeds:
        for concept, weight in seeds.items():
            cluster = int(graph.concept_cluster[concept])
            while cluster >= 0:
                scores[cluster] += 0.5 * weight / len(seeds)
                cluster = int(graph.cluster_parent[cluster])
    if doc_id is not None:
        allowed = np.zeros(graph.n_clusters, bool)
        allowed[queries.cluster_of_doc_entry[graph.cluster_docs == doc_row(graph, doc_id)]] = True
        if not allowed.any():
            known = {str(d) for d in graph.docs}
            raise InvalidInputError(
                f"no community of the graph lies in document {doc_id!r}"
                + ("" if doc_id in known else ": it is not in the index; take doc_id from list_documents")
            )
        scores = np.where(allowed, scores, -np.inf)
    order = [int(c) for c in np.argsort(-scores)[:k] if np.isfinite(scores[c])]
    out = []
    for c in order:
        members = graph.members(c)
        if doc_id is not None:  # stable: PageRank order among concepts named equally often
            members = members[np.argsort(-mentions[members], kind="stable")]
        out.append(Community(c, float(scores[c]), members.tolist()))
    return out


def personalized_pagerank(queries: GraphQueries, seeds: dict[int, float]) -> np.ndarray:
    restart = np.zeros(len(queries.graph))
    for concept, weight in seeds.items():
        restart[concept] = weight
    return solve_personalized(queries.pagerank, restart, PPR_STEPS)


def ppr_passages(view: View, query: str, k: int, doc_id: str | None = None) -> list[ScoredChunk]:
    """Sentences ranked by the personalized PageRank of the concepts they mention, the PageRank starting from the
    query's concepts (HippoRAG's passage ranking over a statistical graph). The candidates are the sentences that
    mention one of the PPR_TOP concepts; each scores the sum of its concepts' ranks."""
    graph, queries = graph_of(view)
    seeds = query_concepts(view, graph, queries, check_query(query), view.query_vector(query))
    if not seeds:
        return []
    rank = personalized_pagerank(queries, seeds)
    top = np.argpartition(-rank, PPR_TOP)[:PPR_TOP] if len(rank) > PPR_TOP else np.arange(len(rank))
    rows = np.unique(queries.concept_rows[top].indices)
    if doc_id is not None:
        rows = rows[graph.sentence_doc[rows] == doc_row(graph, doc_id)]
    scores = queries.sentence_matrix[rows] @ rank
    order = best_first(scores, k)
    return view.scored_chunks([(int(graph.sentence_ids[rows[i]]), float(scores[i])) for i in order])


def best_first(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k highest scores, highest first, ties in position order: a full stable sort's first k,
    sorting only the scores at or above the k-th."""
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = np.flatnonzero(scores >= kth)
        return keep[np.argsort(-scores[keep], kind="stable")][:k]
    return np.argsort(-scores, kind="stable")[:k]
