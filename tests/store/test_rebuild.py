"""`granrag-mcp index --rebuild` must be as safe as an incremental run: it is the way out that every store error
names, so it has to work on a damaged CURRENT, keep the previous generation for `recover`, and never remove the
generation CURRENT names before the new one is current.

Found while writing docs/RELIABILITY.md. A rebuild used to start without a base snapshot, so indexer.index_paths numbers
the new generation 1 and its chunk ids from 1 again:

- StoreWriter.publish removes an existing `gen-000001/` before it renames the new folder into place. When that is
  the current generation (a store built once), a failing rename, or a kill between the removal and the rename,
  leaves CURRENT naming a folder that no longer exists, while the error says the generation "is intact";
- after a successful rebuild, clean_leftovers keeps generations up to the new current one (`gen-000001`), so it
  removes every newer one: nothing is left for `recover`, and generation numbers go backwards;
- chunk ids restart at 1, so an id a client got before the rebuild names another chunk afterwards instead of being
  an "unknown chunk id";
- with CURRENT damaged, `current_generation` raises before `rebuild` is looked at, so the rebuild fails with the
  error that tells the user to rebuild.

Fixed: a rebuild numbers its generation and chunk ids after everything on disk, skips CURRENT when it rebuilds,
and `publish` refuses to replace the current generation.
"""

from __future__ import annotations

import errno
import os

import pytest

from granrag_mcp.errors import StoreWriteError
from granrag_mcp.store.store import CURRENT_FILE, Snapshot, read_current
from tests.helpers import current_chunks, index, write_corpus


def three_generations(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    for n in range(3):
        # each version longer than the last, so the chunks after it move when everything is numbered again
        text = f"Version {n} of the cooking page. Knead the dough for ten minutes. " * 4**n
        (docs / "cooking.txt").write_text(text)
        index(docs, store)
    assert read_current(store).generation == "gen-000003"
    return docs, store


def public_ids(store) -> dict[str, str]:
    return {public_id: chunk.text for public_id, chunk in current_chunks(store).items()}


def test_a_rebuild_continues_the_numbering_and_keeps_the_previous_generation(tmp_path):
    docs, store = three_generations(tmp_path)
    before = public_ids(store)
    summary = index(docs, store, rebuild=True)
    assert summary.generation == 4
    assert read_current(store).generation == "gen-000004"
    assert (store / "gen-000003").is_dir(), "the generation `recover` falls back to was removed"
    after = public_ids(store)
    reused = [i for i in set(before) & set(after) if before[i] != after[i]]
    assert not reused, f"ids that now name other text: {reused[:5]}"


def test_a_failed_rebuild_of_a_store_built_once_leaves_it_intact(tmp_path, monkeypatch):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)  # gen-000001, the only generation

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "rename", full_disk)  # the commit's rename of the new folder fails
        with pytest.raises(StoreWriteError, match="is intact"):
            index(docs, store, rebuild=True)
    assert Snapshot.open(store).generation == 1  # before the fix: "gen-000001/manifest.json is missing"


def test_a_rebuild_repairs_a_damaged_current_pointer(tmp_path):
    docs, store = three_generations(tmp_path)
    (store / CURRENT_FILE).write_bytes(b"garbage\n")
    summary = index(docs, store, rebuild=True)
    assert summary.committed
    assert Snapshot.open(store).generation == summary.generation
