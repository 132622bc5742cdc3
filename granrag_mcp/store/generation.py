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

    def open_catalog(self) -> Catalog:
        """The catalog written so far, read-only."""
        return Catalog.open_readonly(self.folder / CATALOG_FILE)

    def read_vectors(self, level: Level) -> VectorIndex:
        """The vector index of `level` written so far."""
        return VectorIndex.read(self.folder / vector_file(level))


@contextmanager
def new_generation(writer: StoreWriter, base: Snapshot | None = None) -> Iterator[Draft]:
    """A new generation folder, numbered after every generation on disk (a rebuild too, so that the one `recover`
    falls back to is never replaced); it is removed again unless the body publishes it."""
    last, _ = writer.numbering()
    number = max(base.generation if base is not None else 0, last) + 1
    with writer.committing(number):
        draft = Draft(writer, number, writer.new_folder(number))
        yield draft
        if draft.published is None:
            raise RuntimeError(f"generation {number} was written but not published")


def first_free_chunk_id(writer: StoreWriter, base: Snapshot | None) -> int:
    """The first chunk id of the next generation: after the base's, or after every id on disk for a rebuild, so an
    old id never names a new chunk."""
    return base.manifest.next_chunk_id if base is not None else writer.numbering()[1]


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
    replaced_docs = [info.doc_id for info, _ in documents] + list(removed)
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
        for info, text in documents:
            catalog.insert_document(info, text, by_doc.get(info.doc_id, []), (outlines or {}).get(info.doc_id, EMPTY))
        catalog.commit()
        for level in LEVELS:
            index = VectorIndex.read(base.folder / vector_file(level)) if base else VectorIndex.empty(dimension)
            index.remove(np.asarray(stale_ids[level], dtype=np.int64))
            if chunks[level]:
                index.add(np.array([c.id for c in chunks[level]], dtype=np.int64), vectors[level])
            index.write(folder / vector_file(level))
            progress.level_written(level, len(index))
            level_chunks = catalog.chunks_of_level(level)
            lexical = LexicalIndex.build([c.id for c in level_chunks], [c.text for c in level_chunks])
            lexical.write(folder / lexical_file(level))
        write_token_vectors(folder, base, stale_ids[FINEST], chunks[FINEST], token_rows, projection)
        counts: dict[str, int] = {level: catalog.level_counts().get(level, 0) for level in LEVELS}
        counts["documents"] = catalog.count_documents()
    finally:
        catalog.close()
    return counts


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
