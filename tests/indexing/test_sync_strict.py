"""The library sync is as strict as the index: no file reached through a link out of its folders is read, no
folder the index skips is watched, a file that can no longer be read leaves the index, and a file that cannot be
read (in time) is read once, not again on every other file's change."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from granrag_mcp.indexing.sync import LibrarySync
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import TOPICS, index, write_corpus
from tests.indexing.test_sync import settings_for, stored, watching
from tests.reliability.test_hostile_documents import wide_rows


def all_text(store: Path) -> str:
    snapshot = Snapshot.open(store)
    try:
        return " ".join(snapshot.catalog.document_text(doc_id) for doc_id in snapshot.catalog.content_hashes())
    finally:
        snapshot.close()


def test_a_link_out_of_the_library_is_never_read(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The vault code is nightingale.", encoding="utf-8")
    (folder / "leak.md").symlink_to(outside / "secret.md")
    (folder / "inner.md").symlink_to(folder / "cooking.txt")  # a link inside the library is read as usual
    sync = LibrarySync(settings_for(tmp_path, folder), FakeEmbedder)
    first = sync.sync()
    assert first.committed and first.summary is not None
    assert set(stored(sync.settings.store)) == {*TOPICS, "inner.md"}
    assert "nightingale" not in all_text(sync.settings.store)
    assert any("outside the allowed roots" in reason for _, reason in first.summary.failed)
    # A later change elsewhere does not read the link again (nor warn of it again).
    (folder / "new.md").write_text("The heron waited by the reeds.", encoding="utf-8")
    second = sync.sync()
    assert second.committed and second.summary is not None and not second.summary.failed
    assert "leak.md" not in stored(sync.settings.store)


def inotify_watches() -> int:
    """The inotify watches this process holds, from /proc."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                count += sum(line.startswith("inotify wd:") for line in info)
        except OSError:
            continue
    return count


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="counts inotify watches through /proc")
def test_the_watch_follows_no_folder_link_the_index_skips(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "one.md").write_text("The lighthouse keeper trimmed the wick.", encoding="utf-8")
    tree = tmp_path / "tree"
    for n in range(40):
        (tree / f"branch{n}" / "leaf").mkdir(parents=True)
        (tree / f"branch{n}" / "leaf" / "far.md").write_text("Nothing here may be indexed.", encoding="utf-8")
    (folder / "linked").symlink_to(tree, target_is_directory=True)
    (folder / ".git" / "objects").mkdir(parents=True)  # hidden: neither walked nor watched
    stop = threading.Event()
    sync = LibrarySync(settings_for(tmp_path, folder, library_settle=0.3), FakeEmbedder, stop)
    before = inotify_watches()
    with watching(sync, stop):
        time.sleep(1.0)  # the watch is set up after the first run
        assert sync.watched_folders() == [folder]
        assert inotify_watches() - before <= 2, "the watch entered a folder the index skips"
        (tree / "branch0" / "leaf" / "later.md").write_text("Still outside.", encoding="utf-8")
        time.sleep(1.0)
        assert set(stored(sync.settings.store)) == {"one.md"}


def test_a_new_subfolder_is_watched(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    stop = threading.Event()
    sync = LibrarySync(settings_for(tmp_path, folder, library_settle=0.3), FakeEmbedder, stop)
    deadline = time.monotonic() + 40
    with watching(sync, stop, first_within=40):
        time.sleep(0.5)
        (folder / "fresh").mkdir()
        time.sleep(1.0)
        (folder / "fresh" / "deep.md").write_text("The otter slid down the bank.", encoding="utf-8")
        while "fresh/deep.md" not in stored(sync.settings.store) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "fresh/deep.md" in stored(sync.settings.store)


@pytest.mark.parametrize("how", ["emptied", "truncated to spaces"])
def test_a_file_that_now_has_no_text_leaves_the_index(tmp_path: Path, how: str) -> None:
    folder = write_corpus(tmp_path / "notes")
    sync = LibrarySync(settings_for(tmp_path, folder), FakeEmbedder)
    assert sync.sync().committed
    (folder / "cooking.txt").write_bytes(b"" if how == "emptied" else b"   \n")
    result = sync.sync()
    assert result.committed and result.summary is not None and result.summary.removed == 1, result.message
    assert "cooking.txt" not in stored(sync.settings.store)
    assert "sourdough" not in all_text(sync.settings.store)


def test_index_drops_a_document_whose_file_now_has_no_text(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    store = tmp_path / "store"
    index([folder], store)
    (folder / "astronomy.md").write_bytes(b"")
    for prune in (True, False):
        summary = index([folder], store, prune=prune)
        assert "astronomy.md" not in stored(store) and "quasar" not in all_text(store)
        (folder / "astronomy.md").write_text("The comet's tail pointed away from the sun.", encoding="utf-8")
        index([folder], store)
        assert "astronomy.md" in stored(store)
        (folder / "astronomy.md").write_bytes(b"")
        assert summary.committed


def test_the_last_document_emptied_leaves_an_empty_library(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "only.md").write_text("The kettle whistled on the stove.", encoding="utf-8")
    sync = LibrarySync(settings_for(tmp_path, folder), FakeEmbedder)
    assert sync.sync().committed
    (folder / "only.md").write_bytes(b"")
    assert sync.sync().committed
    assert stored(sync.settings.store) == {}


def test_a_file_that_cannot_be_read_in_time_blocks_no_other(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    hostile = folder / "hostile.xlsx"
    hostile.write_bytes(wide_rows(4000))  # every row 16,384 cells: far longer to read than its time limit
    sync = LibrarySync(settings_for(tmp_path, folder, extract_timeout=1.0), FakeEmbedder)
    first = sync.sync()
    assert first.committed and set(stored(sync.settings.store)) == set(TOPICS), first.message
    assert first.summary is not None and "GRANRAG_EXTRACT_TIMEOUT" in dict(first.summary.failed)[str(hostile)]
    (folder / "later.md").write_text("The owl called twice before dawn.", encoding="utf-8")
    second = sync.sync()
    assert second.committed and "later.md" in stored(sync.settings.store)
    assert second.summary is not None and str(hostile) not in dict(second.summary.failed), "read again unchanged"
    hostile.write_bytes(wide_rows(4001))
    third = sync.sync()
    assert third.summary is not None and str(hostile) in dict(third.summary.failed), "an edited file is read again"


def test_a_special_file_is_warned_of_once(tmp_path: Path, caplog) -> None:
    folder = write_corpus(tmp_path / "notes")
    os.mkfifo(folder / "pipe.md")
    sync = LibrarySync(settings_for(tmp_path, folder), FakeEmbedder)
    with caplog.at_level("WARNING"):
        sync.sync()
        (folder / "new.md").write_text("The barn owl hunted at dusk.", encoding="utf-8")
        sync.sync()
    warnings = [r.getMessage() for r in caplog.records if "pipe.md" in r.getMessage()]
    assert len(warnings) == 1, warnings
