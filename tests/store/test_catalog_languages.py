"""Each document's language in the catalog: written with the document, counted and filtered on, and told on the
next run for the documents of a catalog written before languages were kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from granrag_mcp.records import Chunk
from granrag_mcp.store.catalog import Catalog, DocumentInfo

OLD_SCHEMA = """
CREATE TABLE documents (doc_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, source TEXT NOT NULL,
    text TEXT NOT NULL, n_chars INTEGER NOT NULL, n_tokens INTEGER NOT NULL);
CREATE TABLE chunks (id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, level TEXT NOT NULL, seq INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, token_count INTEGER NOT NULL, parent_id INTEGER,
    text TEXT NOT NULL);
"""


def chunk(chunk_id: int, doc_id: str, text: str) -> Chunk:
    return Chunk(chunk_id, doc_id, "broad", 0, 0, len(text), 1, None, text)


def test_languages_are_stored_counted_and_filtered(tmp_path: Path) -> None:
    catalog = Catalog.open_writable(tmp_path / "c.sqlite")
    for n, (doc, text, language) in enumerate(
        [("a.txt", "The river.", "en"), ("b.txt", "河流。", "zh"), ("c.txt", "Rivers.", "en")]
    ):
        catalog.insert_document(DocumentInfo(doc, "h", doc, len(text), 1, language), text, [chunk(n, doc, text)])
    catalog.commit()
    assert catalog.has_languages
    assert catalog.languages() == {"a.txt": "en", "b.txt": "zh", "c.txt": "en"}
    assert catalog.language_counts() == {"en": 2, "zh": 1}
    assert [d.doc_id for d in catalog.documents(language="zh")] == ["b.txt"]
    assert catalog.documents(prefix="a")[0].language == "en"
    assert catalog.chunk_ids_in_documents("broad", None, None, language="en") == [0, 2]
    catalog.close()


def test_a_catalog_older_than_languages_reads_as_unknown_and_is_told_on_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO documents VALUES ('zh.txt', 'h', 'zh.txt', '这条河每年春天都会泛滥，农民种水稻。', 17, 9)")
    db.commit()
    db.close()

    old = Catalog.open_readonly(path)
    assert not old.has_languages
    assert old.languages() == {"zh.txt": None}
    assert old.documents()[0].language is None
    assert old.language_counts() == {"unknown": 1}
    assert old.documents(language="zh") == []
    old.close()

    draft = Catalog.open_writable(path)  # a new generation starts from a copy of its base's catalog
    assert draft.has_languages and draft.languages() == {"zh.txt": None}
    told = draft.fill_languages(lambda text: "zh" if "河" in text else "und")
    draft.commit()
    draft.close()
    assert told == 1
    again = Catalog.open_readonly(path)
    assert again.languages() == {"zh.txt": "zh"}
    again.close()
