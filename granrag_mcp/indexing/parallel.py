"""The per-document stages of an index run, as pure functions a parallel engine runs on its workers.

A document's extraction, chunking and vectors depend on that document alone (a mid or broad vector pools only
the sentences beneath it; a semantic mid boundary compares only its own sentences, against its own document's
percentile), so any set of workers can run them in any order. What needs the whole run stays in
the one process that writes the store: numbering the chunks, and committing the generation. The local engine
and a parallel one therefore give the same chunk ids, and vectors that differ only by the arithmetic of
batches of a different make-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.documents import NewDocument, assign_ids, chunk_text, embed_levels
from granrag_mcp.indexing.extract import ExtractedText, extract_text
from granrag_mcp.indexing.semantic_chunking import SentencePlan, cut_planned, plan_document
from granrag_mcp.indexing.structure import outline_of
from granrag_mcp.levels import FINEST, LEVELS, Level
from granrag_mcp.progress import Progress
from granrag_mcp.records import ChunkSpan
from granrag_mcp.settings import ChunkSettings, VectorMode
from granrag_mcp.tokens import Tokenizer


@dataclass
class PreparedDocument:
    """One changed document after the per-document stages: its text, chunks and vectors, or why it failed."""

    extracted: ExtractedText | None
    failure: str | None = None
    spans: list[ChunkSpan] = field(default_factory=list)  # semantic: empty until `embed_documents` cuts the mids
    plan: SentencePlan | None = None  # semantic: broad chunks and their sentences, before the sentences are embedded
    n_tokens: int = 0
    vectors: dict[Level, np.ndarray] = field(default_factory=dict)  # one row per span of that level, in order

    def result(self, source: SourceFile) -> ExtractedText:
        """The extracted text, or the ExtractionError the local engine would have raised for this document."""
        if self.extracted is None:
            raise ExtractionError(source.path, self.failure or "extraction failed")
        return self.extracted


class ParallelStages(Protocol):
    """An engine that runs the per-document stages elsewhere (Ray) and hands back one result per document, in
    the order asked for."""

    def run(self, changed: Sequence[tuple[SourceFile, str]], progress: Progress) -> list[PreparedDocument]: ...


def prepare_document(source: SourceFile, tokenizer: Tokenizer, chunking: ChunkSettings) -> PreparedDocument:
    """Extract and chunk one document, as the local engine does. The semantic chunker needs the sentence vectors
    to place its mid boundaries, so here it only plans (broad chunks, sentences); `embed_documents` cuts."""
    try:
        extracted = extract_text(source)
    except ExtractionError as exc:
        return PreparedDocument(None, failure=exc.reason)
    sections = outline_of(extracted, tokenizer).sections
    spans, n_tokens = chunk_text(extracted.text, tokenizer, chunking, sections)
    if chunking.chunker == "semantic":
        plan = plan_document(extracted.text, tokenizer, chunking, sections)
        return PreparedDocument(extracted, n_tokens=n_tokens, plan=plan)
    return PreparedDocument(extracted, spans=spans, n_tokens=n_tokens)


def embed_documents(
    sources: Sequence[SourceFile],
    prepared: Sequence[PreparedDocument],
    embedder: Embedder,
    mode: VectorMode,
    chunking: ChunkSettings,
) -> None:
    """Fill in the vectors of a batch of prepared documents, in one embedding run over all their texts (so the
    model sees full batches), by the same code as the local engine. Planned (semantic) documents are cut here:
    their sentences are embedded, the mid boundaries placed, and the sentence vectors kept as the narrow ones."""
    docs = [
        NewDocument(source, p.extracted.content_hash, p.extracted.text, p.spans, p.n_tokens)
        for source, p in zip(sources, prepared, strict=True)
        if p.extracted is not None
    ]
    if not docs:
        return
    kept = [p for p in prepared if p.extracted is not None]  # in docs' order
    planned = [(doc, p) for doc, p in zip(docs, kept, strict=True) if p.plan is not None]
    if planned:
        cuts = cut_planned(
            [(doc.source.doc_id, doc.text) for doc, _ in planned],
            [p.plan for _, p in planned if p.plan is not None],
            chunking,
            embedder,
        )
        for (doc, p), (spans, sentence_vectors, _) in zip(planned, cuts, strict=True):
            doc.spans = p.spans = spans
            doc.sentence_vectors = sentence_vectors
            p.plan = None  # cut: the spans say it all, and the result travels back smaller
    chunks, _ = assign_ids(docs, 0)  # ids local to this batch: only the rows' order matters here
    vectors, _ = embed_levels(docs, chunks, embedder, mode, Progress(enabled=False))
    done = {level: 0 for level in LEVELS}
    for doc, p in zip(docs, kept, strict=True):
        for level in LEVELS:
            count = sum(1 for span in doc.spans if span.level == level)
            p.vectors[level] = np.ascontiguousarray(vectors[level][done[level] : done[level] + count])
            done[level] += count


def gather_vectors(prepared: Sequence[PreparedDocument], dimension: int) -> dict[Level, np.ndarray]:
    """The documents' vectors stacked per level in document order: the order the writer numbers chunks in."""
    return {
        level: np.concatenate(
            [np.zeros((0, dimension), dtype=np.float32)] + [p.vectors[level] for p in prepared]
        ).astype(np.float32, copy=False)
        for level in LEVELS
    }


def dimension_of(prepared: Sequence[PreparedDocument]) -> int:
    for p in prepared:
        if FINEST in p.vectors:
            return int(p.vectors[FINEST].shape[1])
    return 0
