"""A store that cannot be written, and a commit that fails part-way.

A `--store` that is a file, a read-only store, a full disk, or a failure at any one step of a commit (SQLite,
FAISS, BM25, manifest, CURRENT) must end in one line that names the cause and says what to do. A failed commit
leaves no half-built generation behind (it would keep a full disk full) and the previous generation current and
loadable; the next run, once the cause is gone, commits. Each real failure (a tmpfs that fills up, a read-only
bind mount) has a twin that injects the same failure, for systems where mounting is not permitted.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from granrag_mcp.errors import StoreAccessError, StoreWriteError
from granrag_mcp.store import store as store_module
from granrag_mcp.store import writer as writer_module
from granrag_mcp.store.catalog import Catalog
from granrag_mcp.store.durable import write_atomic
from granrag_mcp.store.lexical import LexicalIndex
from granrag_mcp.store.manifest import MANIFEST_FILE
from granrag_mcp.store.store import TMP_PREFIX, Snapshot, read_current
from granrag_mcp.store.vector_index import VectorIndex
from granrag_mcp.store.writer import StoreWriter
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus
from tests.store.mounts import fill, read_only_view, resize, small_disk

FIRST_TEXT = "Bake the sourdough"


def one_line(error: BaseException) -> str:
    message = str(error)
    assert message and "\n" not in message
    return message


def assert_previous_generation_current(store: Path, before, generation: int = 1) -> None:
    """CURRENT unchanged, nothing half-built left, and the generation it names loads with its old content."""
    assert read_current(store) == before
    assert not list(store.glob(f"{TMP_PREFIX}*"))
    assert not list(store.glob(".CURRENT.*"))
    snapshot = Snapshot.open(store)
    try:
        assert snapshot.generation == generation
        assert snapshot.catalog.document_text("cooking.txt").startswith(FIRST_TEXT)
    finally:
        snapshot.close()


def change_a_document(docs: Path, text: str = "Grind the coffee beans, then brew them slowly.") -> None:
    (docs / "cooking.txt").write_text(text)


# --- a store that is not a writable folder ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_a_store_that_is_a_file_is_refused_by_readers_and_writers(tmp_path, where):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("not a store")
    store = blocker if where == "file" else blocker / "store"
    docs = write_corpus(tmp_path / "docs")
    expected = "is a file" if where == "file" else f"{blocker} is a file"
    attempts = {
        "index": lambda: index(docs, store),
        "recover": lambda: StoreWriter(store, command="recover").__enter__(),
        "status": lambda: Snapshot.open(store),
        "serve": lambda: read_current(store),
    }
    for command, attempt in attempts.items():
        with pytest.raises(StoreAccessError) as caught:
            attempt()
        message = one_line(caught.value)
        assert expected in message and "pass --store" in message, command
    assert blocker.read_text() == "not a store"


def test_a_read_only_store_refuses_writers_and_serves_readers(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    before = read_current(store)
    change_a_document(docs)
    with read_only_view(store, tmp_path / "view") as view:
        for command, attempt in {
            "index": lambda: index(docs, view),
            "recover": lambda: StoreWriter(view, command="recover").__enter__(),
        }.items():
            with pytest.raises(StoreAccessError) as caught:
                attempt()
            message = one_line(caught.value)
            assert "Read-only file system" in message and f"`{command}` needs write access" in message
        with pytest.raises(StoreAccessError, match="cannot create the store folder .*Read-only file system"):
            index(docs, view / "inner")
        assert_previous_generation_current(view, before)  # what `status`, `search` and `serve` do
    assert_previous_generation_current(store, before)


def test_a_lock_that_cannot_be_created_is_one_line(tmp_path, monkeypatch):
    """The read-only store's twin: the file system refuses the writer's first write, the lock file."""
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    before = read_current(store)
    change_a_document(docs)

    def refuse(root: Path):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(root / store_module.LOCK_FILE))

    monkeypatch.setattr(writer_module, "acquire_writer_lock", refuse)
    for command in ("index", "recover"):
        with pytest.raises(StoreAccessError) as caught:
            with StoreWriter(store, command=command) as writer:
                writer.rollback()
        message = one_line(caught.value)
        assert "Permission denied" in message and f"`{command}` needs write access" in message
    with pytest.raises(StoreAccessError):
        index(docs, store)
    assert_previous_generation_current(store, before)


# --- a disk that fills up -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dimension", "new_text", "cause", "raised"),
    [
        # a large document: its text fills the disk while SQLite writes the catalog
        (64, " ".join(f"word{i % 5000}" for i in range(40_000)), "database or disk is full", sqlite3.OperationalError),
        # wide vectors: the copied catalog fits, FAISS fills the disk writing the vectors
        (2048, None, "No space left on device", RuntimeError),
    ],
    ids=["sqlite", "faiss"],
)
def test_a_full_disk_fails_the_commit_cleanly(tmp_path, dimension, new_text, cause, raised):
    docs = write_corpus(tmp_path / "docs")
    embedder = FakeEmbedder(dimension)
    # 1.6 MiB: the first generation (its concept graph holds a 2048-wide vector per concept) must fit
    with small_disk(tmp_path / "disk", kib=1600) as disk:
        store = disk / "store"
        index(docs, store, embedder=embedder)
        before = read_current(store)
        if new_text:
            (docs / "big.txt").write_text(new_text)
        else:
            change_a_document(docs)
        with pytest.raises(StoreWriteError) as caught:
            index(docs, store, embedder=embedder)
        message = one_line(caught.value)
        assert isinstance(caught.value.__cause__, raised)
        assert cause in message and "gen-000001 and is intact" in message and "Free disk space" in message
        assert ".cpp" not in message  # FAISS's source location is no help to a user
        assert_previous_generation_current(store, before)
        resize(disk, 64 * 1024)  # the user frees space, and runs the command again
        summary = index(docs, store, embedder=embedder)
        assert summary.committed and summary.generation == 2


def test_recover_and_status_on_a_full_disk(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    with small_disk(tmp_path / "disk", kib=1024) as disk:
        store = disk / "store"
        index(docs, store)
        change_a_document(docs)
        index(docs, store)
        before = read_current(store)
        filler = fill(disk)
        change_a_document(docs, "Steep the tea leaves for three minutes.")
        with pytest.raises(StoreWriteError) as caught:
            index(docs, store)
        assert "No space left on device" in one_line(caught.value)
        with pytest.raises(StoreWriteError) as caught:
            with StoreWriter(store, command="recover") as writer:
                writer.rollback()
        message = one_line(caught.value)
        assert "could not make gen-000001 current" in message and "No space left on device" in message
        assert "the current generation is gen-000002" in message
        assert read_current(store) == before and not list(store.glob(".CURRENT.*"))
        Snapshot.open(store).close()  # status still reads it
        filler.unlink()
        with StoreWriter(store, command="recover") as writer:
            assert writer.rollback() == "gen-000001"
        assert_previous_generation_current(store, read_current(store))


# --- a failure injected at each step of a commit ------------------------------------------------------------------


def _faiss_error(*args, **kwargs):
    raise RuntimeError(
        "Error in void faiss::write_index(const Index*, IOWriter*, int) at /project/faiss/impl/index_write.cpp:499: "
        "Error: 'ret == (size * 4)' failed: write error in narrow.faiss: 16302 != 409600 (No space left on device)"
    )


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _sqlite_full(*args, **kwargs):
    raise sqlite3.OperationalError("database or disk is full")


def _manifest_write_fails(original):
    def write_bytes(self, data):
        if self.name == MANIFEST_FILE:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return original(self, data)

    return write_bytes


STEPS = {
    "sqlite-insert": (Catalog, "insert_document", lambda original: _sqlite_full, "database or disk is full"),
    "sqlite-commit": (Catalog, "commit", lambda original: _sqlite_full, "database or disk is full"),
    "faiss-write": (
        VectorIndex,
        "write",
        lambda original: _faiss_error,
        "write error in narrow.faiss: 16302 != 409600 (No space left on device)",
    ),
    "lexical-write": (LexicalIndex, "write", lambda original: _disk_full, "No space left on device"),
    "manifest": (Path, "write_bytes", _manifest_write_fails, "Input/output error (manifest.json)"),
    "current-pointer": (writer_module, "write_atomic", lambda original: _disk_full, "No space left on device"),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_a_failure_at_each_write_step_leaves_the_previous_generation(tmp_path, monkeypatch, step):
    owner, name, make_failure, cause = STEPS[step]
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    before = read_current(store)
    change_a_document(docs)
    with monkeypatch.context() as patch:
        patch.setattr(owner, name, make_failure(getattr(owner, name)))
        with pytest.raises(StoreWriteError) as caught:
            index(docs, store)
    message = one_line(caught.value)
    assert message.startswith(
        f"could not commit generation 2 to {store}: {cause}; the current generation is gen-000001"
    )
    assert_previous_generation_current(store, before)
    assert sorted(p.name for p in store.glob("gen-*")) == ["gen-000001"]
    assert index(docs, store).generation == 2


def test_an_interrupted_commit_removes_its_generation(tmp_path, monkeypatch):
    """Ctrl-C while writing is no user error to report, but its half-built generation must not stay either."""
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    before = read_current(store)
    change_a_document(docs)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(VectorIndex, "write", interrupt)
    with pytest.raises(KeyboardInterrupt):
        index(docs, store)
    assert_previous_generation_current(store, before)


def test_recover_that_cannot_write_current_is_one_line(tmp_path, monkeypatch):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    change_a_document(docs)
    index(docs, store)
    before = read_current(store)
    monkeypatch.setattr(writer_module, "write_atomic", _disk_full)
    with pytest.raises(StoreWriteError) as caught:
        with StoreWriter(store, command="recover") as writer:
            writer.rollback()
    message = one_line(caught.value)
    assert "could not make gen-000001 current" in message and "No space left on device" in message
    assert read_current(store) == before


def test_an_atomic_write_that_fails_leaves_no_temporary_copy(tmp_path):
    target = tmp_path / "CURRENT"
    (target / "occupied").mkdir(parents=True)  # a non-empty folder: the final rename cannot replace it
    with pytest.raises(OSError):
        write_atomic(target, b"gen-000001 0\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CURRENT"]


def test_a_failure_after_current_switched_is_no_failed_commit(tmp_path, monkeypatch):
    """Removing older generations comes after CURRENT names the new one: failing there must not report the commit
    as failed (the new generation is current) nor undo it."""
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    change_a_document(docs)
    calls = []
    original = StoreWriter.clean_leftovers

    def clean_leftovers(self):
        calls.append(1)
        if len(calls) == 2:  # the first call takes the lock, the second follows the publication
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return original(self)

    monkeypatch.setattr(StoreWriter, "clean_leftovers", clean_leftovers)
    summary = index(docs, store)
    assert summary.committed and summary.generation == 2 and len(calls) == 2
    assert read_current(store).generation == "gen-000002"
    snapshot = Snapshot.open(store)
    assert snapshot.catalog.document_text("cooking.txt").startswith("Grind the coffee")
    snapshot.close()


def test_a_store_this_user_may_not_read_is_one_line(tmp_path, monkeypatch):
    """Root reads every file, so the refusal is injected where CURRENT is read; the remedy is access, not `recover`."""
    store = tmp_path / "store"
    index(write_corpus(tmp_path / "docs"), store)
    original = Path.read_text

    def read_text(self, *args, **kwargs):
        if self.name == store_module.CURRENT_FILE:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    with pytest.raises(StoreAccessError) as caught:
        Snapshot.open(store)
    message = one_line(caught.value)
    assert "Permission denied" in message and "read access" in message and "recover" not in message
