"""The index run, one transaction over the store: the changed documents found, read, chunked and embedded, then
committed as one new generation (store/generation.py). A run that stops anywhere leaves the store as it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.errors import ExtractionError, InvalidInputError, NoDocumentsError
from granrag_mcp.indexing.discovery import SourceFile, discover, file_hash, text_of
from granrag_mcp.indexing.documents import (
    NewDocument,
    assign_ids,
    chunk_text,
    embed_levels,
    token_projection,
    token_reducer,
)
from granrag_mcp.indexing.extract import extract_text
from granrag_mcp.indexing.formats import format_list
from granrag_mcp.indexing.parallel import ParallelStages, PreparedDocument, dimension_of, gather_vectors
from granrag_mcp.indexing.semantic_chunking import semantic_documents
from granrag_mcp.indexing.sentences import check_sentence_cap
from granrag_mcp.indexing.structure import outline_of
from granrag_mcp.levels import FINEST, LEVELS, Level
from granrag_mcp.progress import EXTRACTING, Progress, embedding
from granrag_mcp.records import Chunk
from granrag_mcp.retrieval.ranking.adapt import adapt_generation
from granrag_mcp.settings import Settings
from granrag_mcp.store.generation import Draft, first_free_chunk_id, new_generation, write_indexes
from granrag_mcp.store.graph import has_graph
from granrag_mcp.store.manifest import StoreIdentity
from granrag_mcp.store.store import Snapshot, check_identity, current_generation
from granrag_mcp.store.vector_index import search_threads
from granrag_mcp.store.writer import StoreWriter
from granrag_mcp.tokens import get_tokenizer

log = logging.getLogger(__name__)


@dataclass
class IndexSummary:
    store: Path
    generation: int | None = None
    committed: bool = False
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    unsupported: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    replaced_bytes: list[str] = field(default_factory=list)
    guessed_encodings: list[tuple[str, str]] = field(default_factory=list)  # (path, codec) of undeclared non-UTF-8
    changed_while_read: list[str] = field(default_factory=list)  # indexed as last read; the hash is of that
    new_chunks: dict[str, int] = field(default_factory=dict)
    corpus_tokens: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


class _Stopwatch:
    """Adds the wall time of each stage to the summary."""

    def __init__(self, summary: IndexSummary) -> None:
        self._summary = summary

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._summary.seconds[name] = self._summary.seconds.get(name, 0.0) + time.perf_counter() - start


def index_paths(
    paths: Sequence[Path],
    settings: Settings,
    *,
    embedder_factory: Callable[[], Embedder],
    prune: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
    parallel: ParallelStages | None = None,
    roots: Sequence[Path] | None = None,
) -> IndexSummary:
    """Index `paths` into one new generation of `settings.store`, made as `settings` say (model, chunking, vector
    mode, token vectors, graph, limits). A store with token vectors keeps them on a run that does not ask for them.
    `roots`: the real folders every file must lie in when it is read (None: anywhere)."""
    summary = IndexSummary(store=Path(settings.store))
    found = discover([Path(p) for p in paths], roots, settings.limits)
    if found.missing:
        raise InvalidInputError(f"no such file or folder: {', '.join(str(p) for p in found.missing)}")
    summary.unsupported = len(found.unsupported)
    summary.failed += [(text_of(str(p)), "duplicate document id") for p in found.duplicates]
    summary.failed += [(text_of(str(p)), reason) for p, reason in found.skipped]
    if not found.files:
        raise NoDocumentsError(
            f"nothing to index in {', '.join(str(p) for p in paths)}: no {format_list()} file "
            f"({len(found.unsupported)} other files skipped); the store was not changed"
        )

    with StoreWriter(settings.store) as writer:
        base = None
        if not rebuild and current_generation(writer.root) is not None:  # a rebuild must work on a damaged CURRENT
            base = Snapshot.open(writer.root)
        try:
            run = _IndexRun(writer, base, settings, embedder_factory, summary, progress, parallel)
            return run.run(found.files, prune)
        finally:
            if base is not None:
                base.close()


class _IndexRun:
    """One run's stages over its base generation: the diff, reading and chunking, embedding, and the commit."""

    def __init__(
        self,
        writer: StoreWriter,
        base: Snapshot | None,
        settings: Settings,
        embedder_factory: Callable[[], Embedder],
        summary: IndexSummary,
        progress: Progress | None,
        parallel: ParallelStages | None,
    ) -> None:
        self.writer, self.base, self.settings = writer, base, settings
        self.embedder_factory = embedder_factory
        self.embedder: Embedder | None = None
        self.summary = summary
        self.clock = _Stopwatch(summary)
        self.progress = progress or Progress(enabled=False)
        self.parallel = parallel
        self.tokenizer = get_tokenizer(settings.tokenizer)
        self.chunking = settings.chunking
        self.projection: np.ndarray | None = None
        asked = settings.token_vector_dims if settings.token_vectors else 0
        self.token_dims = asked or ((base.manifest.identity.token_vector_dims or 0) if base else 0)

    def run(self, files: list[SourceFile], prune: bool) -> IndexSummary:
        base, summary = self.base, self.summary
        wanted = StoreIdentity(
            model=self.settings.model,
            dimension=base.manifest.identity.dimension if base else 0,
            tokenizer=self.tokenizer.name,
            vector_mode=self.settings.vector_mode,
            chunking=self.chunking,
            token_vector_dims=self.token_dims,
        )
        if self.token_dims and self.parallel is not None:
            raise InvalidInputError(
                "the Ray engine does not compute token vectors, and this store keeps them: use `--engine local`, "
                "or rebuild without --token-vectors"
            )
        if base is not None:
            check_identity(self.writer.root, base.manifest, wanted)  # before any work; the dimension comes later
        known = base.catalog.content_hashes() if base else {}
        changed = self._diff(files, known)
        removed = sorted(set(known) - {f.doc_id for f in files}) if prune else []
        new_docs, parallel_done = self._read(changed, known)
        summary.removed = len(removed)
        summary.corpus_tokens = sum(d.n_tokens for d in new_docs)
        if not new_docs and summary.unchanged == 0:
            raise NoDocumentsError(
                f"none of the {len(files)} documents could be indexed (see the warnings above); the store was not "
                "changed"
            )
        graph_only = self.settings.graph and base is not None and not has_graph(base.folder)  # built with it off
        if base is not None and not new_docs and not removed and not graph_only:
            summary.generation = base.generation
            return summary

        dimension = (
            self._embedder_for(new_docs) if new_docs and parallel_done is None else dimension_of(parallel_done or [])
        )
        identity = wanted.model_copy(update={"dimension": dimension}) if new_docs else wanted
        if base is not None:
            check_identity(self.writer.root, base.manifest, identity)
        next_id = first_free_chunk_id(self.writer, base)
        chunks, next_id = assign_ids(new_docs, next_id)
        vectors, token_rows = self._vectors(new_docs, chunks, parallel_done, identity.dimension)

        summary.generation = self._commit(new_docs, removed, chunks, vectors, token_rows, identity, next_id)
        summary.committed = True
        summary.new_chunks = {level: len(chunks[level]) for level in LEVELS}
        return summary

    def _commit(
        self,
        new_docs: list[NewDocument],
        removed: list[str],
        chunks: dict[Level, list[Chunk]],
        vectors: dict[Level, np.ndarray],
        token_rows: list[np.ndarray] | None,
        identity: StoreIdentity,
        next_id: int,
    ) -> int:
        """The hand-off: one new generation of the base's files with the changes, and the concept graph; its
        number."""
        base = self.base
        with new_generation(self.writer, base) as draft:
            with self.clock.stage("index"):
                counts = write_indexes(
                    draft.folder,
                    base,
                    [(d.info, d.text) for d in new_docs],
                    removed,
                    chunks,
                    vectors,
                    identity.dimension,
                    self.progress,
                    token_rows,
                    self.projection,
                    {d.source.doc_id: d.outline for d in new_docs},
                )
            if self.settings.graph:
                with self.clock.stage("graph"):
                    # A parallel run, or one that only builds the graph, loaded no model here: the names' model
                    # loads only when a concept needs its vector.
                    names = _names_embedder(self.embedder, self.embedder_factory)
                    texts = {d.source.doc_id: d.text for d in new_docs}
                    write_graph(draft, base, texts, names, identity.dimension, self.progress)
            # Ranking settings fitted to this text by pseudo-queries (no labels), searched one query at a time.
            with self.clock.stage("adapt"), search_threads(self.settings.threads):
                adapt_generation(draft.folder, identity, self.embedder or self.embedder_factory())
            with self.clock.stage("commit"):
                draft.publish(identity, counts, next_id)
        return draft.number

    def _diff(self, files: list[SourceFile], known: dict[str, str]) -> list[tuple[SourceFile, str]]:
        """The files whose bytes differ from the base's, with their hashes; the others are counted unchanged."""
        changed: list[tuple[SourceFile, str]] = []
        with self.clock.stage("hash"):
            for source in files:
                try:
                    digest = file_hash(source.path, source.roots, source.max_bytes)
                except ExtractionError as exc:  # gone or unreadable since discovery: the others are still indexed
                    self._failed(source, exc)
                    continue
                if known.get(source.doc_id) == digest:
                    self.summary.unchanged += 1
                else:
                    changed.append((source, digest))
        return changed

    def _failed(self, source: SourceFile, exc: ExtractionError) -> None:
        log.warning("skipped %s: %s", source.path, exc.reason)
        self.summary.failed.append((text_of(str(source.path)), exc.reason))

    def _read(
        self, changed: list[tuple[SourceFile, str]], known: dict[str, str]
    ) -> tuple[list[NewDocument], list[PreparedDocument] | None]:
        """The changed documents' text and chunks (and, from a parallel engine, their vectors: those outcomes are
        returned too, in the documents' order); the ones that cannot be read are reported and left out."""
        outcomes: list[PreparedDocument] | None = None
        if self.parallel is not None and changed:  # extract, chunk and embed every changed document on the workers
            with self.clock.stage("parallel"):
                outcomes = self.parallel.run(changed, self.progress)
        summary = self.summary
        new_docs: list[NewDocument] = []
        parallel_done: list[PreparedDocument] = []
        for number, (source, digest) in enumerate(changed, 1):
            outcome = outcomes[number - 1] if outcomes is not None else None
            if outcome is None:
                self.progress.update(EXTRACTING, number, len(changed))
            with self.clock.stage("extract"):
                try:
                    extracted = outcome.result(source) if outcome is not None else extract_text(source)
                    check_sentence_cap(source.path, extracted.text, self.settings.limits.max_sentences)
                except ExtractionError as exc:
                    self._failed(source, exc)
                    continue
            if extracted.content_hash != digest:
                log.warning("%s changed while it was being indexed; indexed it as last read", source.path)
                summary.changed_while_read.append(text_of(str(source.path)))
                digest = extracted.content_hash
            if extracted.replaced_bytes:
                log.warning("%s has bytes that are not valid %s; they were replaced", source.path, extracted.encoding)
                summary.replaced_bytes.append(text_of(str(source.path)))
            elif extracted.guessed_encoding:
                log.warning("%s is not UTF-8 and names no encoding; read it as %s", source.path, extracted.encoding)
                summary.guessed_encodings.append((text_of(str(source.path)), extracted.encoding))
            with self.clock.stage("chunk"):
                outline = outline_of(extracted, self.tokenizer)
                if outcome is not None:
                    spans, n_tokens = outcome.spans, outcome.n_tokens
                    parallel_done.append(outcome)
                else:
                    spans, n_tokens = chunk_text(extracted.text, self.tokenizer, self.chunking, outline.sections)
            new_docs.append(NewDocument(source, digest, extracted.text, spans, n_tokens, outline=outline))
            if source.doc_id in known:
                summary.updated += 1
            else:
                summary.added += 1
        return new_docs, (parallel_done if outcomes is not None else None)

    def _embedder_for(self, new_docs: list[NewDocument]) -> int:
        """Load the model (and the token projection); the semantic chunker embeds the sentences now, to cut the
        mid chunks, and the finest level keeps their vectors. Returns the model's dimension."""
        embedder = self.embedder = self.embedder_factory()
        if embedder.dimension <= 0:
            raise InvalidInputError("the embedding model reports no dimension")
        if self.token_dims:
            self.projection = token_projection(self.base, embedder, embedder.dimension, self.token_dims)
        if self.chunking.chunker == "semantic":
            with self.clock.stage("chunk"):
                semantic = semantic_documents(
                    [(d.source.doc_id, d.text) for d in new_docs],
                    self.tokenizer,
                    self.chunking,
                    embedder,
                    self.progress.callback(embedding(FINEST)),
                    token_reduce=token_reducer(self.projection),
                    sections=[d.outline.sections for d in new_docs],
                )
            for doc, (spans, sentence_vectors, sentence_tokens) in zip(new_docs, semantic):
                doc.spans, doc.sentence_vectors, doc.sentence_tokens = spans, sentence_vectors, sentence_tokens
        return embedder.dimension

    def _vectors(
        self,
        new_docs: list[NewDocument],
        chunks: dict[Level, list[Chunk]],
        parallel_done: list[PreparedDocument] | None,
        dimension: int,
    ) -> tuple[dict[Level, np.ndarray], list[np.ndarray] | None]:
        """Every level's vectors in the chunks' order (gathered from a parallel engine's workers, or embedded
        here), and the sentences' token vectors where the store keeps them."""
        if not new_docs:
            return {}, None
        with self.clock.stage("embed"):
            if parallel_done is not None:
                return gather_vectors(parallel_done, dimension), None
            assert self.embedder is not None
            return embed_levels(
                new_docs,
                chunks,
                self.embedder,
                self.settings.vector_mode,
                self.progress,
                token_reducer(self.projection),
            )


def _names_embedder(
    embedder: Embedder | None, embedder_factory: Callable[[], Embedder]
) -> Callable[[list[str]], np.ndarray]:
    """Embeds new concepts' names with the run's model. A parallel run embedded its chunks on the workers, so the
    model is loaded here only when a concept the previous graph lacks needs its name vector."""
    loaded: list[Embedder] = [embedder] if embedder is not None else []

    def embed(names: list[str]) -> np.ndarray:
        if not loaded:
            loaded.append(embedder_factory())
        return loaded[0].embed(names)

    return embed


def write_graph(
    draft: Draft,
    base: Snapshot | None,
    texts: dict[str, str],
    embed_names: Callable[[list[str]], np.ndarray] | None,
    dimension: int,
    progress: Progress,
) -> None:
    """The concept graph of the generation being built, from its catalog and sentence vectors (see indexing/graph.py).

    `texts`: the new documents' text by doc id; `embed_names` embeds the names of concepts new to this generation
    (None: a removal, which adds none)."""
    from granrag_mcp.indexing.graph import write_generation_graph

    progress.message("building the concept graph")
    catalog = draft.open_catalog()
    sentences = draft.read_vectors(FINEST)
    try:
        graph = write_generation_graph(
            draft.folder,
            base.folder if base else None,
            catalog,
            texts,
            sentences.reconstruct,
            embed_names,
            dimension,
        )
    finally:
        catalog.close()
    progress.message(f"concept graph: {len(graph)} concepts, {graph.n_edges} edges, {graph.n_clusters} communities")
