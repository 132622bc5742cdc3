"""The one commit of a generation: numbering, a folder removed unless published, the base's files shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from granrag_mcp.errors import StoreWriteError
from granrag_mcp.store.generation import first_free_chunk_id, new_generation
from granrag_mcp.store.store import RANKER_FILE, TMP_PREFIX, Snapshot, read_current
from granrag_mcp.store.writer import StoreWriter
from tests.helpers import index, write_corpus


@pytest.fixture
def store(tmp_path: Path) -> Path:
    index(write_corpus(tmp_path / "docs"), tmp_path / "store")
    return tmp_path / "store"


def test_a_generation_with_the_base_files_and_a_new_one_is_published_as_current(store: Path) -> None:
    base = Snapshot.open(store)
    try:
        with StoreWriter(store) as writer, new_generation(writer, base) as draft:
            assert draft.number == base.generation + 1
            draft.share(base.folder, base.manifest.files, leave_out=[RANKER_FILE])
            (draft.folder / RANKER_FILE).write_text("{}", encoding="utf-8")
            final = draft.publish(base.manifest.identity, base.manifest.counts, base.manifest.next_chunk_id)
    finally:
        base.close()
    assert read_current(store).generation == final.name  # type: ignore[union-attr]
    published = Snapshot.open(store)
    try:
        assert published.generation == base.generation + 1
        assert set(published.manifest.files) == set(base.manifest.files) | {RANKER_FILE}
        assert published.manifest.next_chunk_id == base.manifest.next_chunk_id
        assert os.path.samefile(published.folder / "catalog.sqlite", base.folder / "catalog.sqlite")  # linked
    finally:
        published.close()


def test_a_failure_while_writing_removes_the_folder_and_keeps_the_current_generation(store: Path) -> None:
    before = read_current(store)
    with pytest.raises(StoreWriteError, match="could not commit generation 2"):
        with StoreWriter(store) as writer, new_generation(writer) as draft:
            (draft.folder / "part").write_bytes(b"half")
            raise OSError(28, "No space left on device")
    assert read_current(store) == before
    assert not list(store.glob(f"{TMP_PREFIX}*")) and not (store / "gen-000002").exists()


def test_a_generation_never_published_is_removed_and_reported(store: Path) -> None:
    with pytest.raises(StoreWriteError, match="written but not published"):
        with StoreWriter(store) as writer, new_generation(writer) as draft:
            (draft.folder / "part").write_bytes(b"complete but forgotten")
    assert not list(store.glob(f"{TMP_PREFIX}*"))


def test_numbering_follows_every_generation_on_disk_and_ids_follow_the_base(store: Path) -> None:
    (store / "gen-000007").mkdir()  # say, a generation published but never made current
    base = Snapshot.open(store)
    try:
        with StoreWriter(store) as writer:
            with pytest.raises(StoreWriteError):
                with new_generation(writer, base) as draft:
                    assert draft.number == 8
                    raise OSError(5, "Input/output error")
            assert first_free_chunk_id(writer, base) == base.manifest.next_chunk_id
            assert first_free_chunk_id(writer, None) == base.manifest.next_chunk_id  # a rebuild never reuses ids
    finally:
        base.close()
