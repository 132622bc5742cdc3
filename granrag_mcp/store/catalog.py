"""Documents and chunk metadata in SQLite. A committed generation's database is opened read-only and immutable."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from granrag_mcp.levels import Level
from granrag_mcp.records import Chunk

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    n_chars INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id),
    level TEXT NOT NULL,
    seq INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    parent_id INTEGER,
    text TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS chunks_position ON chunks(doc_id, level, seq);
CREATE INDEX IF NOT EXISTS chunks_parent ON chunks(parent_id);
"""
_CHUNK_COLUMNS = 'id, doc_id, level, seq, start, "end", token_count, parent_id, text'
_MAX_PARAMS = 900


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    doc_id: str
    content_hash: str
    source: str
    n_chars: int
    n_tokens: int


def _chunk(row: tuple) -> Chunk:
    return Chunk(*row)


def _batches(values: Sequence, size: int = _MAX_PARAMS) -> Iterable[Sequence]:
    for begin in range(0, len(values), size):
        yield values[begin : begin + size]


class Catalog:
    """Thread-safe access to one generation's database."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection
        self._lock = threading.Lock()

    @classmethod
    def open_readonly(cls, path: Path) -> Catalog:
        uri = f"file:{path}?mode=ro&immutable=1"
        return cls(sqlite3.connect(uri, uri=True, check_same_thread=False))

    @classmethod
    def open_writable(cls, path: Path) -> Catalog:
        db = sqlite3.connect(path, check_same_thread=False)
        db.execute("PRAGMA journal_mode=OFF")  # a crashed build is thrown away whole; durability comes from fsync
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(_SCHEMA)
        return cls(db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # --- reads -------------------------------------------------------------------------------------------------

    def documents(self, prefix: str | None = None, limit: int = -1, offset: int = 0) -> list[DocumentInfo]:
        sql = "SELECT doc_id, content_hash, source, n_chars, n_tokens FROM documents"
        params: list = []
        if prefix:
            sql += " WHERE substr(doc_id, 1, ?) = ?"
            params += [len(prefix), prefix]
        sql += " ORDER BY doc_id LIMIT ? OFFSET ?"
        return [DocumentInfo(*row) for row in self._query(sql, [*params, limit, offset])]

    def count_documents(self, prefix: str | None = None) -> int:
        if prefix:
            return self._query("SELECT count(*) FROM documents WHERE substr(doc_id, 1, ?) = ?", [len(prefix), prefix])[
                0
            ][0]
        return self._query("SELECT count(*) FROM documents")[0][0]

    def document_text(self, doc_id: str) -> str | None:
        rows = self._query("SELECT text FROM documents WHERE doc_id = ?", [doc_id])
        return rows[0][0] if rows else None

    def document_slice(self, doc_id: str, start: int, end: int) -> str | None:
        """`document_text(doc_id)[start:end]`, cut by SQLite (which counts characters as Python does), so a
        window does not read its whole document."""
        sql = "SELECT substr(text, ?, ?) FROM documents WHERE doc_id = ?"
        rows = self._query(sql, [start + 1, max(end - start, 0), doc_id])
        return rows[0][0] if rows else None

    def content_hashes(self) -> dict[str, str]:
        return dict(self._query("SELECT doc_id, content_hash FROM documents"))

    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        found: dict[int, Chunk] = {}
        for batch in _batches(list(ids)):
            marks = ",".join("?" * len(batch))
            for row in self._query(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", batch):
                found[row[0]] = _chunk(row)
        return found

    def outline(self, ids: Sequence[int]) -> dict[int, tuple[Level, int | None]]:
        """Level and parent id of each known chunk, without reading texts (cheap for the hierarchy walks)."""
        found: dict[int, tuple[Level, int | None]] = {}
        for batch in _batches(list(ids)):
            marks = ",".join("?" * len(batch))
            sql = f"SELECT id, level, parent_id FROM chunks WHERE id IN ({marks})"
            for chunk_id, level, parent_id in self._query(sql, batch):
                found[chunk_id] = (level, parent_id)
        return found

    def chunks_of_level(self, level: Level) -> list[Chunk]:
        return [
            _chunk(r) for r in self._query(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE level = ? ORDER BY id", [level])
        ]

    def chunk_ids_of_documents(self, doc_ids: Sequence[str]) -> dict[Level, list[int]]:
        out: dict[Level, list[int]] = {"broad": [], "mid": [], "narrow": []}
        for batch in _batches(list(doc_ids)):
            marks = ",".join("?" * len(batch))
            for chunk_id, level in self._query(f"SELECT id, level FROM chunks WHERE doc_id IN ({marks})", batch):
                out[level].append(chunk_id)
        return out

    def chunks_by_seq(self, doc_id: str, level: Level, first: int, last: int) -> list[Chunk]:
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE doc_id = ? AND level = ? AND seq BETWEEN ? AND ? ORDER BY seq"
        return [_chunk(r) for r in self._query(sql, [doc_id, level, first, last])]

    def children(self, parent_ids: Sequence[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {pid: [] for pid in parent_ids}
        for batch in _batches(list(parent_ids)):
            marks = ",".join("?" * len(batch))
            sql = f"SELECT parent_id, id FROM chunks WHERE parent_id IN ({marks}) ORDER BY seq"
            for parent_id, chunk_id in self._query(sql, batch):
                out[parent_id].append(chunk_id)
        return out

    def chunk_ids_in_documents(self, level: Level, doc_ids: Sequence[str] | None, prefix: str | None) -> list[int]:
        """Ids of the `level` chunks of the documents named in `doc_ids` (all when None) whose doc_id starts with
        `prefix` (any when None)."""
        sql = "SELECT id FROM chunks WHERE level = ?"
        params: list[object] = [level]
        if prefix:
            sql += " AND substr(doc_id, 1, ?) = ?"
            params += [len(prefix), prefix]
        if doc_ids is None:
            return [row[0] for row in self._query(sql, params)]
        found: list[int] = []
        for batch in _batches(list(doc_ids)):
            marks = ",".join("?" * len(batch))
            found += [row[0] for row in self._query(f"{sql} AND doc_id IN ({marks})", [*params, *batch])]
        return found

    def known_documents(self, doc_ids: Sequence[str]) -> set[str]:
        """Which of `doc_ids` the catalog holds."""
        known: set[str] = set()
        for batch in _batches(list(doc_ids)):
            marks = ",".join("?" * len(batch))
            known.update(
                row[0] for row in self._query(f"SELECT doc_id FROM documents WHERE doc_id IN ({marks})", batch)
            )
        return known

    def level_counts(self) -> dict[str, int]:
        return dict(self._query("SELECT level, count(*) FROM chunks GROUP BY level"))

    # --- writes (only on a generation being built) --------------------------------------------------------------

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        with self._lock:
            for batch in _batches(list(doc_ids)):
                marks = ",".join("?" * len(batch))
                self._db.execute(f"DELETE FROM chunks WHERE doc_id IN ({marks})", batch)
                self._db.execute(f"DELETE FROM documents WHERE doc_id IN ({marks})", batch)

    def insert_document(self, info: DocumentInfo, text: str, chunks: Sequence[Chunk]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
                (info.doc_id, info.content_hash, info.source, text, info.n_chars, info.n_tokens),
            )
            self._db.executemany(
                f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(c.id, c.doc_id, c.level, c.seq, c.start, c.end, c.token_count, c.parent_id, c.text) for c in chunks],
            )

    def commit(self) -> None:
        with self._lock:
            self._db.commit()
