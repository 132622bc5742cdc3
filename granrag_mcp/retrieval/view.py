"""One snapshot of the index, with the primitives every retrieval technique is built from.

A `View` resolves public chunk ids, runs one dense or lexical search at one level, and walks the hierarchy
(ancestors, descendants, the descendant a coarse hit stands for). It holds no technique: each technique is a
function in its own module of this package that takes a view, so a request never mixes generations.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, gives_tokens
from granrag_mcp.embedding.queries import embed_queries
from granrag_mcp.errors import InvalidInputError, UnknownChunkError
from granrag_mcp.levels import FINEST, Level, child_of, is_finer, levels_above, parent_of
from granrag_mcp.records import MAX_QUERY_CHARS, Chunk, parse_chunk_id
from granrag_mcp.rerankers import Reranker
from granrag_mcp.retrieval.cross_lingual import words_can_match
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.fusion import Contribution, FusedItem
from granrag_mcp.retrieval.remembered import Remembered
from granrag_mcp.retrieval.spans import dedupe_by_span
from granrag_mcp.store.adaptation import Adaptation
from granrag_mcp.store.catalog import DocumentInfo
from granrag_mcp.store.store import Snapshot

if TYPE_CHECKING:
    from granrag_mcp.outline import Outline
    from granrag_mcp.retrieval.ranking.model import CandidateRanker

Scored = list[tuple[int, float]]
"""A ranked list of (chunk id, score), best first."""
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
GENERATIONS_KEPT = 4  # a server serves one generation; a few more cover the requests still on the previous ones


@dataclass
class ScoredChunk:
    """A chunk found by a technique: its score, what each fused list said of it, and the ids that led to it."""

    chunk: Chunk
    score: float | None
    sources: Mapping[str, Contribution] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)  # public ids of the chunks that led to this hit
    cluster: list[str] | None = None  # diversify=kmeans: public ids of the other members of this hit's cluster
    folded: list[str] = field(default_factory=list)  # public ids of returned hits lying inside this one


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query is empty: pass a question or keywords to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"the query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}: shorten it")
    return query.strip()


def first_peaks(scores: np.ndarray, lengths: np.ndarray) -> list[int]:
    """The position of each run's highest score (its first, on a tie: `np.argmax` of each run), for `scores` read
    as consecutive runs of `lengths` (none empty), found for all the runs at once."""
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    if np.isnan(scores).any():  # a NaN is its run's argmax, and equals nothing: run by run
        return [int(start + np.argmax(scores[start : start + n])) for start, n in zip(starts, lengths)]
    at_peak = np.flatnonzero(scores == np.repeat(np.maximum.reduceat(scores, starts), lengths))
    return at_peak[np.searchsorted(at_peak, starts)].tolist()


class PerGeneration:
    """What queries build from one generation's files and reuse (the concept graph's query structures, the facts
    searches remember of its documents and chunks), kept for the last few generations asked about, every structure
    of a kept generation with it. The engine holds one for every view it hands out, so a request reuses what an
    earlier one built and a new generation builds its own; a view made without one has its own."""

    def __init__(self, size: int = GENERATIONS_KEPT) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._built: OrderedDict[Path, dict[str, Any]] = OrderedDict()  # generation folder -> name -> structure

    def get(self, snapshot: Snapshot, name: str, build: Callable[[], T]) -> T:
        """The `name` structure of `snapshot`'s generation, built by `build` the first time it is asked for."""
        with self._lock:  # requests arriving together build it once
            built = self._built.get(snapshot.folder)
            if built is None:
                built = self._built[snapshot.folder] = {}
                while len(self._built) > self.size:
                    self._built.popitem(last=False)
            else:
                self._built.move_to_end(snapshot.folder)
            if name not in built:
                built[name] = build()
            return built[name]


class View:
    """The primitives of retrieval, bound to one snapshot."""

    def __init__(
        self,
        snapshot: Snapshot,
        embedder: Embedder,
        reranker: Reranker | None = None,
        *,
        doc_filter: DocFilter | None = None,
        candidate_ranker: CandidateRanker | None = None,
        adaptation: Adaptation | None = None,
        per_generation: PerGeneration | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.embedder = embedder
        self.reranker = reranker
        self.candidate_ranker = candidate_ranker  # reorders HRR's candidates (retrieval/candidate_ranking.py)
        self.adaptation = adaptation  # the list weights the store adapted to its text (indexing/adapt.py)
        self.catalog = snapshot.catalog
        self.doc_filter = doc_filter
        self.per_generation = per_generation or PerGeneration()
        self._allowed: dict[Level, np.ndarray] = {}
        self._query_vectors: dict[str, np.ndarray] = {}
        self._query_tokens: dict[str, np.ndarray] = {}
        self._words_match: dict[str, bool] = {}

    def filtered(self, doc_filter: DocFilter | None) -> View:
        """This view with its searches restricted to some documents (unknown doc ids are an error)."""
        if doc_filter is None:
            return self
        doc_filter.check(self.catalog)
        return View(
            self.snapshot,
            self.embedder,
            self.reranker,
            doc_filter=doc_filter,
            candidate_ranker=self.candidate_ranker,
            adaptation=self.adaptation,
            per_generation=self.per_generation,
        )

    def adapted_weights(self, fusion: str) -> dict[str, float] | None:
        """The weights the store adapted for a fusion, None where it adapted none: inside chosen documents (a
        `doc_ids` or `doc_prefix` filter) those it adapted for such searches where it has them."""
        if self.adaptation is None:
            return None
        chosen = self.doc_filter
        within = chosen is not None and (chosen.doc_ids is not None or chosen.doc_prefix is not None)
        return self.adaptation.weights(fusion, within_documents=within)

    def fusion_weights(self, fusion: str, given: Mapping[str, float] | None = None) -> dict[str, float]:
        """The weights a fusion uses: the store's adapted ones (none: every list 1.0), overridden by `given`."""
        return {**(self.adapted_weights(fusion) or {}), **(given or {})}

    def allowed(self, level: Level) -> np.ndarray | None:
        """The chunk ids of `level` a search may return; None when the view is not filtered."""
        if self.doc_filter is None:
            return None
        if level not in self._allowed:
            self._allowed[level] = self.doc_filter.chunk_ids(self.catalog, level)
        return self._allowed[level]

    # --- ids and chunks ----------------------------------------------------------------------------------------

    def resolve(self, public_ids: Sequence[str], level: Level | None = None) -> list[Chunk]:
        """Chunks for public ids, in the given order (duplicates removed); clear errors for bad ids."""
        parsed: list[tuple[str, Level, int]] = []
        for value in public_ids:
            chunk_level, chunk_id = parse_chunk_id(value)
            if level is not None and chunk_level != level:
                raise InvalidInputError(f"{value!r} is a {chunk_level} chunk; this needs {level} chunk ids")
            parsed.append((value, chunk_level, chunk_id))
        found = self.catalog.chunks([chunk_id for _, _, chunk_id in parsed])
        missing = [
            value
            for value, chunk_level, chunk_id in parsed
            if chunk_id not in found or found[chunk_id].level != chunk_level
        ]
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

    def scored_chunks(self, scored: Scored) -> list[ScoredChunk]:
        """The chunks of a ranked list, with their scores (ids no longer in the catalog left out)."""
        chunks = self.catalog.chunks([chunk_id for chunk_id, _ in scored])
        return [ScoredChunk(chunks[chunk_id], score) for chunk_id, score in scored if chunk_id in chunks]

    def remembered(self, fact: str, keys: Iterable[K], read: Callable[[list[K]], Mapping[K, T]]) -> dict[K, T]:
        """`read`'s answer for each of `keys`, read from the catalog once a generation: `fact` names what is
        remembered (`Remembered`, one per fact and generation)."""
        remembered: Remembered[K, T] = self.per_generation.get(self.snapshot, fact, Remembered)
        return remembered.of(keys, read)

    def document_outlines(self, doc_ids: Iterable[str]) -> dict[str, Outline]:
        """Each document's outline (an empty one where it has none), read once a generation."""
        return self.remembered("outlines", doc_ids, self.catalog.outlines)

    def document_languages(self, doc_ids: Iterable[str]) -> dict[str, str | None]:
        """Each known document's language (None where the catalog is older than languages), read once a
        generation."""
        return self.remembered("document_languages", doc_ids, self.catalog.languages)

    def chunk_outline(self, chunk_ids: Iterable[int]) -> dict[int, tuple[Level, int | None]]:
        """Level and parent id of each known chunk, read once a generation."""
        return self.remembered("chunk_outline", chunk_ids, self.catalog.outline)

    def chunk_children(self, chunk_ids: Iterable[int]) -> dict[int, list[int]]:
        """The ids of each chunk's children in reading order, read once a generation."""
        return self.remembered("chunk_children", chunk_ids, self.catalog.children)

    def fused_hits(self, fused: Sequence[FusedItem[int]], k: int) -> list[ScoredChunk]:
        """The best `k` fused chunks, a copy of a better one's span left out (`dedupe_by_span`). Their texts are read
        only as far down the fused order as the `k` kept reach: twice `k` first, the rest if copies left fewer."""
        hits: list[ScoredChunk] = []
        begin, step = 0, 2 * k
        while begin < len(fused):
            part = fused[begin : begin + step]
            chunks = self.catalog.chunks([item.key for item in part])
            hits += [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in part]
            kept = dedupe_by_span(hits, k)
            if len(kept) >= k:
                return kept
            begin, step = begin + step, len(fused)
        return dedupe_by_span(hits, k)

    # --- single level ------------------------------------------------------------------------------------------

    def query_vector(self, query: str) -> np.ndarray:
        # Kept per view (one request): the query memory needs the vector the technique already computed.
        query = check_query(query)
        vector = self._query_vectors.get(query)
        if vector is None:
            if self.snapshot.token_vectors is not None and gives_tokens(self.embedder):
                # The candidate ranker will want the query's token vectors: they come from this same forward.
                vector, self._query_tokens[query] = self.embedder.query_tokens(query)  # type: ignore[attr-defined]
            else:
                vector = embed_queries(self.embedder, [query])[0]
            self._query_vectors[query] = vector
        return vector

    def query_tokens(self, query: str) -> np.ndarray | None:
        """The query's token vectors (float32, the model's width), from the forward that gave its vector; None
        when the store holds no token vectors (then no forward computes them)."""
        query = check_query(query)
        if self.snapshot.token_vectors is None or not gives_tokens(self.embedder):
            return None
        if query not in self._query_tokens:
            self._query_vectors[query], self._query_tokens[query] = self.embedder.query_tokens(query)  # type: ignore[attr-defined]
        return self._query_tokens[query]

    def dense(self, level: Level, vector: np.ndarray, k: int) -> Scored:
        return self.snapshot.vectors[level].search(vector, k, self.allowed(level))

    def lexical(self, level: Level, query: str, k: int) -> Scored:
        """The BM25 list; empty when the query's words cannot match the searched documents (`words_match`)."""
        if not self.words_match(query):
            return []
        return self.snapshot.lexical[level].search(query, k, self.allowed(level))

    def searched_languages(self) -> frozenset[str | None]:
        """The languages of the documents this view searches: the filter's language, its documents' ones, else
        every language of the store (a folder prefix keeps the store's, a superset)."""
        chosen = self.doc_filter
        if chosen is not None and chosen.language is not None:
            return frozenset({chosen.language})
        if chosen is not None and chosen.doc_ids is not None:
            return frozenset(self.catalog.languages(chosen.doc_ids).values())
        return self.per_generation.get(self.snapshot, "languages", lambda: frozenset(self.catalog.language_counts()))

    def words_match(self, query: str) -> bool:
        """Whether the query's words can match the searched documents (`retrieval/cross_lingual.py`): where they
        cannot, BM25 lists are empty and the candidate ranker's word features neutral, so searches rely on vectors."""
        query = check_query(query)
        if query not in self._words_match:
            self._words_match[query] = words_can_match(query, self.searched_languages())
        return self._words_match[query]

    def map_lists(
        self,
        lists: Mapping[str, Scored],
        source_level: Level,
        level: Level,
        vector: np.ndarray,
        evidence: Mapping[int, int] | None = None,
    ) -> dict[str, Scored]:
        """Ranked lists of `source_level` chunks, each hit replaced by the chunk it stands for at `level`: a finer hit
        by its ancestor, a coarser one by one descendant (the one ranked best in `evidence`, chunk id -> rank, else
        the one whose vector is closest). All the lists are mapped together: one catalog query per level crossed."""
        ids = [chunk_id for scored in lists.values() for chunk_id, _ in scored]
        if source_level == level:
            mapped = {chunk_id: chunk_id for chunk_id in ids}
        elif is_finer(source_level, level):
            mapped = self.ancestors(ids, level)
        else:
            mapped = self.best_descendants(ids, level, vector, evidence, source_level)
        return {name: [(mapped[i], score) for i, score in scored if i in mapped] for name, scored in lists.items()}

    def ancestors(self, chunk_ids: Iterable[int], level: Level) -> dict[int, int]:
        """For chunks at or below `level`, the id of each one's ancestor at `level` (unknown ids left out); at most one
        catalog query per level climbed, reading no chunk text (`chunk_outline`)."""
        current = {chunk_id: chunk_id for chunk_id in chunk_ids}
        known = self.chunk_outline(current)
        while True:
            climbing = {orig: at for orig, at in current.items() if at in known and known[at][0] != level}
            if not climbing:
                return {orig: at for orig, at in current.items() if at in known}
            parents = {
                parent: parent_of(known[at][0]) for at in climbing.values() if (parent := known[at][1]) is not None
            }
            # a parent one level up that is `level` is where the climb ends: only its id is needed, not its row
            known.update({i: (level, None) for i, up in parents.items() if up == level and i not in known})
            known.update(self.chunk_outline(i for i in parents if i not in known))
            for orig, at in climbing.items():
                parent = known[at][1]
                if parent is None:  # already the top level: there is nothing at `level` above it
                    del current[orig]
                else:
                    current[orig] = parent

    def descendants(self, chunk_ids: Sequence[int], levels: Sequence[Level], level: Level) -> list[list[int]]:
        """For each chunk (of the given level, at or above `level`), its descendants at `level` in document order;
        at most one catalog query per level crossed, for all the chunks together (`chunk_children`)."""
        members = [[chunk_id] for chunk_id in chunk_ids]
        current = list(levels)
        for above in levels_above(level):
            at_level = [n for n, lvl in enumerate(current) if lvl == above]
            if at_level:
                children = self.chunk_children(i for n in at_level for i in members[n])
                for n in at_level:
                    members[n] = [child for i in members[n] for child in children[i]]
                    current[n] = child_of(above)  # type: ignore[assignment]
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
        source = source_level or self.catalog.outline(unique[:1])[unique[0]][0]
        members = self.descendants(unique, [source] * len(unique), level)
        chosen, unranked = {}, []
        for chunk_id, ids in zip(unique, members):
            ranked = [i for i in ids if evidence and i in evidence]
            if ranked:
                chosen[chunk_id] = min(ranked, key=lambda i: evidence[i] if evidence else 0)
            elif ids:
                unranked.append((chunk_id, ids))
        if unranked:  # the closest descendant by vector, all candidates read from the index at once
            candidates = np.asarray([i for _, ids in unranked for i in ids], dtype=np.int64)
            scores = self.snapshot.vectors[level].reconstruct(candidates) @ vector
            lengths = np.asarray([len(ids) for _, ids in unranked], dtype=np.int64)
            for (chunk_id, _), best in zip(unranked, first_peaks(scores, lengths)):
                chosen[chunk_id] = int(candidates[best])
        return chosen

    def sentence_vectors(self, chunks: Sequence[Chunk]) -> list[tuple[np.ndarray, np.ndarray]]:
        """The stored vectors and token counts of each chunk's sentences (finest-level chunks), in document order."""
        members = self.descendants([c.id for c in chunks], [c.level for c in chunks], FINEST)
        every = list(dict.fromkeys(i for ids in members for i in ids))
        sentences = self.catalog.chunks(every)
        vectors = dict(zip(every, self.snapshot.vectors[FINEST].reconstruct(np.array(every, dtype=np.int64))))
        return [
            (
                np.array([vectors[i] for i in ids], dtype=np.float32).reshape(len(ids), -1),
                np.array([sentences[i].token_count for i in ids], dtype=np.float32),
            )
            for ids in members
        ]

    # --- discovery ---------------------------------------------------------------------------------------------

    def list_documents(
        self, prefix: str | None, limit: int, offset: int, language: str | None = None
    ) -> tuple[list[DocumentInfo], int]:
        documents = self.catalog.documents(prefix, limit, offset, language)
        return documents, self.catalog.count_documents(prefix, language)

    def get_chunks(self, public_ids: Sequence[str]) -> list[Chunk]:
        return self.resolve(public_ids)
