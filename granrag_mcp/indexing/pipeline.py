"""The index run, one transaction over the store: the changed documents found, then read, chunked and embedded in
bounded groups (indexing/groups.py), each handed to the new generation as it is done, which is committed whole at
the end (store/generation.py). A run that stops anywhere leaves the store as it was.

A first run into an empty store commits in steps (`index_step_documents`, `index_step_tokens`): each step is a
generation of the documents read so far, without the concept graph and the ranking adaptation, so that the first
documents are searchable while the rest are read; the last step is the generation a run in one piece commits,
graph and adaptation computed over every document. A run that stops anywhere leaves the last step current.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from pathlib import Path

import numpy as np

from granrag_mcp.embedding.choice import MULTILINGUAL_MODEL, is_auto, model_for, reads, stored_or_default, with_model
from granrag_mcp.embedding.embedder import Embedder
from granrag_mcp.errors import ExtractionError, GranragError, InvalidInputError, NoDocumentsError
from granrag_mcp.indexing.adapt_beside import Adapting, CoreMeter
from granrag_mcp.indexing.discovery import SourceFile, discover, file_hash, text_of
from granrag_mcp.indexing.documents import assign_ids, embed_levels, token_projection, token_reducer
from granrag_mcp.indexing.formats import format_list
from granrag_mcp.indexing.groups import DocumentGroup, GroupReader, StepBound
from granrag_mcp.indexing.parallel import ParallelStages, dimension_of, gather_vectors
from granrag_mcp.indexing.semantic_chunking import cut_embedded, embed_planned, plan_document
from granrag_mcp.indexing.summary import IndexSummary, Stopwatch
from granrag_mcp.levels import FINEST, LEVELS, Level
from granrag_mcp.progress import Progress, embedding
from granrag_mcp.records import Chunk
from granrag_mcp.settings import Settings
from granrag_mcp.store.catalog import Catalog
from granrag_mcp.store.generation import Draft, GenerationBuilder, first_free_chunk_id, new_generation
from granrag_mcp.store.graph import has_graph
from granrag_mcp.store.manifest import StoreIdentity
from granrag_mcp.store.store import Snapshot, check_identity, current_generation
from granrag_mcp.store.writer import StoreWriter
from granrag_mcp.tokens import get_tokenizer

__all__ = ["IndexSummary", "index_paths", "write_graph"]

log = logging.getLogger(__name__)


class _Multilingual(GranragError):
    """Raised inside a run with the `auto` model when a document in another language comes after the English model
    was chosen: the run starts again with the multilingual model, re-reading every document it needs. A
    GranragError, so that the draft it abandons passes it on as itself; it never leaves `index_paths`."""


def index_paths(
    paths: Sequence[Path],
    settings: Settings,
    *,
    embedder_factory: Callable[[], Embedder] | None,
    prune: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
    parallel: ParallelStages | None = None,
    roots: Sequence[Path] | None = None,
    exclude: Collection[str] = (),
    warned: set[tuple[Path, str]] | None = None,
) -> IndexSummary:
    """Index `paths` into one new generation of `settings.store`, made as `settings` say (model, chunking, vector
    mode, token vectors, graph, limits). A store with token vectors keeps them on a run that does not ask for them.
    `roots`: the real folders every file must lie in when it is read (None: anywhere). `exclude`: doc ids the
    caller knows cannot be read as they stand (they failed and have not changed since), left out unread.
    `warned`: the skipped files already warned of (`discover`). `embedder_factory`: the model, called only when there
    is work (None: the model the run settles on, loaded then)."""
    summary = IndexSummary(store=Path(settings.store))
    found = discover([Path(p) for p in paths], roots, settings.limits, warned)
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
        discovered = list(summary.failed)  # what discovery refused: a second run reports it again, the rest anew
        files = [f for f in found.files if f.doc_id not in exclude]
        # Steps only into an empty store: a store that serves a generation keeps serving all of it until the next.
        step = StepBound.of(settings) if parallel is None and base is None and not rebuild else None
        try:
            run = _IndexRun(writer, base, settings, embedder_factory, summary, progress, parallel, step=step)
            try:
                return run.run(files, prune)
            except _Multilingual:
                pass  # the draft is gone; the run starts again below, after the base is let go
        finally:
            if base is not None:
                base.close()
        # Every document of the store is among `files` (else the run keeps the store's model: see
        # `_IndexRun._choose`), so a run without the base re-reads and re-embeds them all.
        log.warning(
            "documents in languages other than English: embedding the store's %d documents with the multilingual "
            "model %s",
            len(files),
            MULTILINGUAL_MODEL,
        )
        again = IndexSummary(store=Path(settings.store))
        again.unsupported, again.failed = summary.unsupported, discovered
        settings = with_model(settings, MULTILINGUAL_MODEL)
        # A first run starts again in steps too: the multilingual model's first documents are searchable early.
        run = _IndexRun(writer, None, settings, embedder_factory, again, progress, parallel, restarted=True, step=step)
        return run.run(files, prune)


class _IndexRun:
    """One run's stages over its base generation: the diff, then per group of changed documents reading, chunking,
    embedding and handing over to the generation being built, and the commit."""

    def __init__(
        self,
        writer: StoreWriter,
        base: Snapshot | None,
        settings: Settings,
        embedder_factory: Callable[[], Embedder] | None,
        summary: IndexSummary,
        progress: Progress | None,
        parallel: ParallelStages | None,
        restarted: bool = False,
        step: StepBound | None = None,
    ) -> None:
        # `auto`: the model is the base's (the English model for a new store) until the documents ask for another;
        # `restarted`: a run started again with the multilingual model that `auto` chose.
        self.auto = is_auto(settings) and not restarted
        self.chosen = is_auto(settings) or restarted  # the factory's embedder may be another model than the chosen
        settings = stored_or_default(settings, base.manifest.identity.model if base else None)
        self.writer, self.base, self.settings = writer, base, settings
        self.absent: set[str] = set()  # the base's documents this run does not bring: it cannot re-embed those
        self.warned = False
        self.embedder_factory = embedder_factory
        self.embedder: Embedder | None = None
        self.summary = summary
        self.clock = Stopwatch(summary)
        self.meter = CoreMeter()  # whether the run found cores free: see adapt_beside.MIN_CORES_USED
        self.progress = progress or Progress(enabled=False)
        self.parallel = parallel
        self.tokenizer = get_tokenizer(settings.tokenizer)
        self.chunking = settings.chunking
        self.projection: np.ndarray | None = None
        asked = settings.token_vector_dims if settings.token_vectors else 0
        self.token_dims = asked or ((base.manifest.identity.token_vector_dims or 0) if base else 0)
        self.draft: Draft | None = None
        self.builder: GenerationBuilder | None = None
        self.new_ids: list[str] = []  # the documents handed to the generation, in order
        self.next_id = 0
        self.step = step
        self.built_on = base  # what the draft is built from: the base, or the run's last step
        self.draft_scope: ExitStack | None = None  # the draft's own context, closed when a step is committed

    def run(self, files: list[SourceFile], prune: bool) -> IndexSummary:
        try:
            return self._run(files, prune)
        finally:
            self.clock.done()

    def _run(self, files: list[SourceFile], prune: bool) -> IndexSummary:
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
        self.absent = set(known) - {f.doc_id for f in files}
        changed = self._diff(files, known)
        reader = GroupReader(
            self.settings, self.tokenizer, summary, self.clock, self.progress, self.parallel, self.step
        )
        with ExitStack() as stack:
            identity = wanted
            for group in self._guarded(reader.groups(changed, known)):
                self._choose(group)
                if self.builder is None:  # the first document read: the model's dimension, then the draft
                    dimension = self._dimension(group)  # the model chosen, and loaded
                    identity = wanted.model_copy(update={"model": self.settings.model, "dimension": dimension})
                    if base is not None:
                        check_identity(self.writer.root, base.manifest, identity)
                    self._open(stack, identity)
                self._take(group, identity.dimension)
                if group.ends_step:  # never the last group: the last step is the whole commit below
                    self._commit_step(stack, identity, len(changed))
            removed = self._removed(files, known, prune)
            summary.removed = len(removed)
            if self.builder is None:
                if summary.unchanged == 0 and not removed:
                    raise NoDocumentsError(
                        f"none of the {len(files)} documents could be indexed (see the warnings above); the store "
                        "was not changed"
                    )
                graph_only = (
                    self.settings.graph and base is not None and not has_graph(base.folder)
                )  # built with it off
                if base is not None and not removed and not graph_only:
                    summary.generation = base.generation
                    return summary
                self._open(stack, identity)
            summary.generation = self._commit(removed, identity)
        summary.committed = True
        return summary

    def _choose(self, group: DocumentGroup) -> None:
        """With the `auto` model: the English model while every document so far is English, else the multilingual
        one. The first group of a new store chooses; a later group in another language starts the run again with
        the multilingual model where the run holds every document of the store, and is otherwise embedded with the
        store's model, with a warning that says how to re-embed."""
        if not self.auto or not group.documents:
            return
        languages = {doc.language for doc in group.documents}  # told once a document, kept for the catalog
        if reads(self.settings.model, languages):
            return
        if self.parallel is None:  # a parallel engine's workers have embedded the group with the store's model
            if self.builder is None and self.base is None:  # nothing embedded yet: this group chooses
                self.settings = with_model(self.settings, model_for(languages))
                return
            if not self.absent:
                raise _Multilingual
        if not self.warned:
            self.warned = True
            log.warning(
                "documents in languages other than English, in a store embedded with the English model %s, which "
                "reads them poorly: index all of the store's folders again with --rebuild to embed them all with "
                "the multilingual model %s",
                self.settings.model,
                MULTILINGUAL_MODEL,
            )

    def _model_embedder(self) -> Embedder:
        """The embedder the factory gives, or, where the `auto` choice named another model, that model's; with no
        factory, the model the run settled on (so an `auto` store in another language loads only its own model)."""
        from granrag_mcp.embedding.factory import make_embedder

        if self.embedder_factory is None:
            return make_embedder(self.settings)
        embedder = self.embedder_factory()
        if self.chosen and embedder.name != self.settings.model:
            embedder = make_embedder(self.settings)
        return embedder

    def _open(self, stack: ExitStack, identity: StoreIdentity) -> None:
        """The draft of the new generation, its builder, and the first chunk id it numbers from."""
        self._open_draft(stack, identity)
        self.next_id = first_free_chunk_id(self.writer, self.base)
        self.summary.new_chunks = {level: 0 for level in LEVELS}

    def _open_draft(self, stack: ExitStack, identity: StoreIdentity) -> None:
        scope = self.draft_scope = stack.enter_context(ExitStack())
        self.draft = scope.enter_context(new_generation(self.writer, self.built_on))
        self.builder = GenerationBuilder(self.draft.folder, self.built_on, identity.dimension, self.projection)
        scope.callback(self.builder.close)  # a build stopped before it finished lets go of its catalog first

    def _commit_step(self, stack: ExitStack, identity: StoreIdentity, total: int) -> None:
        """Publish what is built so far as a generation without the graph and the adaptation (the last step
        computes them over every document), and build on from it: its chunk ids go on from the step's."""
        draft, builder, scope = self.draft, self.builder, self.draft_scope
        assert draft is not None and builder is not None and scope is not None
        with self.clock.stage("index"):
            counts = builder.finish(self.progress)
        with self.clock.stage("commit"):
            draft.publish(identity, counts, self.next_id)
        scope.close()  # the step is current
        previous, self.built_on = self.built_on, Snapshot.open(self.writer.root)
        stack.callback(self.built_on.close)
        if previous is not None and previous is not self.base:
            previous.close()
        self.progress.step_committed(draft.number, len(self.new_ids), total)
        self._open_draft(stack, identity)

    def _working(self) -> AbstractContextManager[None]:
        """Reading and embedding while the draft is open: their failures are not the store's (`Draft.working`)."""
        return self.draft.working() if self.draft is not None else nullcontext()

    def _guarded(self, groups: Iterator[DocumentGroup]) -> Iterator[DocumentGroup]:
        """`groups`, each read under `_working`."""
        while True:
            with self._working():
                group = next(groups, None)
            if group is None:
                return
            yield group

    def _take(self, group: DocumentGroup, dimension: int) -> None:
        """Embed one group and hand it over; then let it go, so that neither its text nor its vectors outlive it
        (the last group's would otherwise stay through the graph and adaptation stages)."""
        with self._working():
            chunks, vectors, token_rows = self._embed(group, dimension)
        self._hand_over(group, chunks, vectors, token_rows)
        group.documents.clear()
        group.prepared = None

    def _embed(
        self, group: DocumentGroup, dimension: int
    ) -> tuple[dict[Level, list[Chunk]], dict[Level, np.ndarray], list[np.ndarray] | None]:
        """One group's chunk records, numbered on from the previous group's, with every level's vectors (gathered
        from a parallel engine's workers, or embedded here) and the sentences' token vectors where the store keeps
        them."""
        docs = group.documents
        if self.parallel is None and self.chunking.chunker == "semantic":
            self._cut(group)
        chunks, self.next_id = assign_ids(docs, self.next_id)
        with self.clock.stage("embed"):
            if group.prepared is not None:
                return chunks, gather_vectors(group.prepared, dimension), None
            assert self.embedder is not None
            vectors, token_rows = embed_levels(
                docs, chunks, self.embedder, self.settings.vector_mode, self.progress, token_reducer(self.projection)
            )
        return chunks, vectors, token_rows

    def _hand_over(
        self,
        group: DocumentGroup,
        chunks: dict[Level, list[Chunk]],
        vectors: dict[Level, np.ndarray],
        token_rows: list[np.ndarray] | None,
    ) -> None:
        """Give one group's documents, chunk records and vectors to the generation being built; the group's text
        is then only in the draft's catalog."""
        assert self.builder is not None
        docs = group.documents
        with self.clock.stage("index"):
            self.builder.add(
                [(d.info, d.text) for d in docs],
                chunks,
                vectors,
                token_rows,
                {d.source.doc_id: d.outline for d in docs},
            )
        self.new_ids += [d.source.doc_id for d in docs]
        for level in LEVELS:
            self.summary.new_chunks[level] += len(chunks[level])

    def _commit(self, removed: list[str], identity: StoreIdentity) -> int:
        """The hand-off: the builder's files written without the removed documents, the concept graph, the ranking
        settings, and the new generation published; its number."""
        draft, builder = self.draft, self.builder
        assert draft is not None and builder is not None
        with self.clock.stage("index"):
            builder.remove(removed)
            counts = builder.finish(self.progress)
        # Ranking settings fitted to this text by pseudo-queries (no labels), searched one query at a time; in a
        # child process while the graph is built, where that pays.
        embedder = self.embedder or self._model_embedder()
        with Adapting(draft.folder, identity, embedder, self.settings.threads, meter=self.meter) as adaptation:
            if self.settings.graph:
                with self.clock.stage("graph"):
                    adaptation.start(counts.get(FINEST, 0))
                    # Over the run's base, not its steps (which have no graph): the graph a run in one piece builds.
                    write_graph(draft, self.base, self.new_ids, embedder.embed, identity.dimension, self.progress)
            with self.clock.stage("adapt"):
                adaptation.wait()
        with self.clock.stage("commit"):
            draft.publish(identity, counts, self.next_id)
        return draft.number

    def _diff(self, files: list[SourceFile], known: dict[str, str]) -> list[tuple[SourceFile, str]]:
        """The files whose bytes differ from the base's, with their hashes; the others are counted unchanged."""
        changed: list[tuple[SourceFile, str]] = []
        with self.clock.stage("hash"):
            for source in files:
                try:
                    digest = file_hash(source.path, source.roots, source.max_bytes)
                except ExtractionError as exc:  # gone or unreadable since discovery: the others are still indexed
                    log.warning("skipped %s: %s", source.path, exc.reason)
                    self.summary.failed.append((text_of(str(source.path)), exc.reason))
                    continue
                if known.get(source.doc_id) == digest:
                    self.summary.unchanged += 1
                else:
                    changed.append((source, digest))
        return changed

    def _removed(self, files: list[SourceFile], known: dict[str, str], prune: bool) -> list[str]:
        """The stored documents the new generation leaves out: with `prune`, those no longer under the paths, and
        always those whose file is there but could no longer be read (emptied, truncated, unreadable), since their
        stored text no longer says what the file does."""
        failed = {path for path, _ in self.summary.failed}
        unreadable = {f.doc_id for f in files if f.doc_id in known and text_of(str(f.path)) in failed}
        gone = set(known) - {f.doc_id for f in files} if prune else set()
        return sorted(gone | unreadable)

    def _dimension(self, group: DocumentGroup) -> int:
        """The vectors' dimension: a parallel engine's, or the model's, loaded here (with the token projection)."""
        if group.prepared is not None:
            return dimension_of(group.prepared)
        with self.clock.stage("model"):
            embedder = self.embedder = self._model_embedder()
        if embedder.dimension <= 0:
            raise InvalidInputError("the embedding model reports no dimension")
        if self.token_dims:
            self.projection = token_projection(self.base, embedder, embedder.dimension, self.token_dims)
        return embedder.dimension

    def _cut(self, group: DocumentGroup) -> None:
        """The semantic chunker embeds a group's sentences to cut its mid chunks; the finest level keeps their
        vectors. Its three steps are reported as the run's sentences, embed and chunk stages."""
        assert self.embedder is not None
        docs = group.documents
        documents = [(d.source.doc_id, d.text) for d in docs]
        with self.clock.stage("sentences"):
            plans = [plan_document(d.text, self.tokenizer, self.chunking, d.outline.sections) for d in docs]
        with self.clock.stage("embed"):
            vectors, tokens = embed_planned(
                documents,
                plans,
                self.chunking,
                self.embedder,
                self.progress.callback(embedding(FINEST)),
                token_reducer(self.projection),
            )
        with self.clock.stage("chunk"):
            semantic = cut_embedded(documents, plans, self.chunking, vectors, tokens)
        for doc, (spans, sentence_vectors, sentence_tokens) in zip(docs, semantic):
            doc.spans, doc.sentence_vectors, doc.sentence_tokens = spans, sentence_vectors, sentence_tokens


class _StoredTexts(Mapping[str, str]):
    """The new documents' text by doc id, read from the generation's catalog as the graph asks for each, so that a
    run never holds every document's text at once."""

    def __init__(self, catalog: Catalog, doc_ids: Sequence[str]) -> None:
        self._catalog, self._ids = catalog, dict.fromkeys(doc_ids)

    def __getitem__(self, doc_id: str) -> str:
        text = self._catalog.document_text(doc_id) if doc_id in self._ids else None
        if text is None:
            raise KeyError(doc_id)
        return text

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._ids  # without reading the text, as Mapping's own test would

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def write_graph(
    draft: Draft,
    base: Snapshot | None,
    new_ids: Sequence[str],
    embed_names: Callable[[list[str]], np.ndarray] | None,
    dimension: int,
    progress: Progress,
) -> None:
    """The concept graph of the generation being built, from its catalog and sentence vectors (see indexing/graph.py).

    `new_ids`: the documents new to it, whose concepts are extracted; `embed_names` embeds the names of concepts new
    to this generation (None: a removal, which adds none)."""
    from granrag_mcp.indexing.graph import write_generation_graph

    progress.message("building the concept graph")
    catalog = draft.open_catalog()
    sentences = draft.read_vectors(FINEST)
    try:
        graph = write_generation_graph(
            draft.folder,
            base.folder if base else None,
            catalog,
            _StoredTexts(catalog, new_ids),
            sentences.reconstruct,
            embed_names,
            dimension,
        )
    finally:
        catalog.close()
    progress.message(f"concept graph: {len(graph)} concepts, {graph.n_edges} edges, {graph.n_clusters} communities")
