"""Retrieval over one snapshot: level search, dual-granularity union, weighted RRF, windows, parents, rerank, HRR.

This is the plain core that the MCP tools, the CLI and the evaluation all call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from granrag_mcp.chunk import CHILD_LEVEL, LEVELS, MAX_QUERY_CHARS, Chunk, Level, parse_chunk_id
from granrag_mcp.embedding import Embedder
from granrag_mcp.errors import InvalidInputError, UnknownChunkError
from granrag_mcp.fusion import DEFAULT_RRF_K, Contribution, reciprocal_rank_fusion
from granrag_mcp.rerank import Reranker
from granrag_mcp.store.store import Snapshot

RRF_LISTS = ("broad_dense", "broad_lexical", "narrow_dense", "narrow_lexical")
HRR_LISTS = ("rerank", "sentence_dense", "sentence_lexical", "mid_lexical")
HRR_RRF_K = 10  # HRR fuses short, precise lists: a small k lets their first ranks count (measured in docs/evaluation.md)
HEAVY_OVERLAP = 0.5  # in a window, a neighbour sharing this share of the centre's span is a copy of it


@dataclass
class Hit:
    chunk: Chunk
    score: float
    sources: Mapping[str, Contribution] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)  # public ids of the chunks that led to this hit


@dataclass
class Window:
    center: Chunk
    members: list[Chunk]
    doc_id: str
    start: int
    end: int
    text: str


@dataclass
class ParentGroup:
    parent: Chunk
    children_hit: list[str]
    children_total: int
    merged: bool = True


@dataclass
class ParentResult:
    parents: list[ParentGroup]
    kept: list[Chunk]  # children left as they were (auto-merging below the threshold)


@dataclass
class RerankResult:
    reranker: str
    hits: list[Hit]


def overlap_share(a: Chunk, b: Chunk) -> float:
    if a.doc_id != b.doc_id:
        return 0.0
    shared = min(a.end, b.end) - max(a.start, b.start)
    return max(shared, 0) / max(min(a.end - a.start, b.end - b.start), 1)


def dedupe_by_span(hits: Sequence[Hit]) -> list[Hit]:
    """Drop a hit whose span contains, or lies inside, the span of a better-ranked hit.

    The broad overlap indexes the text of each overlap region twice, so the same sentence (or a piece of it)
    can come back from two broad chunks. Chunks that merely overlap, such as a short last broad chunk, stay.
    """
    kept: list[Hit] = []
    kept_in_doc: dict[str, list[Chunk]] = {}
    for hit in hits:
        others = kept_in_doc.setdefault(hit.chunk.doc_id, [])
        if not any(_inside(hit.chunk, other) or _inside(other, hit.chunk) for other in others):
            kept.append(hit)
            others.append(hit.chunk)
    return kept


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query is empty: pass a question or keywords to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"the query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}: shorten it")
    return query.strip()


class View:
    """All retrieval operations, bound to one snapshot so a request never mixes generations."""

    def __init__(self, snapshot: Snapshot, embedder: Embedder, reranker: Reranker | None = None) -> None:
        self.snapshot = snapshot
        self.embedder = embedder
        self.reranker = reranker
        self._catalog = snapshot.catalog

    # --- ids and chunks ----------------------------------------------------------------------------------------

    def resolve(self, public_ids: Sequence[str], level: Level | None = None) -> list[Chunk]:
        """Chunks for public ids, in the given order (duplicates removed); clear errors for bad ids."""
        parsed: list[tuple[str, Level, int]] = []
        for value in public_ids:
            chunk_level, chunk_id = parse_chunk_id(value)
            if level is not None and chunk_level != level:
                raise InvalidInputError(f"{value!r} is a {chunk_level} chunk; this needs {level} chunk ids")
            parsed.append((value, chunk_level, chunk_id))
        found = self._catalog.chunks([chunk_id for _, _, chunk_id in parsed])
        missing = [value for value, chunk_level, chunk_id in parsed
                   if chunk_id not in found or found[chunk_id].level != chunk_level]
        if missing:
            raise UnknownChunkError(
                f"unknown chunk id(s) {', '.join(missing)}: not in the current index (generation "
                f"{self.snapshot.generation}); ids come from search results of this index, and ids of re-indexed "
                "documents change, so search again"
            )
        out, seen = [], set()
        for _, _, chunk_id in parsed:
            if chunk_id not in seen:
                seen.add(chunk_id)
                out.append(found[chunk_id])
        return out

    def _hits(self, scored: Sequence[tuple[int, float]]) -> list[Hit]:
        chunks = self._catalog.chunks([chunk_id for chunk_id, _ in scored])
        return [Hit(chunks[chunk_id], score) for chunk_id, score in scored if chunk_id in chunks]

    # --- single level ------------------------------------------------------------------------------------------

    def query_vector(self, query: str) -> np.ndarray:
        return self.embedder.embed([check_query(query)])[0]

    def dense(self, level: Level, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        return self.snapshot.vectors[level].search(vector, k)

    def lexical(self, level: Level, query: str, k: int) -> list[tuple[int, float]]:
        return self.snapshot.lexical[level].search(query, k)

    def search(self, query: str, level: Level, k: int, lexical: bool = False, rrf_k: int = DEFAULT_RRF_K) -> list[Hit]:
        """Dense search at one level (fused with BM25 by RRF when `lexical`), copies of one span removed."""
        vector = self.query_vector(query)
        depth = max(2 * k, k + 10)
        dense = self.dense(level, vector, depth)
        if not lexical:
            return dedupe_by_span(self._hits(dense))[:k]
        lists = {f"{level}_dense": dense, f"{level}_lexical": self.lexical(level, query, depth)}
        fused = reciprocal_rank_fusion(lists, k=rrf_k)
        chunks = self._catalog.chunks([item.key for item in fused])
        hits = [Hit(chunks[item.key], item.score, item.contributions) for item in fused]
        return dedupe_by_span(hits)[:k]

    # --- dual granularity --------------------------------------------------------------------------------------

    def search_union(self, query: str, k: int, fine_level: Level = "narrow") -> list[Hit]:
        """Broad and fine hits united in order of score; a fine hit inside a returned broad hit is not repeated.

        A broad hit that covers better-scoring fine hits is placed where the best of them was.
        """
        vector = self.query_vector(query)
        depth = max(2 * k, k + 10)
        broad = dedupe_by_span(self._hits(self.dense("broad", vector, depth)))
        fine = dedupe_by_span(self._hits(self.dense(fine_level, vector, depth)))
        result: list[Hit] = []
        for hit in sorted(broad + fine, key=lambda h: -h.score):
            if hit.chunk.level == "broad":
                # The broad hit takes the place of the best fine hit it covers, which it then replaces.
                covered = [i for i, h in enumerate(result) if h.chunk.level != "broad" and _inside(h.chunk, hit.chunk)]
                position = covered[0] if covered else len(result)
                result = [h for i, h in enumerate(result) if i not in covered]
                result.insert(position, hit)
            elif not any(h.chunk.level == "broad" and _inside(hit.chunk, h.chunk) for h in result):
                result.append(hit)
            if len(result) >= k:
                break
        return result[:k]

    def search_rrf(
        self,
        query: str,
        k: int,
        level: Level = "mid",
        weights: Mapping[str, float] | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        lexical: bool = True,
        depth: int | None = None,
    ) -> list[Hit]:
        """Weighted RRF over the dense (and lexical) lists of the broad and narrow levels, mapped to `level`."""
        query = check_query(query)
        weights = dict(weights or {})
        unknown = sorted(set(weights) - set(RRF_LISTS))
        if unknown:
            raise InvalidInputError(f"unknown weight name(s) {unknown}; use {', '.join(RRF_LISTS)}")
        vector = self.embedder.embed([query])[0]
        depth = depth or max(3 * k, 30)
        raw = {"broad_dense": self.dense("broad", vector, depth), "narrow_dense": self.dense("narrow", vector, depth)}
        if lexical:
            raw["broad_lexical"] = self.lexical("broad", query, depth)
            raw["narrow_lexical"] = self.lexical("narrow", query, depth)
        lists = self._map_lists({n: raw[n] for n in raw if n.startswith("narrow")}, "narrow", level, vector)
        # A broad hit stands for the descendant the sentences point to most strongly (else the closest vector).
        evidence: dict[int, int] = {}
        for mapped in lists.values():
            for position, (chunk_id, _) in enumerate(mapped):
                evidence[chunk_id] = min(evidence.get(chunk_id, position), position)
        lists.update(self._map_lists({n: raw[n] for n in raw if n.startswith("broad")}, "broad", level, vector,
                                     evidence))
        fused = reciprocal_rank_fusion(lists, weights={n: w for n, w in weights.items() if n in lists}, k=rrf_k)
        chunks = self._catalog.chunks([item.key for item in fused])
        hits = [Hit(chunks[item.key], item.score, item.contributions) for item in fused]
        return dedupe_by_span(hits)[:k]

    def _map_lists(
        self,
        lists: Mapping[str, list[tuple[int, float]]],
        source_level: Level,
        level: Level,
        vector: np.ndarray,
        evidence: Mapping[int, int] | None = None,
    ) -> dict[str, list[tuple[int, float]]]:
        """Ranked lists of `source_level` chunks, each hit replaced by the chunk it stands for at `level`: a finer hit
        by its ancestor, a coarser one by one descendant (the one ranked best in `evidence`, chunk id -> rank, else
        the one whose vector is closest). All the lists are mapped together: one catalog query per level crossed."""
        ids = [chunk_id for scored in lists.values() for chunk_id, _ in scored]
        if source_level == level:
            mapped = {chunk_id: chunk_id for chunk_id in ids}
        elif LEVELS.index(source_level) > LEVELS.index(level):
            mapped = self.ancestors(ids, level)
        else:
            mapped = self.best_descendants(ids, level, vector, evidence, source_level)
        return {name: [(mapped[i], score) for i, score in scored if i in mapped] for name, scored in lists.items()}

    def ancestors(self, chunk_ids: Iterable[int], level: Level) -> dict[int, int]:
        """For chunks at or below `level`, the id of each one's ancestor at `level` (unknown ids left out); one
        catalog query per level climbed, reading no chunk text."""
        current = {chunk_id: chunk_id for chunk_id in chunk_ids}
        known = self._catalog.outline(list(current))
        while True:
            climbing = {orig: at for orig, at in current.items() if at in known and known[at][0] != level}
            if not climbing:
                return {orig: at for orig, at in current.items() if at in known}
            parents = {known[at][1] for at in climbing.values()} - {None}
            known.update(self._catalog.outline([i for i in parents if i not in known]))
            for orig, at in climbing.items():
                parent = known[at][1]
                if parent is None:  # already the top level: there is nothing at `level` above it
                    del current[orig]
                else:
                    current[orig] = parent

    def descendants(self, chunk_ids: Sequence[int], levels: Sequence[Level], level: Level) -> list[list[int]]:
        """For each chunk (of the given level, at or above `level`), its descendants at `level` in document order;
        one catalog query per level crossed, for all the chunks together."""
        members = [[chunk_id] for chunk_id in chunk_ids]
        current = list(levels)
        for above in LEVELS[: LEVELS.index(level)]:
            at_level = [n for n, lvl in enumerate(current) if lvl == above]
            if at_level:
                children = self._catalog.children([i for n in at_level for i in members[n]])
                for n in at_level:
                    members[n] = [child for i in members[n] for child in children[i]]
                    current[n] = CHILD_LEVEL[above]  # type: ignore[assignment]
        return members

    def best_descendants(
        self,
        chunk_ids: Sequence[int],
        level: Level,
        vector: np.ndarray,
        evidence: Mapping[int, int] | None = None,
        source_level: Level | None = None,
    ) -> dict[int, int]:
        """For chunks of one level coarser than `level`, the descendant at `level` each one stands for: the one
        ranked best in `evidence` (chunk id -> rank), else the one whose vector is closest. One catalog query per
        level crossed, for all the chunks together."""
        unique = list(dict.fromkeys(chunk_ids))
        if not unique:
            return {}
        source = source_level or self._catalog.outline(unique[:1])[unique[0]][0]
        members = self.descendants(unique, [source] * len(unique), level)
        chosen, unranked = {}, []
        for chunk_id, ids in zip(unique, members):
            ranked = [i for i in ids if evidence and i in evidence]
            if ranked:
                chosen[chunk_id] = min(ranked, key=evidence.__getitem__)  # type: ignore[union-attr]
            elif ids:
                unranked.append((chunk_id, ids))
        if unranked:  # the closest descendant by vector, all candidates read from the index at once
            candidates = np.asarray([i for _, ids in unranked for i in ids], dtype=np.int64)
            scores = self.snapshot.vectors[level].reconstruct(candidates) @ vector
            begin = 0
            for chunk_id, ids in unranked:
                best = begin + int(np.argmax(scores[begin : begin + len(ids)]))
                chosen[chunk_id] = int(candidates[best])
                begin += len(ids)
        return chosen

    # --- context -----------------------------------------------------------------------------------------------

    def expand_window(self, public_id: str, before: int = 2, after: int = 2) -> Window:
        center = self.resolve([public_id])[0]
        margin = 64  # the broad overlap repeats a few chunks per boundary; look far enough to skip them
        nearby = self._catalog.chunks_by_seq(center.doc_id, center.level, center.seq - before - margin,
                                             center.seq + after + margin)
        ordered = document_order(nearby, center)
        position = next(i for i, c in enumerate(ordered) if c.id == center.id)
        members = ordered[max(position - before, 0) : position + after + 1]
        start, end = min(c.start for c in members), max(c.end for c in members)
        text = self._catalog.document_slice(center.doc_id, start, end) or ""
        return Window(center, members, center.doc_id, start, end, text)

    def parents(self, public_ids: Sequence[str], merge_threshold: float | None = None) -> ParentResult:
        chunks = self.resolve(public_ids)
        orphans = [c.public_id for c in chunks if c.parent_id is None]
        if orphans:
            raise InvalidInputError(
                f"{', '.join(orphans)} are broad chunks, the top of the hierarchy, and have no parent; "
                "pass mid or narrow chunk ids"
            )
        by_parent: dict[int, list[Chunk]] = {}
        for chunk in chunks:
            by_parent.setdefault(chunk.parent_id, []).append(chunk)  # type: ignore[arg-type]
        parents = self._catalog.chunks(list(by_parent))
        totals = self._catalog.children(list(by_parent))
        groups, kept = [], []
        for parent_id, children in by_parent.items():
            total = len(totals[parent_id])
            group = ParentGroup(parents[parent_id], [c.public_id for c in children], total)
            if merge_threshold is not None and not len(children) / max(total, 1) > merge_threshold:
                kept.extend(children)
                continue
            groups.append(group)
        return ParentResult(groups, kept)

    # --- reranking ---------------------------------------------------------------------------------------------

    def rerank(self, query: str, public_ids: Sequence[str], top_n: int) -> RerankResult:
        query = check_query(query)
        if self.reranker is None:
            raise InvalidInputError("no reranker is configured on this server")
        chunks = self.resolve(public_ids)
        return RerankResult(self.reranker.name, self._rerank_chunks(query, chunks)[:top_n])

    def _rerank_chunks(self, query: str, chunks: Sequence[Chunk]) -> list[Hit]:
        if not chunks:
            return []
        by_sentences = getattr(self.reranker, "score_sentences", None)
        if by_sentences is not None:
            scores = by_sentences(self.embedder.embed([query])[0], self.sentence_vectors(chunks))
        else:
            scores = self.reranker.score(query, [c.text for c in chunks])  # type: ignore[union-attr]
        return sorted((Hit(c, float(s)) for c, s in zip(chunks, scores)), key=lambda h: -h.score)

    def sentence_vectors(self, chunks: Sequence[Chunk]) -> list[tuple[np.ndarray, np.ndarray]]:
        """The stored vectors and token counts of each chunk's sentences (narrow chunks), in document order."""
        members = self.descendants([c.id for c in chunks], [c.level for c in chunks], "narrow")
        every = list(dict.fromkeys(i for ids in members for i in ids))
        sentences = self._catalog.chunks(every)
        vectors = dict(zip(every, self.snapshot.vectors["narrow"].reconstruct(np.array(every, dtype=np.int64))))
        return [
            (np.array([vectors[i] for i in ids], dtype=np.float32).reshape(len(ids), -1),
             np.array([sentences[i].token_count for i in ids], dtype=np.float32))
            for ids in members
        ]

    def hrr_mids(
        self,
        query: str,
        sentence_k: int = 50,
        mid_k: int = 20,
        rerank_n: int = 20,
        weights: Mapping[str, float] | None = None,
        rrf_k: int = HRR_RRF_K,
    ) -> tuple[str, list[Hit]]:
        """The mid stage of HRR: sentence and mid retrieval, then the reranker's order fused with the evidence.

        Candidates come from sentences (dense and BM25, each mapped to its mid chunk) and from the mid level
        (dense and BM25). The best `rerank_n` of them, by a first fusion, are reranked; the final order fuses
        the reranker's list with the sentence lists and mid BM25 (weighted RRF), because a bi-encoder
        fallback alone orders 512-token chunks worse than the sentences that point into them.
        """
        query = check_query(query)
        if self.reranker is None:
            raise InvalidInputError("no reranker is configured on this server")
        weights = dict(weights or {})
        unknown = sorted(set(weights) - set(HRR_LISTS))
        if unknown:
            raise InvalidInputError(f"unknown weight name(s) {unknown}; use {', '.join(HRR_LISTS)}")
        vector = self.embedder.embed([query])[0]
        sentences = {"sentence_dense": self.dense("narrow", vector, sentence_k),
                     "sentence_lexical": self.lexical("narrow", query, sentence_k)}
        evidence = {**self._map_lists(sentences, "narrow", "mid", vector),
                    "mid_lexical": self.lexical("mid", query, mid_k)}
        first = reciprocal_rank_fusion({**evidence, "mid_dense": self.dense("mid", vector, mid_k)}, k=rrf_k)
        candidates = [item.key for item in first[:rerank_n]]
        chunks = self._catalog.chunks(candidates)
        reranked = self._rerank_chunks(query, [chunks[i] for i in candidates if i in chunks])
        lists = {"rerank": [(h.chunk.id, h.score) for h in reranked], **evidence}
        fused = reciprocal_rank_fusion(lists, weights=weights, k=rrf_k)
        chunks.update(self._catalog.chunks([item.key for item in fused if item.key not in chunks]))
        return self.reranker.name, [Hit(chunks[item.key], item.score, item.contributions) for item in fused]

    def hrr_search(
        self,
        query: str,
        k: int = 5,
        sentence_k: int = 50,
        mid_k: int = 20,
        rerank_n: int = 20,
        weights: Mapping[str, float] | None = None,
    ) -> RerankResult:
        """Hierarchical Re-ranker Retriever: sentences and mid chunks, reranked at mid, returned as broad parents."""
        reranker, mids = self.hrr_mids(query, sentence_k, mid_k, rerank_n, weights)
        parents = self._catalog.chunks(list({h.chunk.parent_id for h in mids}))
        out: dict[int, Hit] = {}
        for hit in mids:
            parent_id = hit.chunk.parent_id
            if parent_id not in out:
                out[parent_id] = Hit(parents[parent_id], hit.score, hit.sources)
            out[parent_id].evidence.append(hit.chunk.public_id)
        return RerankResult(reranker, dedupe_by_span(list(out.values()))[:k])

    # --- discovery ---------------------------------------------------------------------------------------------

    def list_documents(self, prefix: str | None, limit: int, offset: int):
        return self._catalog.documents(prefix, limit, offset), self._catalog.count_documents(prefix)

    def get_chunks(self, public_ids: Sequence[str]) -> list[Chunk]:
        return self.resolve(public_ids)


def _inside(inner: Chunk, outer: Chunk) -> bool:
    return inner.doc_id == outer.doc_id and inner.start >= outer.start and inner.end <= outer.end


def document_order(chunks: Sequence[Chunk], pinned: Chunk) -> list[Chunk]:
    """Chunks of one level in reading order, without the copies the broad overlap made; `pinned` always stays."""
    out: list[Chunk] = []
    reach = -1
    for chunk in sorted(chunks, key=lambda c: (c.start, -c.end, c.seq)):
        if chunk.id == pinned.id:
            out.append(chunk)
        elif overlap_share(chunk, pinned) >= HEAVY_OVERLAP or chunk.end <= reach:
            continue
        else:
            out.append(chunk)
        reach = max(reach, chunk.end)
    return out

