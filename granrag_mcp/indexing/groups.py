"""An index run's changed documents read and chunked in bounded groups, so that a run holds the text of one group
at a time: the pipeline embeds each group and hands it to the generation being built, which keeps only the chunk
records and vectors, before the next group is read.

A group closes once its documents' text reaches `index_group_chars` characters or it holds `GROUP_DOCUMENTS`
documents; a larger document is a group alone (`GRANRAG_MAX_SENTENCES` bounds it). A run that commits in steps
(`StepBound`) also closes a group where a step ends, and marks it so, for the pipeline to commit there.
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
from granrag_mcp.progress import EXTRACTING, Progress, reading_pages
from granrag_mcp.settings import Settings
from granrag_mcp.tokens import Tokenizer

log = logging.getLogger(__name__)

GROUP_DOCUMENTS = 4096
"""Documents in one group at most: thousands of tiny files hold more in per-document records than in text."""
FIRST_STEP_SHARE = 4
"""The first step of a run larger than a step reads a quarter of the bound, each next one as much as the steps before
it read together: the first answers come four times sooner, and since every step rewrites the store so far, steps
that double keep a run's commits to about log2 of its size and its rewriting to about twice the final store's."""
PARALLEL_GROUPS = 8
"""Groups a parallel engine gets per call: each call starts its workers' models, so its slices are larger."""


@dataclass
class DocumentGroup:
    """Documents read and chunked, in run order; from a parallel engine, with its outcomes (their vectors).
    `ends_step`: the last group of a step of a run that commits in steps (never the run's last group)."""

    documents: list[NewDocument] = field(default_factory=list)
    prepared: list[PreparedDocument] | None = None  # in the documents' order
    chars: int = 0
    ends_step: bool = False


@dataclass(frozen=True)
class StepBound:
    """How much a step of a run that commits in steps reads: `documents` documents or `tokens` tokens, whichever
    comes first (`tokens` 0: no bound by tokens)."""

    documents: int
    tokens: int

    @classmethod
    def of(cls, settings: Settings) -> StepBound | None:
        """The settings' bound; None where they ask for one generation (`index_step_documents` 0)."""
        if settings.index_step_documents <= 0:
            return None
        return cls(settings.index_step_documents, settings.index_step_tokens)

    def reached(self, documents: int, tokens: int, done: tuple[int, int] | None = None) -> bool:
        """Whether a step of `documents` and `tokens` is full. With `done` (documents and tokens of the earlier
        steps, for a run of more files than the bound) the first step is smaller (`FIRST_STEP_SHARE` of the bound)
        so that the first answers come soonest, and each next one reads what is already committed, so steps double."""
        return _full(documents, self.documents, done and done[0]) or _full(tokens, self.tokens, done and done[1])


def _full(count: int, bound: int, done: int | None) -> bool:
    if bound <= 0:
        return False
    return count >= (bound if done is None else max(bound // FIRST_STEP_SHARE, done, 1))


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
        step: StepBound | None = None,
    ) -> None:
        self.settings, self.tokenizer, self.summary = settings, tokenizer, summary
        self.clock, self.progress, self.parallel = clock, progress, parallel
        self.step = step
        self.in_step = (0, 0)  # documents and tokens read since the last step ended
        self.stepped = (0, 0)  # documents and tokens of the steps ended so far
        self.files = 0  # the changed files of the run
        self.limit = settings.index_group_chars
        self.chunking, self.max_sentences = settings.chunking, settings.max_sentences  # built once, not per file

    def groups(self, changed: Sequence[tuple[SourceFile, str]], known: dict[str, str]) -> Iterator[DocumentGroup]:
        """The changed documents that could be read, in groups, in the order of `changed`."""
        if self.parallel is None:
            slices: Iterator[Sequence[tuple[SourceFile, str]]] = iter([changed])
        else:
            slices = file_slices(changed, self.limit * PARALLEL_GROUPS, GROUP_DOCUMENTS * PARALLEL_GROUPS)
        number, self.files = 0, len(changed)
        with ExtractionPool(self.settings.limits) as pool:  # a run that stops here kills its workers
            for piece in slices:
                outcomes: list[PreparedDocument] | None = None
                if self.parallel is not None:  # extract, chunk and embed this slice on the workers
                    with self.clock.stage("parallel"):
                        outcomes = self.parallel.run(piece, self.progress)
                    read: Iterator[ExtractedText | ExtractionError] | None = None
                else:  # read in the pool's workers, a few ahead of the chunking here
                    sources = [source for source, _ in piece]
                    read = pool.extract(sources, self._waiting(number, len(changed)), self._pages(sources))
                yield from self._read(piece, outcomes, read, known, len(changed), number)
                number += len(piece)
            with self.clock.stage("extract"):
                pool.close()  # the workers ended and waited for here, so that their CPU time counts to this stage

    def _waiting(self, before: int, total: int) -> Callable[[int], None]:
        """Progress while a worker reads the n-th document of a slice (from 0): a cancelled run stops there."""
        return lambda n: self.progress.update(EXTRACTING, before + n + 1, total)

    def _pages(self, sources: Sequence[SourceFile]) -> Callable[[int, int, int], None]:
        """Progress through the pages of the n-th document of a slice, where its reader tells them (a scan)."""
        return lambda n, done, total: self.progress.update(reading_pages(sources[n].path.name), done, total)

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
            # The last document ends no step: what it would commit is the run's own commit.
            group.ends_step = self._step_ends(document) and n + 1 < len(piece)
            if group.ends_step or group.chars >= self.limit or len(group.documents) >= GROUP_DOCUMENTS:
                yield group
                group = self._empty(outcomes)
        if group.documents:
            yield group

    def _step_ends(self, document: NewDocument) -> bool:
        """Count `document` into the step; whether the step is full with it."""
        if self.step is None:
            return False
        documents, tokens = self.in_step[0] + 1, self.in_step[1] + document.n_tokens
        # Smaller first steps only where the run is known to be larger than one step: a run under the bound is
        # one generation.
        ends = self.step.reached(documents, tokens, self.stepped if self.files > self.step.documents else None)
        self.in_step = (0, 0) if ends else (documents, tokens)
        if ends:
            self.stepped = (self.stepped[0] + documents, self.stepped[1] + tokens)
        return ends

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
