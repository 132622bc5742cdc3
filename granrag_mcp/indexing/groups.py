"""An index run's changed documents read and chunked in bounded groups, so that a run holds the text of one group
at a time: the pipeline embeds each group and hands it to the generation being built, which keeps only the chunk
records and vectors, before the next group is read.

A group closes once its documents' text reaches `index_group_chars` characters or it holds `GROUP_DOCUMENTS`
documents; a larger document is a group alone (`GRANRAG_MAX_SENTENCES` bounds it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile, text_of
from granrag_mcp.indexing.documents import NewDocument, chunk_text
from granrag_mcp.indexing.extract import ExtractedText
from granrag_mcp.indexing.extract_pool import ExtractionPool
from granrag_mcp.indexing.parallel import ParallelStages, PreparedDocument
from granrag_mcp.indexing.sentences import check_sentence_cap
from granrag_mcp.indexing.structure import outline_of
from granrag_mcp.indexing.summary import IndexSummary, Stopwatch
from granrag_mcp.progress import EXTRACTING, Progress
from granrag_mcp.settings import Settings
from granrag_mcp.tokens import Tokenizer

log = logging.getLogger(__name__)

GROUP_DOCUMENTS = 4096
"""Documents in one group at most: thousands of tiny files hold more in per-document records than in text."""
PARALLEL_GROUPS = 8
"""Groups a parallel engine gets per call: each call starts its workers' models, so its slices are larger."""


@dataclass
class DocumentGroup:
    """Documents read and chunked, in run order; from a parallel engine, with its outcomes (their vectors)."""

    documents: list[NewDocument] = field(default_factory=list)
    prepared: list[PreparedDocument] | None = None  # in the documents' order
    chars: int = 0


def file_slices(changed: Sequence[tuple[SourceFile, str]], chars: int, documents: int) -> Iterator[list]:
    """`changed` cut in order into slices of at most `documents` files and about `chars` bytes of files (a parallel
    engine reads them; their text is not known yet)."""
    piece: list[tuple[SourceFile, str]] = []
    size = 0
    for item in changed:
        try:
            size += item[0].path.stat().st_size
        except OSError:  # gone since it was hashed: reading it reports that
            pass
        piece.append(item)
        if size >= chars or len(piece) >= documents:
            yield piece
            piece, size = [], 0
    if piece:
        yield piece


class GroupReader:
    """Reads, checks and chunks the changed documents a group at a time; what cannot be read is reported in the
    summary and left out."""

    def __init__(
        self,
        settings: Settings,
        tokenizer: Tokenizer,
        summary: IndexSummary,
        clock: Stopwatch,
        progress: Progress,
        parallel: ParallelStages | None,
    ) -> None:
        self.settings, self.tokenizer, self.summary = settings, tokenizer, summary
        self.clock, self.progress, self.parallel = clock, progress, parallel
        self.limit = settings.index_group_chars
        self.chunking, self.max_sentences = settings.chunking, settings.max_sentences  # built once, not per file

    def groups(self, changed: Sequence[tuple[SourceFile, str]], known: dict[str, str]) -> Iterator[DocumentGroup]:
        """The changed documents that could be read, in groups, in the order of `changed`."""
        if self.parallel is None:
            slices: Iterator[Sequence[tuple[SourceFile, str]]] = iter([changed])
        else:
            slices = file_slices(changed, self.limit * PARALLEL_GROUPS, GROUP_DOCUMENTS * PARALLEL_GROUPS)
        number = 0
        with ExtractionPool(self.settings.limits) as pool:  # a run that stops here kills its workers
            for piece in slices:
                outcomes: list[PreparedDocument] | None = None
                if self.parallel is not None:  # extract, chunk and embed this slice on the workers
                    with self.clock.stage("parallel"):
                        outcomes = self.parallel.run(piece, self.progress)
                    read: Iterator[ExtractedText | ExtractionError] | None = None
                else:  # read in the pool's workers, a few ahead of the chunking here
                    read = pool.extract([source for source, _ in piece], self._waiting(number, len(changed)))
                yield from self._read(piece, outcomes, read, known, len(changed), number)
                number += len(piece)
            with self.clock.stage("extract"):
                pool.close()  # the workers ended and waited for here, so that their CPU time counts to this stage

    def _waiting(self, before: int, total: int) -> Callable[[int], None]:
        """Progress while a worker reads the n-th document of a slice (from 0): a cancelled run stops there."""
        return lambda n: self.progress.update(EXTRACTING, before + n + 1, total)

    def _read(
        self,
        piece: Sequence[tuple[SourceFile, str]],
        outcomes: list[PreparedDocument] | None,
        read: Iterator[ExtractedText | ExtractionError] | None,
        known: dict[str, str],
        total: int,
        number: int,
    ) -> Iterator[DocumentGroup]:
        """One slice's documents in groups: each taken from the parallel engine's outcomes or the pool's texts."""
        group = self._empty(outcomes)
        for n, (source, digest) in enumerate(piece):
            number += 1
            outcome = outcomes[n] if outcomes is not None else None
            extracted = None
            if read is not None:
                self.progress.update(EXTRACTING, number, total)
                with self.clock.stage("extract"):
                    extracted = next(read)
            document = self._document(source, digest, outcome, known, extracted)
            if document is None:
                continue
            group.documents.append(document)
            if group.prepared is not None and outcome is not None:
                group.prepared.append(outcome)
            group.chars += len(document.text)
            if group.chars >= self.limit or len(group.documents) >= GROUP_DOCUMENTS:
                yield group
                group = self._empty(outcomes)
        if group.documents:
            yield group

    @staticmethod
    def _empty(outcomes: list[PreparedDocument] | None) -> DocumentGroup:
        return DocumentGroup(prepared=[] if outcomes is not None else None)

    def _document(
        self,
        source: SourceFile,
        digest: str,
        outcome: PreparedDocument | None,
        known: dict[str, str],
        read: ExtractedText | ExtractionError | None,
    ) -> NewDocument | None:
        """One changed document chunked, from the text a worker read (or, from a parallel engine, its outcome
        taken); None when it could not be read."""
        summary = self.summary
        with self.clock.stage("extract"):
            try:
                if isinstance(read, ExtractionError):
                    raise read
                extracted = outcome.result(source) if outcome is not None else read
                assert extracted is not None
                check_sentence_cap(source.path, extracted.text, self.max_sentences)
            except ExtractionError as exc:
                log.warning("skipped %s: %s", source.path, exc.reason)
                summary.failed.append((text_of(str(source.path)), exc.reason))
                return None
        digest = self._note_reading(source, extracted, digest)
        with self.clock.stage("chunk"):
            outline = outline_of(extracted, self.tokenizer)
            if outcome is not None:
                spans, n_tokens = outcome.spans, outcome.n_tokens
            else:
                spans, n_tokens = chunk_text(extracted.text, self.tokenizer, self.chunking, outline.sections)
        if source.doc_id in known:
            summary.updated += 1
        else:
            summary.added += 1
        summary.corpus_tokens += n_tokens
        return NewDocument(source, digest, extracted.text, spans, n_tokens, outline=outline)

    def _note_reading(self, source: SourceFile, extracted: ExtractedText, digest: str) -> str:
        """Warn of a file that changed while read or had to be decoded with care; the hash it is stored with."""
        summary = self.summary
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
        return digest
