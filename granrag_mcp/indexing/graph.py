"""The concept graph's build at index time, with no language model (the agent that reads the tools is the model):

* nodes: concepts (`granrag_mcp.text.concepts`) found in at least `MIN_FREQUENCY` sentences, each with the
  sentence (narrow chunk) ids that mention it;
* edges: two concepts mentioned in one sentence, weighted by how often (count) and how much more often than
  chance (normalised PMI); weight = npmi * log2(1 + count), and the weakest `PRUNE_PERCENTILE` % are dropped;
* communities: hierarchical Leiden (graspologic-native) with clusters of at most `MAX_CLUSTER_SIZE` concepts;
* a report per community (`granrag_mcp.indexing.graph_reports`).

Each document's concepts are kept too (`doc_concepts.json`), so an incremental run extracts only the documents it
adds; the graph itself is rebuilt from the catalog, which is fast next to the embedding of the same run.
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from granrag_mcp.indexing.graph_reports import MAX_CLUSTER_SIZE, fill_reports
from granrag_mcp.pagerank import pagerank, transition_matrix
from granrag_mcp.store.catalog import Catalog
from granrag_mcp.store.graph import ConceptGraph, ragged, read_phrases, write_phrases
from granrag_mcp.text.analysis import analysis_language
from granrag_mcp.text.concepts import ConceptMatcher, apart, display_names, extract

log = logging.getLogger(__name__)

MIN_FREQUENCY = 2
PRUNE_PERCENTILE = 40.0
LEIDEN_SEED = 7
MAX_CONCEPTS_PER_SENTENCE = 16  # a list sentence would otherwise add a clique of hundreds of weak edges


def build_graph(
    catalog: Catalog,
    phrases: Mapping[str, list[tuple[str, str]]],
    sentence_vectors: Callable[[np.ndarray], np.ndarray],
    embed_names: Callable[[list[str]], np.ndarray] | None,
    dimension: int,
    previous: ConceptGraph | None = None,
) -> ConceptGraph:
    """The graph of every document in `catalog`, from each document's concepts.

    `sentence_vectors` reads stored narrow vectors by id; `embed_names` embeds concept names (None in a run that
    only removes documents: then every concept is one the previous graph already had, with its vector).
    """
    vocabulary = sorted({key for pairs in phrases.values() for key, _ in pairs})
    # Documents in id order, not arrival order: a tie between two surface forms must not go one way in a local run
    # and the other in a parallel one.
    names_of = display_names(pair for doc in sorted(phrases) for pair in phrases[doc])
    matcher = ConceptMatcher(vocabulary)

    sentences = catalog.chunks_of_level("narrow")
    mid_parent = {c.id: c.parent_id for c in catalog.chunks_of_level("mid")}
    # sentence id, doc, broad id, (vocabulary position, start, end) of each concept matched
    found: list[tuple[int, str, int | None, list[tuple[int, int, int]]]] = []
    counts: Counter[int] = Counter()
    seen: set[tuple[str, int, int]] = set()
    for sentence in sentences:
        where = (sentence.doc_id, sentence.start, sentence.end)
        if where in seen:  # the same sentence under two overlapping broad chunks: count it once
            continue
        seen.add(where)
        spans = matcher.spans(sentence.text)
        if spans:
            broad = mid_parent.get(sentence.parent_id) if sentence.parent_id is not None else None
            found.append((sentence.id, sentence.doc_id, broad, spans))
            counts.update(set(hit for hit, _, _ in spans))
    del sentences, seen, mid_parent  # the texts are matched: free them before the graph's arrays are built

    kept = sorted(v for v, n in counts.items() if n >= MIN_FREQUENCY)
    row_of = {v: row for row, v in enumerate(kept)}
    keys = [vocabulary[v] for v in kept]
    rows_per_sentence, sentence_ids, sentence_docs, sentence_broad = [], [], [], []
    # each co-occurring pair as one int64 code (a * concepts + b): a tuple per pair took 56 bytes and most of the
    # build's memory (a sentence has tens of pairs)
    pair_codes = array("q")
    n_concepts = len(keys)
    doc_list = sorted({doc for _, doc, _, _ in found})
    doc_row = {doc: n for n, doc in enumerate(doc_list)}
    for sentence_id, doc, broad, spans in sorted(found):
        kept_spans = [(row_of[v], start, end) for v, start, end in spans if v in row_of]
        if kept_spans:
            sentence_ids.append(sentence_id)
            sentence_docs.append(doc_row[doc])
            sentence_broad.append(broad if broad is not None else -1)
            rows_per_sentence.append(list(dict.fromkeys(row for row, _, _ in kept_spans)))
            pair_codes.extend(a * n_concepts + b for a, b in apart(kept_spans[: 2 * MAX_CONCEPTS_PER_SENTENCE]))
    del found
    n_sentences = len(sentence_ids)

    mentions: list[list[int]] = [[] for _ in range(n_concepts)]
    for sentence_id, rows in zip(sentence_ids, rows_per_sentence):
        for row in rows:
            mentions[row].append(sentence_id)
    frequency = np.array([len(m) for m in mentions], dtype=np.int32)

    codes = np.frombuffer(pair_codes, dtype=np.int64) if pair_codes else np.zeros(0, np.int64)
    edges_a, edges_b, weights, pair_counts = _edges(codes, frequency, n_concepts, n_sentences)
    adjacency = _adjacency(n_concepts, edges_a, edges_b, weights, pair_counts)
    pagerank = _pagerank(n_concepts, edges_a, edges_b, weights)
    vectors = _concept_vectors(keys, [names_of[k] for k in keys], embed_names, dimension, previous)

    sentence_ptr, sentence_concepts = ragged(rows_per_sentence, np.int32)
    mention_ptr, mention_ids = ragged(mentions, np.int64)
    graph = ConceptGraph(
        keys=np.array(keys, dtype=str),
        names=np.array([names_of[k] for k in keys], dtype=str),
        frequency=frequency,
        pagerank=pagerank,
        vectors=vectors,
        mention_ptr=mention_ptr,
        mention_ids=mention_ids,
        **adjacency,
        sentence_ids=np.array(sentence_ids, dtype=np.int64),
        sentence_ptr=sentence_ptr,
        sentence_concepts=sentence_concepts,
        sentence_doc=np.array(sentence_docs, dtype=np.int32),
        docs=np.array(doc_list, dtype=str),
        **_communities(n_concepts, edges_a, edges_b, weights, pagerank),
        cluster_sent_ptr=np.zeros(1, np.int64),
        cluster_sentences=np.zeros(0, np.int64),
        cluster_broad_ptr=np.zeros(1, np.int64),
        cluster_broad=np.zeros(0, np.int64),
        cluster_doc_ptr=np.zeros(1, np.int64),
        cluster_docs=np.zeros(0, np.int32),
        cluster_centroid=np.zeros((0, dimension), np.float32),
    )
    fill_reports(graph, np.array(sentence_broad, dtype=np.int64), sentence_vectors, dimension)
    log.info(
        "concept graph: %d concepts, %d edges, %d communities, from %d sentences",
        len(graph),
        graph.n_edges,
        graph.n_clusters,
        n_sentences,
    )
    return graph


def _edges(
    pair_codes: np.ndarray, frequency: np.ndarray, n_concepts: int, n_sentences: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Co-occurrence pairs (a < b, coded a * n_concepts + b, one per sentence that holds both) with their weight
    and count, pruned (positive PMI, top weights)."""
    if len(pair_codes) == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float32), np.zeros(0, np.int32)
    codes, counts = np.unique(pair_codes, return_counts=True)
    first, second = codes // n_concepts, codes % n_concepts
    p_pair = counts / n_sentences
    pmi = np.log(p_pair / ((frequency[first] / n_sentences) * (frequency[second] / n_sentences)))
    with np.errstate(divide="ignore", invalid="ignore"):
        npmi = np.where(p_pair < 1, pmi / -np.log(p_pair), 1.0)
    weight = np.clip(npmi, 0, 1) * np.log2(1 + counts)
    keep = pmi > 0
    if keep.any():
        keep &= weight >= np.percentile(weight[keep], PRUNE_PERCENTILE)
    return first[keep], second[keep], weight[keep].astype(np.float32), counts[keep].astype(np.int32)


def _adjacency(n: int, a: np.ndarray, b: np.ndarray, weight: np.ndarray, count: np.ndarray) -> dict[str, np.ndarray]:
    source = np.concatenate([a, b])
    target = np.concatenate([b, a])
    order = np.lexsort((-np.concatenate([weight, weight]), source))  # by source, strongest edge first
    pointer = np.zeros(n + 1, np.int64)
    np.add.at(pointer, source + 1, 1)
    return dict(
        adj_ptr=np.cumsum(pointer),
        adj_idx=target[order].astype(np.int32),
        adj_weight=np.concatenate([weight, weight])[order].astype(np.float32),
        adj_count=np.concatenate([count, count])[order].astype(np.int32),
    )


def _pagerank(n: int, a: np.ndarray, b: np.ndarray, weight: np.ndarray) -> np.ndarray:
    if n == 0:
        return np.zeros(0, np.float32)
    transition = transition_matrix(n, np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([weight, weight]))
    return pagerank(transition, np.ones(n)).astype(np.float32)


def _concept_vectors(
    keys: list[str],
    names: list[str],
    embed: Callable[[list[str]], np.ndarray] | None,
    dimension: int,
    previous: ConceptGraph | None,
) -> np.ndarray:
    vectors = np.zeros((len(keys), dimension), np.float32)
    known = {str(k): n for n, k in enumerate(previous.keys)} if previous is not None else {}
    missing = []
    for row, key in enumerate(keys):
        old = known.get(key)
        # A zero row is a concept that got no name vector (a run without an embedder): this run embeds it.
        if (
            old is not None
            and previous is not None
            and previous.vectors.shape[1] == dimension
            and previous.vectors[old].any()
        ):
            vectors[row] = previous.vectors[old]
        else:
            missing.append(row)
    if missing and embed is not None:
        vectors[missing] = embed([names[row] for row in missing])
    elif missing:
        log.warning(
            "%d concepts have no name vector (no embedder in this run); they are found by name only", len(missing)
        )
    return vectors


def _communities(
    n: int, a: np.ndarray, b: np.ndarray, weight: np.ndarray, pagerank: np.ndarray
) -> dict[str, np.ndarray]:
    concept_cluster = np.full(n, -1, np.int32)
    if len(a) == 0:
        return dict(
            concept_cluster=concept_cluster,
            cluster_level=np.zeros(0, np.int32),
            cluster_parent=np.zeros(0, np.int32),
            cluster_ptr=np.zeros(1, np.int64),
            cluster_members=np.zeros(0, np.int32),
        )
    import graspologic_native as gn

    found = gn.hierarchical_leiden(
        [(str(x), str(y), float(w)) for x, y, w in zip(a.tolist(), b.tolist(), weight.tolist())],
        max_cluster_size=MAX_CLUSTER_SIZE,
        seed=LEIDEN_SEED,
    )
    members: dict[int, list[int]] = {}
    level: dict[int, int] = {}
    parent: dict[int, int] = {}
    for entry in found:
        node = int(entry.node)
        members.setdefault(entry.cluster, []).append(node)
        level[entry.cluster] = entry.level
        parent[entry.cluster] = -1 if entry.parent_cluster is None else entry.parent_cluster
        if entry.is_final_cluster:
            concept_cluster[node] = entry.cluster
    ids = sorted(members)
    row = {cluster: r for r, cluster in enumerate(ids)}
    concept_cluster = np.array([row[c] if c >= 0 else -1 for c in concept_cluster.tolist()], np.int32)
    ordered = [sorted(set(members[c]), key=lambda m: -pagerank[m]) for c in ids]
    pointer, flat = ragged(ordered, np.int32)
    return dict(
        concept_cluster=concept_cluster,
        cluster_level=np.array([level[c] for c in ids], np.int32),
        cluster_parent=np.array([row.get(parent[c], -1) for c in ids], np.int32),
        cluster_ptr=pointer,
        cluster_members=flat,
    )


def write_generation_graph(
    folder: Path,
    base_folder: Path | None,
    catalog: Catalog,
    new_texts: Mapping[str, str],
    sentence_vectors: Callable[[np.ndarray], np.ndarray],
    embed_names: Callable[[list[str]], np.ndarray] | None,
    dimension: int,
) -> ConceptGraph:
    """Extract the concepts of the new documents, keep the others' from the base generation, build the graph and
    write both files into the generation being built."""
    phrases = read_phrases(base_folder) if base_folder is not None else None
    previous = ConceptGraph.read(base_folder) if base_folder is not None else None
    current = {info.doc_id for info in catalog.documents()}
    if phrases is None:  # a store from before the graph: extract every document once
        phrases = {}
        new_texts = {**{doc: catalog.document_text(doc) or "" for doc in current}, **new_texts}
    phrases = {doc: pairs for doc, pairs in phrases.items() if doc in current and doc not in new_texts}
    languages = catalog.languages(list(new_texts))
    for doc, text in new_texts.items():
        phrases[doc] = extract(text, analysis_language(languages.get(doc)))
    graph = build_graph(catalog, phrases, sentence_vectors, embed_names, dimension, previous)
    graph.write(folder)
    write_phrases(folder, phrases)
    return graph
