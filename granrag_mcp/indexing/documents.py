"""The per-document stages of an index run, shared by the local engine and the parallel one: a changed
document's chunks, their numbering, and the vectors of every level embedded or pooled."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, gives_tokens
from granrag_mcp.errors import InvalidInputError
from granrag_mcp.indexing.chunk_vectors import level_vectors
from granrag_mcp.indexing.chunking import chunk_document
from granrag_mcp.indexing.discovery import SourceFile, text_of
from granrag_mcp.levels import FINEST, LEVELS, Level, parent_of
from granrag_mcp.outline import EMPTY, Outline, Section
from granrag_mcp.progress import Progress, embedding
from granrag_mcp.records import Chunk, ChunkSpan
from granrag_mcp.settings import ChunkSettings, VectorMode
from granrag_mcp.store.catalog import DocumentInfo
from granrag_mcp.store.store import Snapshot
from granrag_mcp.store.token_vectors import projection_for, quantise
from granrag_mcp.text.language import detect_language
from granrag_mcp.tokens import Tokenizer


@dataclass
class NewDocument:
    """A changed document on its way into the store: its text, chunks and, once embedded, its sentence vectors."""

    source: SourceFile
    content_hash: str
    text: str
    spans: list[ChunkSpan]
    n_tokens: int
    sentence_vectors: np.ndarray | None = None  # the semantic chunker's, kept as the narrow level's vectors
    sentence_tokens: list[np.ndarray] | None = None  # with token vectors: the semantic chunker's, int8
    outline: Outline = EMPTY  # its headings and pages, kept with it in the catalog

    @property
    def info(self) -> DocumentInfo:
        """What the catalog keeps about the document besides its text and chunks."""
        return DocumentInfo(
            self.source.doc_id,
            self.content_hash,
            text_of(str(self.source.path)),
            len(self.text),
            self.n_tokens,
            self.language,
        )

    @cached_property
    def language(self) -> str:
        """The language its text is written in (ISO 639-1, or "und")."""
        return detect_language(self.text)


def chunk_text(
    text: str, tokenizer: Tokenizer, chunking: ChunkSettings, sections: Sequence[Section] = ()
) -> tuple[list[ChunkSpan], int]:
    """The text's chunks (cut at its `sections`) and its token count. The semantic chunker gets no chunks here: it
    cuts them once the sentences are embedded, since its mid boundaries come from their vectors."""
    spans = chunk_document(text, tokenizer, chunking, sections) if chunking.chunker == "fixed" else []
    return spans, tokenizer.count(text)


def assign_ids(docs: list[NewDocument], next_id: int) -> tuple[dict[Level, list[Chunk]], int]:
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


def token_reducer(projection: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray] | None:
    """Token vectors to the store's int8 rows, or None when the store keeps none."""
    if projection is None:
        return None
    return lambda tokens: quantise(tokens, projection)


def embed_levels(
    docs: list[NewDocument],
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
            [c.text for c in finest], token_reduce, progress=progress.callback(embedding(FINEST))
        )
    else:
        finest_vectors = embedder.embed([c.text for c in finest], progress=progress.callback(embedding(FINEST)))
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
            progress=progress.callback(embedding(level)),
        )
        child = level
    return vectors, tokens
