"""Documents and chunk metadata in SQLite. A committed generation's database is opened read-only and immutable."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from granrag_mcp.levels import Level
from granrag_mcp.outline import EMPTY, Outline, Section
from granrag_mcp.records import Chunk

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    n_chars INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL,
    language TEXT
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
CREATE TABLE IF NOT EXISTS sections (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id),
    seq INTEGER NOT NULL,
    start INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    title TEXT NOT NULL,
    n_tokens INTEGER NOT NULL,
    PRIMARY KEY (doc_id, seq)
);
CREATE TABLE IF NOT EXISTS pages (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id),
    page INTEGER NOT NULL,
    start INTEGER NOT NULL,
    PRIMARY KEY (doc_id, page)
);
"""
_OUTLINE_TABLES = ("sections", "pages")
"""Tables a catalog written before documents kept their outline lacks: read as documents without structure."""
_LANGUAGE_COLUMN = "language"
"""A column a catalog written before languages were told lacks: its documents' language is unknown (None) until
the next index run tells it (`fill_languages`)."""
_CHUNK_COLUMNS = 'id, doc_id, level, seq, start, "end", token_count, parent_id, text'
_MAX_PARAMS = 900
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    doc_id: str
    content_hash: str
    source: str
    n_chars: int
    n_tokens: int
    language: str | None = None
    """ISO 639-1 code ("en", "zh"), "und" when it could not be told, None in a catalog older than languages."""


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
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self.has_outlines = all(name in tables for name in _OUTLINE_TABLES)
        columns = {row[1] for row in connection.execute("PRAGMA table_info(documents)")}
        self.has_languages = _LANGUAGE_COLUMN in columns

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
        if _LANGUAGE_COLUMN not in {row[1] for row in db.execute("PRAGMA table_info(documents)")}:
            db.execute(f"ALTER TABLE documents ADD COLUMN {_LANGUAGE_COLUMN} TEXT")  # a base written before it
        return cls(db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # --- reads -------------------------------------------------------------------------------------------------

    def documents(
        self, prefix: str | None = None, limit: int = -1, offset: int = 0, language: str | None = None
    ) -> list[DocumentInfo]:
        language_column = _LANGUAGE_COLUMN if self.has_languages else "NULL"
        sql = f"SELECT doc_id, content_hash, source, n_chars, n_tokens, {language_column} FROM documents WHERE 1"
        params: list = []
        if prefix:
            sql += " AND substr(doc_id, 1, ?) = ?"
            params += [len(prefix), prefix]
        if language:
            sql += f" AND {language_column} = ?"
            params.append(language)
        sql += " ORDER BY doc_id LIMIT ? OFFSET ?"
        return [DocumentInfo(*row) for row in self._query(sql, [*params, limit, offset])]

    def count_documents(self, prefix: str | None = None, language: str | None = None) -> int:
        sql, params = "SELECT count(*) FROM documents WHERE 1", []
        if prefix:
            sql += " AND substr(doc_id, 1, ?) = ?"
            params += [len(prefix), prefix]
        if language:
            sql += f" AND {_LANGUAGE_COLUMN if self.has_languages else 'NULL'} = ?"
            params.append(language)
        return self._query(sql, params)[0][0]

    def languages(self, doc_ids: Sequence[str] | None = None) -> dict[str, str | None]:
        """Each document's language (None where the catalog is older than languages): of `doc_ids`, or all."""
        if not self.has_languages:
            names = doc_ids if doc_ids is not None else [r[0] for r in self._query("SELECT doc_id FROM documents")]
            return dict.fromkeys(names)
        if doc_ids is None:
            return dict(self._query(f"SELECT doc_id, {_LANGUAGE_COLUMN} FROM documents"))
        found: dict[str, str | None] = {}
        for batch in _batches(list(doc_ids)):
            marks = ",".join("?" * len(batch))
            sql = f"SELECT doc_id, {_LANGUAGE_COLUMN} FROM documents WHERE doc_id IN ({marks})"
            found.update(self._query(sql, batch))
        return found

    def language_counts(self) -> dict[str, int]:
        """How many documents each language has ("unknown" for documents of a catalog older than languages)."""
        if not self.has_languages:
            return {"unknown": self.count_documents()} if self.count_documents() else {}
        rows = self._query(f"SELECT coalesce({_LANGUAGE_COLUMN}, 'unknown'), count(*) FROM documents GROUP BY 1")
        return dict(sorted(rows, key=lambda row: (-row[1], row[0])))

    def document_text(self, doc_id: str) -> str | None:
        rows = self._query("SELECT text FROM documents WHERE doc_id = ?", [doc_id])
        return rows[0][0] if rows else None

    def document_slice(self, doc_id: str, start: int, end: int) -> str | None:
        """`document_text(doc_id)[start:end]`, cut by SQLite (which counts characters as Python does), so a
        window does not read its whole document."""
        sql = "SELECT substr(text, ?, ?) FROM documents WHERE doc_id = ?"
        rows = self._query(sql, [start + 1, max(end - start, 0), doc_id])
        return rows[0][0] if rows else None

    def outlines(self, doc_ids: Sequence[str]) -> dict[str, Outline]:
        """Each document's outline (sections and page starts); an empty one for a document without structure,
        or for every document of a catalog written before outlines were kept."""
        found = {doc_id: EMPTY for doc_id in doc_ids}
        if not self.has_outlines:
            return found
        sections: dict[str, list[tuple[Section, int]]] = {}
        pages: dict[str, list[int]] = {}
        for batch in _batches(list(dict.fromkeys(doc_ids))):
            marks = ",".join("?" * len(batch))
            sql = f"SELECT doc_id, start, depth, title, n_tokens FROM sections WHERE doc_id IN ({marks}) ORDER BY seq"
            for doc_id, start, depth, title, n_tokens in self._query(sql, batch):
                sections.setdefault(doc_id, []).append((Section(start, depth, title), n_tokens))
            sql = f"SELECT doc_id, start FROM pages WHERE doc_id IN ({marks}) ORDER BY page"
            for doc_id, start in self._query(sql, batch):
                pages.setdefault(doc_id, []).append(start)
        for doc_id in sections.keys() | pages.keys():
            mine = sections.get(doc_id, [])
            found[doc_id] = Outline(tuple(s for s, _ in mine), tuple(pages.get(doc_id, [])), tuple(n for _, n in mine))
        return found

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

    def level_texts(self, level: Level, batch: int = 5_000) -> Iterator[tuple[int, str, str]]:
        """(id, doc_id, text) of every chunk of `level` in id order, read `batch` rows at a time, so a pass over
        a large store's sentences holds one batch of texts and no more."""
        after = -1
        while True:
            sql = "SELECT id, doc_id, text FROM chunks WHERE level = ? AND id > ? ORDER BY id LIMIT ?"
            rows = self._query(sql, [level, after, batch])
            yield from rows
            if len(rows) < batch:
                return
            after = rows[-1][0]

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

    def positions(self, doc_id: str, level: Level) -> list[tuple[int, int, int]]:
        """(id, start, end) of a document's chunks of one level in reading order (seq), without reading their
        texts out; the start skips the chunk's leading whitespace, so a chunk cut just before a heading counts
        as starting at it."""
        sql = (
            'SELECT id, start + length(text) - length(ltrim(text, char(32, 9, 10, 11, 12, 13))), "end" '
            "FROM chunks WHERE doc_id = ? AND level = ? ORDER BY seq"
        )
        return [(row[0], row[1], row[2]) for row in self._query(sql, [doc_id, level])]

    def children(self, parent_ids: Sequence[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {pid: [] for pid in parent_ids}
        for batch in _batches(list(out)):  # each parent once: one repeated in two batches would get its children twice
            marks = ",".join("?" * len(batch))
            sql = f"SELECT parent_id, id FROM chunks WHERE parent_id IN ({marks}) ORDER BY seq"
            for parent_id, chunk_id in self._query(sql, batch):
                out[parent_id].append(chunk_id)
        return out

    def chunk_ids_in_documents(
        self, level: Level, doc_ids: Sequence[str] | None, prefix: str | None, language: str | None = None
    ) -> list[int]:
        """Ids of the `level` chunks of the documents named in `doc_ids` (all when None) whose doc_id starts with
        `prefix` (any when None) and that are written in `language` (any when None)."""
        sql = "SELECT id FROM chunks WHERE level = ?"
        params: list[object] = [level]
        if prefix:
            sql += " AND substr(doc_id, 1, ?) = ?"
            params += [len(prefix), prefix]
        if language:
            column = _LANGUAGE_COLUMN if self.has_languages else "NULL"
            sql += f" AND doc_id IN (SELECT doc_id FROM documents WHERE {column} = ?)"
            params.append(language)
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
                for table in _OUTLINE_TABLES:
                    self._db.execute(f"DELETE FROM {table} WHERE doc_id IN ({marks})", batch)
                self._db.execute(f"DELETE FROM documents WHERE doc_id IN ({marks})", batch)

    def insert_document(self, info: DocumentInfo, text: str, chunks: Sequence[Chunk], outline: Outline = EMPTY) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO documents (doc_id, content_hash, source, text, n_chars, n_tokens, language)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (info.doc_id, info.content_hash, info.source, text, info.n_chars, info.n_tokens, info.language),
            )
            self._db.executemany(
                f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(c.id, c.doc_id, c.level, c.seq, c.start, c.end, c.token_count, c.parent_id, c.text) for c in chunks],
            )
            tokens = outline.tokens or (0,) * len(outline.sections)
            self._db.executemany(
                "INSERT INTO sections VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (info.doc_id, n, s.start, s.level, s.title, t)
                    for n, (s, t) in enumerate(zip(outline.sections, tokens, strict=True))
                ],
            )
            self._db.executemany(
                "INSERT INTO pages VALUES (?, ?, ?)",
                [(info.doc_id, n, start) for n, start in enumerate(outline.page_starts, 1)],
            )

    def fill_languages(self, detect: Callable[[str], str]) -> int:
        """Tell the language of every document that has none (carried from a catalog older than languages) by
        `detect` on its text; how many were told."""
        missing = [row[0] for row in self._query(f"SELECT doc_id FROM documents WHERE {_LANGUAGE_COLUMN} IS NULL")]
        for batch in _batches(missing, 100):  # a hundred texts in memory at a time
            marks = ",".join("?" * len(batch))
            rows = self._query(f"SELECT doc_id, text FROM documents WHERE doc_id IN ({marks})", batch)
            with self._lock:
                self._db.executemany(
                    f"UPDATE documents SET {_LANGUAGE_COLUMN} = ? WHERE doc_id = ?",
                    [(detect(text), doc_id) for doc_id, text in rows],
                )
        return len(missing)

    def commit(self) -> None:
        with self._lock:
            self._db.commit()


class RememberingCatalog(Catalog):
    """A committed or fully written generation's catalog that keeps every chunk, hierarchy entry and child list
    it reads, for one run of many overlapping reads (the ranking adaptation's pseudo-queries read the same chunks
    and parents again and again). Its answers are the plain catalog's, in the same order; it shares that
    catalog's connection and lock, and closing either closes both. Nothing may write the generation meanwhile, and
    one thread uses it (its memory takes no lock)."""

    def __init__(self, catalog: Catalog) -> None:
        self._db, self._lock, self.has_outlines = catalog._db, catalog._lock, catalog.has_outlines
        self.has_languages = catalog.has_languages
        self._chunks: dict[int, Chunk | None] = {}
        self._outline: dict[int, tuple[Level, int | None] | None] = {}
        self._children: dict[int, list[int]] = {}

    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        return _remembered(self._chunks, ids, super().chunks)

    def outline(self, ids: Sequence[int]) -> dict[int, tuple[Level, int | None]]:
        return _remembered(self._outline, ids, super().outline)

    def children(self, parent_ids: Sequence[int]) -> dict[int, list[int]]:
        missing = [pid for pid in dict.fromkeys(parent_ids) if pid not in self._children]
        if missing:
            self._children.update(super().children(missing))
        return {pid: list(self._children[pid]) for pid in parent_ids}


def _remembered(
    memo: dict[int, T | None], ids: Sequence[int], read: Callable[[list[int]], Mapping[int, T]]
) -> dict[int, T]:
    """`read(ids)` through `memo` (id -> value, None for an unknown id): only ids not asked before reach the
    database, and the result keeps the order SQLite gives, ascending ids within each batch of `_MAX_PARAMS`."""
    ids = list(ids)
    missing = [i for i in dict.fromkeys(ids) if i not in memo]
    if missing:
        found = read(missing)
        memo.update({i: found.get(i) for i in missing})
    out: dict[int, T] = {}
    for batch in _batches(ids):
        for i in sorted(set(batch)):
            value = memo[i]
            if value is not None:
                out.setdefault(i, value)
    return out
