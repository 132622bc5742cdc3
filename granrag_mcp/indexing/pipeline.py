"""The index run: discover, extract, chunk, embed, and commit one new generation (incrementally).

Longer than most modules because the incremental run is one transaction: discovery, extraction, chunking,
embedding and the commit share its state, and splitting them would pass that state around.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, gives_tokens
from granrag_mcp.errors import (
    ExtractionError,
    InvalidInputError,
    NoDocumentsError,
)
from granrag_mcp.indexing.chunk_vectors import level_vectors
from granrag_mcp.indexing.chunking import chunk_document
from granrag_mcp.indexing.discovery import SourceFile, discover, file_hash
from granrag_mcp.indexing.extract import extract_text
from granrag_mcp.indexing.parallel import ParallelStages, PreparedDocument, dimension_of, gather_vectors
from granrag_mcp.indexing.semantic_chunking import semantic_documents
from granrag_mcp.levels import FINEST, LEVELS, Level, parent_of
from granrag_mcp.progress import Progress
from granrag_mcp.records import Chunk, ChunkSpan
from granrag_mcp.retrieval.ranking.adapt import adapt_generation
from granrag_mcp.settings import ChunkSettings, VectorMode
from granrag_mcp.store.catalog import Catalog, DocumentInfo
from granrag_mcp.store.graph import has_graph
from granrag_mcp.store.lexical import LexicalIndex
from granrag_mcp.store.manifest import Manifest, StoreIdentity
from granrag_mcp.store.store import (
    CATALOG_FILE,
    Snapshot,
    carry_ranker,
    check_identity,
    current_generation,
    lexical_file,
    vector_file,
)
from granrag_mcp.store.token_vectors import TokenVectors, projection_for, quantise
from granrag_mcp.store.vector_index import VectorIndex
from granrag_mcp.store.writer import StoreWriter
from granrag_mcp.tokens import Tokenizer

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


@dataclass
class _NewDocument:
    source: SourceFile
    content_hash: str
    text: str
    spans: list[ChunkSpan]
    n_tokens: int
    sentence_vectors: np.ndarray | None = None  # the semantic chunker's, kept as the narrow level's vectors
    sentence_tokens: list[np.ndarray] | None = None  # with token vectors: the semantic chunker's, int8


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
    store_root: Path,
    *,
    embedder_factory: Callable[[], Embedder],
    tokenizer: Tokenizer,
    chunking: ChunkSettings,
    vector_mode: VectorMode,
    model_name: str,
    prune: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
    parallel: ParallelStages | None = None,
    token_vector_dims: int = 0,
    graph: bool = True,
) -> IndexSummary:
    """Index `paths` into one new generation. `token_vector_dims`: store the sentences' token vectors reduced to
    that many dimensions (0: only if the store has them already)."""
    progress = progress or Progress(enabled=False)
    summary = IndexSummary(store=Path(store_root))
    clock = _Stopwatch(summary)
    found = discover([Path(p) for p in paths])
    if found.missing:
        raise InvalidInputError(f"no such file or folder: {', '.join(str(p) for p in found.missing)}")
    summary.unsupported = len(found.unsupported)
    summary.failed += [(str(p), "duplicate document id") for p in found.duplicates]
    summary.failed += [(str(p), reason) for p, reason in found.skipped]
    if not found.files:
        raise NoDocumentsError(
            f"nothing to index in {', '.join(str(p) for p in paths)}: no .txt, .md, .pdf, .html or .htm file "
            f"({len(found.unsupported)} other files skipped); the store was not changed"
        )

    with StoreWriter(store_root) as writer:
        base = None
        if not rebuild and current_generation(writer.root) is not None:  # a rebuild must work on a damaged CURRENT
            base = Snapshot.open(writer.root)
        try:
            return _index_with_base(
                writer,
                base,
                found.files,
                summary,
                clock,
                progress,
                embedder_factory=embedder_factory,
                tokenizer=tokenizer,
                chunking=chunking,
                vector_mode=vector_mode,
                model_name=model_name,
                prune=prune,
                parallel=parallel,
                token_vector_dims=token_vector_dims,
                graph=graph,
            )
        finally:
            if base is not None:
                base.close()


def _index_with_base(
    writer: StoreWriter,
    base: Snapshot | None,
    files: list[SourceFile],
    summary: IndexSummary,
    clock: _Stopwatch,
    progress: Progress,
    *,
    embedder_factory: Callable[[], Embedder],
    tokenizer: Tokenizer,
    chunking: ChunkSettings,
    vector_mode: VectorMode,
    model_name: str,
    prune: bool,
    parallel: ParallelStages | None = None,
    token_vector_dims: int = 0,
    graph: bool = True,
) -> IndexSummary:
    # A store with token vectors keeps them: a run that does not ask for them still computes them for its documents.
    token_dims = token_vector_dims or ((base.manifest.identity.token_vector_dims or 0) if base else 0)
    wanted = StoreIdentity(
        model=model_name,
        dimension=base.manifest.identity.dimension if base else 0,
        tokenizer=tokenizer.name,
        vector_mode=vector_mode,
        chunking=chunking,
        token_vector_dims=token_dims,
    )
    if token_dims and parallel is not None:
        raise InvalidInputError(
            "the Ray engine does not compute token vectors, and this store keeps them: use `--engine local`, or "
            "rebuild without --token-vectors"
        )
    if base is not None:
        check_identity(writer.root, base.manifest, wanted)  # before any work; the dimension is checked later
    known = base.catalog.content_hashes() if base else {}
    embedder: Embedder | None = None

    changed: list[tuple[SourceFile, str]] = []
    with clock.stage("hash"):
        for source in files:
            try:
                digest = file_hash(source.path)
            except ExtractionError as exc:  # gone or unreadable since discovery: the others are still indexed
                log.warning("skipped %s: %s", source.path, exc.reason)
                summary.failed.append((str(source.path), exc.reason))
                continue
            if known.get(source.doc_id) == digest:
                summary.unchanged += 1
            else:
                changed.append((source, digest))
    removed = sorted(set(known) - {f.doc_id for f in files}) if prune else []

    outcomes: list[PreparedDocument] | None = None
    if parallel is not None and changed:  # extract, chunk and embed every changed document on the workers
        with clock.stage("parallel"):
            outcomes = parallel.run(changed, progress)
    new_docs: list[_NewDocument] = []
    parallel_done: list[PreparedDocument] = []  # the outcomes of the documents kept, in new_docs' order
    for number, (source, digest) in enumerate(changed, 1):
        if outcomes is None:
            progress.update("extracting documents", number, len(changed))
        with clock.stage("extract"):
            try:
                extracted = outcomes[number - 1].result(source) if outcomes is not None else extract_text(source)
            except ExtractionError as exc:
                log.warning("skipped %s: %s", source.path, exc.reason)
                summary.failed.append((str(source.path), exc.reason))
                continue
        if extracted.content_hash != digest:
            log.warning("%s changed while it was being indexed; indexed it as last read", source.path)
            summary.changed_while_read.append(str(source.path))
            digest = extracted.content_hash
        if extracted.replaced_bytes:
            log.warning("%s has bytes that are not valid %s; they were replaced", source.path, extracted.encoding)
            summary.replaced_bytes.append(str(source.path))
        elif extracted.guessed_encoding:
            log.warning("%s is not UTF-8 and names no encoding; read it as %s", source.path, extracted.encoding)
            summary.guessed_encodings.append((str(source.path), extracted.encoding))
        with clock.stage("chunk"):
            if outcomes is not None:
                spans, n_tokens = outcomes[number - 1].spans, outcomes[number - 1].n_tokens
                parallel_done.append(outcomes[number - 1])
            else:  # the semantic chunker cuts mid chunks later, from the sentence vectors it embeds
                spans = chunk_document(extracted.text, tokenizer, chunking) if chunking.chunker == "fixed" else []
                n_tokens = tokenizer.count(extracted.text)
        new_docs.append(_NewDocument(source, digest, extracted.text, spans, n_tokens))
        if source.doc_id in known:
            summary.updated += 1
        else:
            summary.added += 1
    summary.removed = len(removed)
    summary.corpus_tokens = sum(d.n_tokens for d in new_docs)

    if not new_docs and summary.unchanged == 0:
        raise NoDocumentsError(
            f"none of the {len(files)} documents could be indexed (see the warnings above); the store was not changed"
        )
    graph_only = graph and base is not None and not has_graph(base.folder)  # a store indexed with the graph off
    if base is not None and not new_docs and not removed and not graph_only:
        summary.generation = base.generation
        return summary

    dimension = dimension_of(parallel_done)
    projection: np.ndarray | None = None
    if new_docs and outcomes is None:
        embedder = embedder_factory()
        if embedder.dimension <= 0:
            raise InvalidInputError("the embedding model reports no dimension")
        dimension = embedder.dimension
        if token_dims:
            projection = token_projection(base, embedder, dimension, token_dims)
        if chunking.chunker == "semantic":
            with clock.stage("chunk"):  # embeds the sentences, which the finest level then keeps
                semantic = semantic_documents(
                    [(d.source.doc_id, d.text) for d in new_docs],
                    tokenizer,
                    chunking,
                    embedder,
                    progress.callback("embedding sentences"),
                    token_reduce=_reducer(projection),
                )
            for doc, (spans, sentence_vectors, sentence_tokens) in zip(new_docs, semantic):
                doc.spans, doc.sentence_vectors, doc.sentence_tokens = spans, sentence_vectors, sentence_tokens
    identity = wanted.model_copy(update={"dimension": dimension}) if new_docs else wanted
    if base is not None:
        check_identity(writer.root, base.manifest, identity)

    # A rebuild (no base) still numbers after everything on disk: an old id must never name a new chunk, and
    # the new generation must not replace the one `recover` falls back to.
    last_generation, first_free_id = writer.numbering()
    next_id = base.manifest.next_chunk_id if base else first_free_id
    chunks, next_id = _assign_ids(new_docs, next_id)
    vectors = {}
    token_rows: list[np.ndarray] | None = None
    if new_docs:
        with clock.stage("embed"):
            if outcomes is not None:  # embedded on the workers already
                vectors = gather_vectors(parallel_done, dimension)
            else:
                vectors, token_rows = _embed(
                    new_docs,
                    chunks,
                    embedder,  # type: ignore[arg-type]
                    vector_mode,
                    progress,
                    _reducer(projection),
                )

    generation = max(base.generation if base else 0, last_generation) + 1
    with writer.committing(generation):
        folder = writer.new_folder(generation)
        with clock.stage("index"):
            counts = write_generation(
                folder, base, new_docs, removed, chunks, vectors, identity.dimension, progress, token_rows, projection
            )
        if graph:
            with clock.stage("graph"):
                # A parallel run, or one that only builds the graph, loaded no model here: the names' model loads
                # only when a concept needs its vector.
                names = _names_embedder(embedder, embedder_factory)
                write_graph(folder, base, new_docs, names, identity.dimension, progress)
        with clock.stage("adapt"):  # ranking settings fitted to this text by pseudo-queries, no labels
            adapt_generation(folder, identity, embedder or embedder_factory())
        with clock.stage("commit"):
            manifest = Manifest(
                generation=generation, identity=identity, counts=counts, next_chunk_id=next_id, files={}
            )
            writer.publish(folder, manifest)
    summary.generation = generation
    summary.committed = True
    summary.new_chunks = {level: len(chunks[level]) for level in LEVELS}
    return summary


def _assign_ids(docs: list[_NewDocument], next_id: int) -> tuple[dict[Level, list[Chunk]], int]:
    """Stable int64 ids for new chunks, never reused; parents resolved through their seq."""
    out: dict[Level, list[Chunk]] = {level: [] for level in LEVELS}
    for doc in docs:
        ids_by_level: dict[Level, dict[int, int]] = {level: {} for level in LEVELS}
        for span in doc.spans:  # broad first, then mid, then narrow
            chunk_id = next_id
            next_id += 1
            ids_by_level[span.level][span.seq] = chunk_id
            parent_level = parent_of(span.level)
            parent_id = (
                ids_by_level[parent_level][span.parent_seq] if parent_level and span.parent_seq is not None else None
            )
            out[span.level].append(
                Chunk(
                    chunk_id,
                    doc.source.doc_id,
                    span.level,
                    span.seq,
                    span.start,
                    span.end,
                    span.token_count,
                    parent_id,
                    doc.text[span.start : span.end],
                )
            )
    return out, next_id


def token_projection(base: Snapshot | None, embedder: Embedder, dimension: int, dims: int) -> np.ndarray:
    """The projection of the store's token vectors: the base generation's (fixed for the store's life), else a new
    one; the embedder must give token vectors."""
    if not gives_tokens(embedder):
        raise InvalidInputError(
            f"the embedder {embedder.name!r} gives no token vectors: index without --token-vectors (a store that "
            "has them needs a rebuild without them)"
        )
    stored = base.token_vectors if base is not None else None
    return np.asarray(stored.projection) if stored is not None else projection_for(dimension, dims, embedder.name)


def _reducer(projection: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray] | None:
    if projection is None:
        return None
    return lambda tokens: quantise(tokens, projection)


def _embed(
    docs: list[_NewDocument],
    chunks: dict[Level, list[Chunk]],
    embedder: Embedder,
    mode: VectorMode,
    progress: Progress,
    token_reduce: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[dict[Level, np.ndarray], list[np.ndarray] | None]:
    """The vectors of every level, and with `token_reduce` the sentences' reduced token vectors (from the same
    forwards as their vectors), in the narrow chunks' order."""
    finest = chunks[FINEST]
    sizes = ", ".join(f"{len(chunks[level])} {level}" for level in LEVELS)
    progress.message(f"embedding {sizes} chunks from {len(docs)} documents (vector mode: {mode})")
    tokens: list[np.ndarray] | None = None
    if docs and all(d.sentence_vectors is not None for d in docs):  # embedded already by the semantic chunker
        finest_vectors = np.concatenate([d.sentence_vectors for d in docs if d.sentence_vectors is not None]).astype(
            np.float32
        )
        if token_reduce is not None:
            tokens = [t for d in docs for t in d.sentence_tokens or []]
    elif token_reduce is not None:
        finest_vectors, tokens = embedder.embed_tokens(  # type: ignore[attr-defined]
            [c.text for c in finest], token_reduce, progress=progress.callback("embedding sentences")
        )
    else:
        finest_vectors = embedder.embed([c.text for c in finest], progress=progress.callback("embedding sentences"))
    vectors = {FINEST: finest_vectors}
    # Each coarser level pools the token-weighted sums of its children (or embeds its own text; see chunk_vectors).
    sums = vectors[FINEST] * np.array([max(c.token_count, 1) for c in finest], dtype=np.float32)[:, None]
    row_of = {c.id: row for level in LEVELS if level != FINEST for row, c in enumerate(chunks[level])}
    child: Level = FINEST
    while (level := parent_of(child)) is not None:
        parent_rows = np.array([row_of[c.parent_id] for c in chunks[child] if c.parent_id is not None], dtype=np.int64)
        vectors[level], sums = level_vectors(
            mode,
            embedder,
            [c.text for c in chunks[level]],
            sums,
            parent_rows,
            progress=progress.callback(f"embedding {level} chunks"),
        )
        child = level
    return vectors, tokens


def write_generation(
    folder: Path,
    base: Snapshot | None,
    new_docs: list[_NewDocument],
    removed: list[str],
    chunks: dict[Level, list[Chunk]],
    vectors: dict[Level, np.ndarray],
    dimension: int,
    progress: Progress,
    token_rows: list[np.ndarray] | None = None,
    projection: np.ndarray | None = None,
) -> dict[str, int]:
    """Write the generation's catalog and indexes (and token vectors, where the base has them or `token_rows`,
    int8 per narrow chunk of `chunks`, are given). Returns its counts."""
    replaced_docs = [d.source.doc_id for d in new_docs] + removed
    stale_ids = base.catalog.chunk_ids_of_documents(replaced_docs) if base else {level: [] for level in LEVELS}
    if base is not None:
        shutil.copyfile(base.folder / CATALOG_FILE, folder / CATALOG_FILE)
        carry_ranker(base.folder, folder)  # a fitted candidate ranker stays with the store
    catalog = Catalog.open_writable(folder / CATALOG_FILE)
    try:
        catalog.delete_documents(replaced_docs)
        by_doc: dict[str, list[Chunk]] = {}
        for level in LEVELS:
            for chunk in chunks[level]:
                by_doc.setdefault(chunk.doc_id, []).append(chunk)
        for doc in new_docs:
            info = DocumentInfo(doc.source.doc_id, doc.content_hash, str(doc.source.path), len(doc.text), doc.n_tokens)
            catalog.insert_document(info, doc.text, by_doc.get(doc.source.doc_id, []))
        catalog.commit()
        for level in LEVELS:
            index = VectorIndex.read(base.folder / vector_file(level)) if base else VectorIndex.empty(dimension)
            index.remove(np.asarray(stale_ids[level], dtype=np.int64))
            if chunks[level]:
                index.add(np.array([c.id for c in chunks[level]], dtype=np.int64), vectors[level])
            index.write(folder / vector_file(level))
            progress.message(f"{level}: {len(index)} vectors")
            level_chunks = catalog.chunks_of_level(level)
            lexical = LexicalIndex.build([c.id for c in level_chunks], [c.text for c in level_chunks])
            lexical.write(folder / lexical_file(level))
        write_token_vectors(folder, base, stale_ids[FINEST], chunks[FINEST], token_rows, projection)
        counts: dict[str, int] = {level: catalog.level_counts().get(level, 0) for level in LEVELS}
        counts["documents"] = catalog.count_documents()
    finally:
        catalog.close()
    return counts


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


def write_token_vectors(
    folder: Path,
    base: Snapshot | None,
    stale: Sequence[int],
    sentences: list[Chunk],
    rows: list[np.ndarray] | None,
    projection: np.ndarray | None,
) -> None:
    """The base's token vectors without the stale sentences, with the new ones; nothing for a store without."""
    stored = base.token_vectors if base is not None else None
    if stored is None and rows is None:
        return
    if sentences and (rows is None or len(rows) != len(sentences)):
        raise ValueError("token vectors are kept for this store, but the new sentences came without them")
    current = stored if stored is not None else TokenVectors.empty(projection)  # type: ignore[arg-type]
    current.updated(stale, [c.id for c in sentences], rows or []).write(folder)


def write_graph(
    folder: Path,
    base: Snapshot | None,
    new_docs: list[_NewDocument],
    embed_names: Callable[[list[str]], np.ndarray] | None,
    dimension: int,
    progress: Progress,
) -> None:
    """The concept graph of the generation being built, from its catalog and sentence vectors (see store/graph.py).

    `embed_names` embeds the names of concepts new to this generation (None: a removal, which adds none)."""
    from granrag_mcp.store.graph import write_generation_graph

    progress.message("building the concept graph")
    catalog = Catalog.open_readonly(folder / CATALOG_FILE)
    sentences = VectorIndex.read(folder / vector_file(FINEST))
    try:
        graph = write_generation_graph(
            folder,
            base.folder if base else None,
            catalog,
            {d.source.doc_id: d.text for d in new_docs},
            sentences.reconstruct,
            embed_names,
            dimension,
        )
    finally:
        catalog.close()
    progress.message(f"concept graph: {len(graph)} concepts, {graph.n_edges} edges, {graph.n_clusters} communities")
