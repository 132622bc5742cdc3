"""A catalog that remembers what it read answers exactly as the plain one, in the same order, and asks SQLite only
for what it has not read before."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from granrag_mcp.records import Chunk
from granrag_mcp.store.catalog import Catalog, DocumentInfo, RememberingCatalog

BROADS, MIDS_PER_BROAD, NARROWS_PER_MID = 3, 4, 5


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """Two documents, each a three-level hierarchy of chunks, ids 1.. with gaps (unknown ids exist)."""
    db = Catalog.open_writable(tmp_path / "catalog.sqlite")
    next_id = 1
    for doc in ("a.txt", "b.txt"):
        chunks: list[Chunk] = []
        for b in range(BROADS):
            broad = next_id
            chunks.append(Chunk(broad, doc, "broad", b, 0, 1, 1, None, f"broad {b}"))
            next_id += 2
            for m in range(MIDS_PER_BROAD):
                mid = next_id
                chunks.append(Chunk(mid, doc, "mid", b * MIDS_PER_BROAD + m, 0, 1, 1, broad, f"mid {m}"))
                next_id += 2
                for n in range(NARROWS_PER_MID):
                    seq = (b * MIDS_PER_BROAD + m) * NARROWS_PER_MID + n
                    chunks.append(Chunk(next_id, doc, "narrow", seq, 0, 1, 1, mid, f"sentence {seq}"))
                    next_id += 2
        db.insert_document(DocumentInfo(doc, "hash", doc, 1, 1), "text", chunks)
    db.commit()
    return db


def test_every_read_matches_the_plain_catalog_in_content_and_order(catalog: Catalog) -> None:
    remembering = RememberingCatalog(catalog)
    rng = random.Random(3)
    top = 2 * 2 * BROADS * (1 + MIDS_PER_BROAD * (1 + NARROWS_PER_MID)) + 5  # beyond the last id: unknown ids too
    for size in (1, 5, 40, 1200):  # 1200 spans two of SQLite's parameter batches
        for _ in range(5):
            ids = [rng.randrange(top) for _ in range(size)]
            assert list(remembering.chunks(ids).items()) == list(catalog.chunks(ids).items())
            assert list(remembering.outline(ids).items()) == list(catalog.outline(ids).items())
            assert list(remembering.children(ids).items()) == list(catalog.children(ids).items())


def test_a_second_read_of_the_same_ids_asks_sqlite_nothing(catalog: Catalog) -> None:
    remembering = RememberingCatalog(catalog)
    statements: list[str] = []
    catalog._db.set_trace_callback(statements.append)  # every SQL statement run, parameters filled in
    ids = [1, 3, 5, 7, 9, 2]  # 2 is no chunk
    first = (remembering.chunks(ids), remembering.outline(ids), remembering.children(ids))
    asked = len(statements)
    assert asked == 3
    assert (remembering.chunks(ids[::-1]), remembering.outline(ids), remembering.children(ids)) == first
    assert len(statements) == asked
    remembering.chunks([*ids, 11])  # only the new id is read
    assert len(statements) == asked + 1 and statements[-1].endswith("IN (11)")


def test_a_returned_child_list_can_be_changed_without_changing_what_is_remembered(catalog: Catalog) -> None:
    remembering = RememberingCatalog(catalog)
    children = remembering.children([1])[1]
    children.clear()
    assert remembering.children([1])[1] == catalog.children([1])[1] != []
