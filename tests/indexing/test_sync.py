"""The library sync's core with the fake embedder: each run indexes exactly what changed in the folders, a quiet
batch of temporary or unsupported files runs nothing, a busy store is retried, a missing folder removes nothing,
and the watch loop picks up a file written into a watched folder."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.indexing.sync import LibraryFilter, LibrarySync, SyncPass
from granrag_mcp.settings import Settings
from granrag_mcp.store.store import Snapshot
from granrag_mcp.store.writer import StoreWriter
from tests.fakes import FakeEmbedder
from tests.helpers import SMALL_CHUNKS, TOPICS, write_corpus


def settings_for(tmp_path: Path, *folders: Path, **extra: object) -> Settings:
    return Settings(
        store=tmp_path / "store",
        model="fake-hash-embedder",
        library=folders,
        graph=False,
        **SMALL_CHUNKS.model_dump(),
        **extra,  # type: ignore[arg-type]
    )


@contextmanager
def watching(sync: LibrarySync, stop: threading.Event, first_within: float = 30.0) -> Iterator[list[SyncPass]]:
    """`sync.run` on its own thread for the block, entered once its first pass is reported (or `first_within`
    seconds have gone); the passes so far, growing. The block's end stops the watch and waits for it."""
    passes: list[SyncPass] = []
    thread = threading.Thread(target=sync.run, args=(passes.append,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + first_within
        while not passes and time.monotonic() < deadline:
            time.sleep(0.05)
        yield passes
    finally:
        stop.set()
        thread.join(10)


def stored(store: Path) -> dict[str, str]:
    snapshot = Snapshot.open(store)
    try:
        return snapshot.catalog.content_hashes()
    finally:
        snapshot.close()


@pytest.fixture
def library(tmp_path: Path) -> tuple[LibrarySync, FakeEmbedder, Path]:
    folder = write_corpus(tmp_path / "notes")
    embedder = FakeEmbedder()
    return LibrarySync(settings_for(tmp_path, folder), lambda: embedder), embedder, folder


def test_each_run_indexes_what_changed_and_only_that(library) -> None:
    sync, embedder, folder = library
    first = sync.sync()
    assert first.committed and first.summary is not None and first.summary.added == len(TOPICS)
    assert sync.sync().outcome == "unchanged" and sync.sync().summary is None  # nothing changed: no run at all

    embedded = embedder.texts_embedded
    (folder / "cooking.txt").write_text("Simmer the tomato sauce slowly. Season it with basil.", encoding="utf-8")
    (folder / "new.md").write_text("The glacier carved a deep valley. Moraines mark its edge.", encoding="utf-8")
    (folder / "astronomy.md").rename(folder / "notes" / "stars.md")
    (folder / "notes" / "sailing.md").unlink()
    changed = sync.sync()
    assert changed.committed and changed.summary is not None
    summary = changed.summary
    assert (summary.added, summary.updated, summary.removed, summary.unchanged) == (2, 1, 2, 0)
    assert set(stored(sync.settings.store)) == {"cooking.txt", "new.md", "notes/stars.md"}
    # The unchanged text was not embedded again: only the three changed documents' sentences were.
    new_texts = embedder.texts[embedded:]
    assert any("tomato" in t for t in new_texts) and not any("sourdough" in t for t in new_texts)


def test_a_batch_of_temporary_or_unsupported_files_runs_nothing(library) -> None:
    sync, _, folder = library
    generation = sync.sync().summary.generation  # type: ignore[union-attr]
    (folder / "cooking.txt.swp").write_bytes(b"\0swap")
    (folder / "picture.svg").write_bytes(b"<svg/>")
    (folder / ".hidden.md").write_text("Hidden notes are skipped.", encoding="utf-8")
    result = sync.sync()
    assert result.outcome == "unchanged" and result.summary is None
    assert Snapshot.open(sync.settings.store).generation == generation


def test_deleting_every_file_empties_the_library(library) -> None:
    sync, _, folder = library
    sync.sync()
    for path in [p for p in folder.rglob("*") if p.is_file()]:
        path.unlink()
    result = sync.sync()
    assert result.committed and result.summary is not None and result.summary.removed == len(TOPICS)
    assert stored(sync.settings.store) == {}
    (folder / "back.md").write_text("The kettle whistled on the stove.", encoding="utf-8")
    assert sync.sync().committed and set(stored(sync.settings.store)) == {"back.md"}


def test_a_missing_folder_removes_nothing(library, tmp_path: Path) -> None:
    sync, _, folder = library
    sync.sync()
    folder.rename(tmp_path / "unmounted")
    assert sync.sync().outcome == "skipped"
    assert set(stored(sync.settings.store)) == set(TOPICS)


def test_a_busy_store_is_an_outcome_and_the_next_run_catches_up(library) -> None:
    sync, _, folder = library
    sync.sync()
    (folder / "late.md").write_text("The lantern glowed in the quarry.", encoding="utf-8")
    with StoreWriter(sync.settings.store):  # another writer holds the store
        busy = sync.sync()
    assert busy.outcome == "busy" and "index busy" in busy.message
    assert sync.sync().committed and "late.md" in stored(sync.settings.store)


def test_a_folder_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="missing"):
        LibrarySync(settings_for(tmp_path, tmp_path / "nowhere"), FakeEmbedder)
    with pytest.raises(InvalidInputError, match="--library"):
        LibrarySync(settings_for(tmp_path), FakeEmbedder)


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("notes/plan.md", True),
        ("notes", True),  # a folder moved or deleted
        ("notes/.plan.md.swp", False),
        ("notes/plan.md~", False),
        ("notes/#plan.md#", False),
        ("notes/~$report.md", False),
        ("notes/4913", False),
        ("notes/download.pdf.crdownload", False),
        (".git/index", False),
        ("store/gen-000002/catalog.sqlite", False),
    ],
)
def test_the_filter_skips_temporary_hidden_and_store_paths(tmp_path: Path, name: str, wanted: bool) -> None:
    folder = tmp_path / "library"
    watch_filter = LibraryFilter([folder], [folder / "store"])
    assert watch_filter(None, str(folder / name)) is wanted
    assert watch_filter(None, str(tmp_path / "elsewhere.md")) is False


def test_the_watch_indexes_a_file_once_it_settles_and_stops_when_asked(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    stop = threading.Event()
    sync = LibrarySync(settings_for(tmp_path, folder, library_settle=0.5), FakeEmbedder, stop)
    passes: list[SyncPass] = []
    thread = threading.Thread(target=sync.run, args=(passes.append,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not passes and time.monotonic() < deadline:
        time.sleep(0.05)
    assert passes and passes[0].committed
    time.sleep(0.3)  # the watch starts after the first run
    path = folder / "written.md"
    with path.open("w", encoding="utf-8") as stream:  # written in pieces, as a slow save is
        for word in ["The falcon ", "circled the ", "meadow at noon."]:
            stream.write(word)
            stream.flush()
            time.sleep(0.05)
    while "written.md" not in stored(sync.settings.store) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    committed = [p for p in passes if p.committed]
    assert len(committed) == 2 and committed[1].summary is not None and committed[1].summary.added == 1
    snapshot = Snapshot.open(sync.settings.store)
    try:
        assert snapshot.catalog.document_text("written.md") == "The falcon circled the meadow at noon."
    finally:
        snapshot.close()


def test_two_syncs_on_one_store_commit_each_change_once(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    stop = threading.Event()
    passes: list[SyncPass] = []
    syncs = [LibrarySync(settings_for(tmp_path, folder, library_settle=0.5), FakeEmbedder, stop) for _ in range(2)]
    threads = [threading.Thread(target=s.run, args=(passes.append,), daemon=True) for s in syncs]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(passes) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    (folder / "shared.md").write_text("Both servers see the comet over the quarry.", encoding="utf-8")
    while "shared.md" not in stored(tmp_path / "store") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(6)  # past a busy run's retry
    stop.set()
    for thread in threads:
        thread.join(10)
    added = [p.summary.added for p in passes if p.committed and p.summary is not None]
    assert sorted(added) == [1, len(TOPICS)], [p.message for p in passes]  # the folder once, the new file once


def test_a_folder_removed_and_put_back_is_watched_again(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    stop = threading.Event()
    passes: list[SyncPass] = []
    sync = LibrarySync(settings_for(tmp_path, folder, library_settle=0.5), FakeEmbedder, stop)
    thread = threading.Thread(target=sync.run, args=(passes.append,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 40
    while not passes and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    folder.rename(tmp_path / "away")  # an unmounted disk: nothing is removed
    while not any(p.outcome == "skipped" for p in passes) and time.monotonic() < deadline:
        time.sleep(0.05)
    (tmp_path / "away").rename(folder)
    time.sleep(7)  # the watch is set up again within a retry interval
    (folder / "after.md").write_text("The violin lay in the orchard.", encoding="utf-8")
    while "after.md" not in stored(tmp_path / "store") and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    thread.join(10)
    assert set(stored(tmp_path / "store")) == {*TOPICS, "after.md"}
