"""Each document's outline in the catalog: stored with the generation, kept for unchanged documents, replaced
and removed with its document; a catalog written before outlines were kept reads as documents without one."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from granrag_mcp.indexing.formats.base import Section
from granrag_mcp.outline import EMPTY
from granrag_mcp.store.generation import new_generation
from granrag_mcp.store.store import CATALOG_FILE, Snapshot
from granrag_mcp.store.writer import StoreWriter
from tests.helpers import index
from tests.outlined import SUFFIX, build_report, register

HEADINGS = [(1, "Introduction"), (1, "Methods"), (2, "Sampling"), (2, "Statistical analysis"), (1, "Results")]


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    register(monkeypatch)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / f"report{SUFFIX}").write_text(build_report().source, encoding="utf-8")
    (folder / "note.txt").write_text("A note without headings. It has two sentences.", encoding="utf-8")
    return folder


def outlines(store: Path) -> dict:
    snapshot = Snapshot.open(store)
    try:
        return snapshot.catalog.outlines([f"report{SUFFIX}", "note.txt"])
    finally:
        snapshot.close()


def test_the_outline_is_stored_with_its_document(corpus: Path, tmp_path: Path) -> None:
    index(corpus, tmp_path / "store")
    found = outlines(tmp_path / "store")
    report = found[f"report{SUFFIX}"]
    text = (corpus / f"report{SUFFIX}").read_text(encoding="utf-8")
    assert [(s.level, s.title) for s in report.sections] == HEADINGS
    assert len(report.page_starts) == 4 and report.page_starts[0] == 0
    assert all(t > 0 for t in report.tokens) and report.tokens[1] > report.tokens[2] + report.tokens[3] - 5
    assert len(text) > report.sections[-1].start and found["note.txt"] is EMPTY


def test_unchanged_documents_keep_their_outline_and_changed_or_removed_ones_lose_the_old(
    corpus: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    index(corpus, store)
    (corpus / "note.txt").write_text("The note changed. Still no headings.", encoding="utf-8")
    index(corpus, store)
    assert [s.title for s in outlines(store)[f"report{SUFFIX}"].sections] == [t for _, t in HEADINGS]
    (corpus / f"report{SUFFIX}").write_text("# Only\nOne heading now.\n", encoding="utf-8")
    index(corpus, store)
    assert outlines(store)[f"report{SUFFIX}"].sections == (Section(0, 1, "Only"),)
    (corpus / f"report{SUFFIX}").unlink()
    index(corpus, store, prune=True)
    snapshot = Snapshot.open(store)
    snapshot.close()
    with sqlite3.connect(f"file:{snapshot.folder / CATALOG_FILE}?mode=ro", uri=True) as db:
        assert [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("sections", "pages")] == [0, 0]
    db.close()


def test_a_store_written_before_outlines_loads_without_them_and_gains_them(corpus: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    index(corpus, store)
    base = Snapshot.open(store)
    try:  # the current generation again, its catalog as an older granrag-mcp wrote it
        with StoreWriter(store) as writer, new_generation(writer, base) as draft:
            draft.share(base.folder, base.manifest.files, leave_out=[CATALOG_FILE])
            shutil.copyfile(base.folder / CATALOG_FILE, draft.folder / CATALOG_FILE)
            with sqlite3.connect(draft.folder / CATALOG_FILE) as db:
                db.executescript("DROP TABLE sections; DROP TABLE pages;")
            db.close()
            draft.publish(base.manifest.identity, base.manifest.counts, base.manifest.next_chunk_id)
    finally:
        base.close()
    assert outlines(store) == {f"report{SUFFIX}": EMPTY, "note.txt": EMPTY}
    (corpus / f"report{SUFFIX}").write_text(build_report().source + "\n# Appendix\nOne more part.\n", encoding="utf-8")
    index(corpus, store)
    assert [s.title for s in outlines(store)[f"report{SUFFIX}"].sections][-1] == "Appendix"


def test_a_levels_texts_are_read_in_batches_in_id_order_as_its_chunks(corpus: Path, tmp_path: Path) -> None:
    index(corpus, tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")
    try:
        chunks = snapshot.catalog.chunks_of_level("narrow")
        expected = [(c.id, c.doc_id, c.text) for c in chunks]
        assert len(expected) > 3
        for batch in (1, 2, len(expected), 1000):  # a batch ending exactly at the last row reads one empty batch
            assert list(snapshot.catalog.level_texts("narrow", batch=batch)) == expected
    finally:
        snapshot.close()
