"""The one commit of a generation, shared by an index run, a removal and a fitted ranker.

`new_generation` numbers the generation after every one on disk, opens its folder under the single writer and,
whatever stops the writing, removes what was half-built, so the last committed generation stays current;
`Draft.publish` writes the checksummed manifest and makes the folder current. `write_indexes` writes a
generation's catalog, vector, BM25 and token-vector files from its base and the changed documents; only the
store's modules know those files' names.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from granrag_mcp.levels import FINEST, LEVELS, Level
from granrag_mcp.outline import EMPTY, Outline
from granrag_mcp.progress import Progress
from granrag_mcp.records import Chunk
from granrag_mcp.store.catalog import Catalog, DocumentInfo
from granrag_mcp.store.lexical import LexicalIndex
from granrag_mcp.store.manifest import MANIFEST_FILE, Manifest, StoreIdentity
from granrag_mcp.store.store import CATALOG_FILE, Snapshot, carry_ranker, lexical_file, vector_file
from granrag_mcp.store.token_vectors import TokenVectors
from granrag_mcp.store.vector_index import VectorIndex
from granrag_mcp.store.writer import StoreWriter
from granrag_mcp.text.language import UNDETERMINED, detect_language


@dataclass
class Draft:
    """A generation being written: its number and folder, not yet current."""

    writer: StoreWriter
    number: int
    folder: Path
    published: Path | None = None

    def publish(
        self, identity: StoreIdentity, counts: dict[str, int], next_chunk_id: int, created_at: str | None = None
    ) -> Path:
        """Checksum the folder's files into its manifest and make it the current generation; its final path."""
        fields = {"created_at": created_at} if created_at is not None else {}
        manifest = Manifest(
            generation=self.number, identity=identity, counts=counts, next_chunk_id=next_chunk_id, files={}, **fields
        )
        self.published = self.writer.publish(self.folder, manifest)
        return self.published

    def share(self, base_folder: Path, names: Iterable[str], leave_out: Iterable[str] = ()) -> None:
        """Put the base generation's files `names` (but its manifest and `leave_out`) into this one: linked where the
        file system can, since a published file never changes, else copied."""
        skipped = {MANIFEST_FILE, *leave_out}
        for name in names:
            if name in skipped:
                continue
            try:
                os.link(base_folder / name, self.folder / name)
            except OSError:
                shutil.copyfile(base_folder / name, self.folder / name)

    @contextmanager
    def working(self) -> Iterator[None]:
        """Around work done while the draft is open that is not the writing of its files (reading documents,
        embedding them): what fails there still removes the draft, but is raised as itself, not as a failed
        commit whose advice (free disk space) would be wrong."""
        try:
            yield
        except Exception as exc:
            raise _NotTheStore(exc) from exc

    def open_catalog(self) -> Catalog:
        """The catalog written so far, read-only."""
        return Catalog.open_readonly(self.folder / CATALOG_FILE)

    def read_vectors(self, level: Level) -> VectorIndex:
        """The vector index of `level` written so far."""
        return VectorIndex.read(self.folder / vector_file(level))


class _NotTheStore(BaseException):
    """Carries an error of `Draft.working` past the commit's handling of store failures, which lets it through."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


@contextmanager
def new_generation(writer: StoreWriter, base: Snapshot | None = None) -> Iterator[Draft]:
    """A new generation folder, numbered after every generation on disk (a rebuild too, so that the one `recover`
    falls back to is never replaced); it is removed again unless the body publishes it."""
    last, _ = writer.numbering()
    number = max(base.generation if base is not None else 0, last) + 1
    try:
        with writer.committing(number):
            draft = Draft(writer, number, writer.new_folder(number))
            yield draft
            if draft.published is None:
                raise RuntimeError(f"generation {number} was written but not published")
    except _NotTheStore as carried:
        raise carried.error from carried.error.__cause__


def first_free_chunk_id(writer: StoreWriter, base: Snapshot | None) -> int:
    """The first chunk id of the next generation: after the base's, or after every id on disk for a rebuild, so an
    old id never names a new chunk."""
    return base.manifest.next_chunk_id if base is not None else writer.numbering()[1]


class GenerationBuilder:
    """A generation's catalog and indexes written from its base in groups of changed documents, so that a run holds
    one group's text at a time: each `add` puts a group's documents, chunk records and vectors in, replacing their
    base versions; `finish` removes the stale chunks and writes the files. The result is the one `write_indexes`
    writes from all the groups at once."""

    def __init__(
        self, folder: Path, base: Snapshot | None, dimension: int, projection: np.ndarray | None = None
    ) -> None:
        self.folder, self.base, self.projection = folder, base, projection
        if base is not None:
            shutil.copyfile(base.folder / CATALOG_FILE, folder / CATALOG_FILE)
            carry_ranker(base.folder, folder)  # a fitted candidate ranker stays with the store
        self.catalog = Catalog.open_writable(folder / CATALOG_FILE)
        self.indexes = {
            level: VectorIndex.read(base.folder / vector_file(level)) if base else VectorIndex.empty(dimension)
            for level in LEVELS
        }
        self.stale: dict[Level, list[int]] = {level: [] for level in LEVELS}
        # A graph gets its new vectors in one add after the removals, as from one group: the graph it builds
        # depends on how its additions are split.
        self.pending: dict[Level, list[tuple[np.ndarray, np.ndarray]]] = {level: [] for level in LEVELS}
        self.token_ids: list[int] = []
        self.token_rows: list[np.ndarray] | None = None

    def add(
        self,
        documents: Sequence[tuple[DocumentInfo, str]],
        chunks: Mapping[Level, Sequence[Chunk]],
        vectors: Mapping[Level, np.ndarray],
        token_rows: list[np.ndarray] | None = None,
        outlines: Mapping[str, Outline] | None = None,
    ) -> None:
        """One group of changed documents (info and text) with their `chunks`, `vectors` (rows in the chunks'
        order), `outlines` by doc id, and the int8 token rows of their finest chunks where the store keeps them."""
        self._replace([info.doc_id for info, _ in documents])
        by_doc: dict[str, list[Chunk]] = {}
        for level in LEVELS:
            for chunk in chunks.get(level, ()):
                by_doc.setdefault(chunk.doc_id, []).append(chunk)
        for info, text in documents:
            self.catalog.insert_document(
                info, text, by_doc.get(info.doc_id, []), (outlines or {}).get(info.doc_id, EMPTY)
            )
        self.catalog.commit()  # the draft is not current: a commit here only lets SQLite release the group
        for level in LEVELS:
            level_chunks = chunks.get(level, ())
            if not level_chunks:
                continue
            ids = np.array([c.id for c in level_chunks], dtype=np.int64)
            index = self.indexes[level]
            if index.kind == "hnsw":
                self.pending[level].append((ids, np.asarray(vectors[level], dtype=np.float32)))
            else:  # a flat index appends: removing the stale rows afterwards leaves the rows in the same order
                index.add(ids, vectors[level])
        if token_rows is not None:
            self.token_rows = self.token_rows if self.token_rows is not None else []
            self.token_rows.extend(token_rows)
        self.token_ids += [c.id for c in chunks.get(FINEST, ())]

    def remove(self, doc_ids: Sequence[str]) -> None:
        """Leave the base's documents `doc_ids` out."""
        self._replace(doc_ids)
        self.catalog.commit()

    def _replace(self, doc_ids: Sequence[str]) -> None:
        if self.base is not None:
            for level, ids in self.base.catalog.chunk_ids_of_documents(doc_ids).items():
                self.stale[level] += ids
        self.catalog.delete_documents(doc_ids)

    def finish(self, progress: Progress) -> dict[str, int]:
        """Write the vector, BM25 and token-vector files; the generation's counts."""
        catalog = self.catalog
        try:
            catalog.fill_languages(detect_language)  # documents carried from a catalog older than languages
            languages = catalog.languages()
            for level in LEVELS:
                index = self.indexes.pop(level)
                index.remove(np.asarray(self.stale[level], dtype=np.int64))
                pending = self.pending.pop(level)
                if pending:  # in one piece: see `pending`
                    index.add(np.concatenate([ids for ids, _ in pending]), np.concatenate([v for _, v in pending]))
                index.write(self.folder / vector_file(level))
                progress.level_written(level, len(index))
                del index
                level_chunks = catalog.chunks_of_level(level)
                lexical = LexicalIndex.build(
                    [c.id for c in level_chunks],
                    [c.text for c in level_chunks],
                    languages=[languages.get(c.doc_id) or UNDETERMINED for c in level_chunks],
                )
                del level_chunks
                lexical.write(self.folder / lexical_file(level))
            write_token_vectors(
                self.folder, self.base, self.stale[FINEST], self.token_ids, self.token_rows, self.projection
            )
            counts: dict[str, int] = {level: catalog.level_counts().get(level, 0) for level in LEVELS}
            counts["documents"] = catalog.count_documents()
        finally:
            catalog.close()
        return counts

    def close(self) -> None:
        """Let go of the catalog of a build that stops before `finish`."""
        self.catalog.close()


def write_indexes(
    folder: Path,
    base: Snapshot | None,
    documents: Sequence[tuple[DocumentInfo, str]],
    removed: Sequence[str],
    chunks: dict[Level, list[Chunk]],
    vectors: dict[Level, np.ndarray],
    dimension: int,
    progress: Progress,
    token_rows: list[np.ndarray] | None = None,
    projection: np.ndarray | None = None,
    outlines: Mapping[str, Outline] | None = None,
) -> dict[str, int]:
    """Write a generation's catalog and indexes: the base's, without the chunks of the replaced and `removed`
    documents, with `documents` (info and text) and their `chunks`, `vectors` and `outlines` (by doc id; a document
    without one has no structure); token vectors where the base has them or `token_rows` (int8, per finest chunk
    of `chunks`) are given. Returns the generation's counts."""
    builder = GenerationBuilder(folder, base, dimension, projection)
    try:
        builder.remove(removed)
        if documents:
            builder.add(documents, chunks, vectors, token_rows, outlines)
    except BaseException:
        builder.close()
        raise
    return builder.finish(progress)


def write_token_vectors(
    folder: Path,
    base: Snapshot | None,
    stale: Sequence[int],
    sentence_ids: Sequence[int],
    rows: list[np.ndarray] | None,
    projection: np.ndarray | None,
) -> None:
    """The base's token vectors without the stale sentences, with the new ones; nothing for a store without."""
    stored = base.token_vectors if base is not None else None
    if stored is None and rows is None:
        return
    if sentence_ids and (rows is None or len(rows) != len(sentence_ids)):
        raise ValueError("token vectors are kept for this store, but the new sentences came without them")
    current = stored if stored is not None else TokenVectors.empty(projection)  # type: ignore[arg-type]
    current.updated(stale, list(sentence_ids), rows or []).write(folder)
