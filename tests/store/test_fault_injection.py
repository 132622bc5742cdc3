"""A failing file system: the Nth write, fsync or rename of a commit raises ENOSPC or EIO.

For N = 1, 2, ... until a commit gets through, every failure must be a clear error, the previous
generation must stay current and intact, and the next run must succeed.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from granrag_mcp.errors import StoreWriteError
from granrag_mcp.store import writer as writer_module
from granrag_mcp.store.catalog import Catalog
from granrag_mcp.store.lexical import LexicalIndex
from granrag_mcp.store.store import TMP_PREFIX, Snapshot, read_current
from granrag_mcp.store.vector_index import VectorIndex
from tests.helpers import index, write_corpus
from tests.reliability.support import record


class FailingFileSystem:
    """Counts file-system operations of a commit and makes the Nth one fail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int, code: int) -> None:
        self.fail_at = fail_at
        self.code = code
        self.count = 0
        self.failed_op: str | None = None
        for owner, name in [
            (os, "fsync"),
            (os, "rename"),
            (os, "replace"),
            (shutil, "copyfile"),
            (Path, "write_bytes"),
            (VectorIndex, "write"),
            (LexicalIndex, "write"),
            (Catalog, "insert_document"),
            (Catalog, "commit"),
            (writer_module, "write_atomic"),
        ]:
            monkeypatch.setattr(owner, name, self._wrap(name, getattr(owner, name)))

    def _wrap(self, name, original):
        def operation(*args, **kwargs):
            self.count += 1
            if self.count == self.fail_at:
                self.failed_op = name
                raise OSError(self.code, os.strerror(self.code))
            return original(*args, **kwargs)

        return operation


def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code_at: Callable[[int], int]) -> dict:
    """Fail operation N = 1, 2, ... of an index run (error code_at(N)) until a commit gets through."""
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    failures: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    started = time.monotonic()
    for n in range(1, 200):
        (docs / "cooking.txt").write_text(f"Attempt {n}: grind the coffee beans, then brew them slowly.")
        before = read_current(store)
        with monkeypatch.context() as patch:
            fs = FailingFileSystem(patch, fail_at=n, code=code_at(n))
            try:
                summary = index(docs, store)
            except StoreWriteError as exc:
                message = str(exc)
                failures[fs.failed_op] += 1
                codes[errno.errorcode[fs.code]] += 1
            else:
                assert fs.failed_op is None or fs.failed_op == "fsync"  # only the flush after CURRENT may fail
                break
        assert os.strerror(fs.code) in message and "is intact" in message and "run the command again" in message
        assert "\n" not in message and "gen-000001" in message  # one line that names the generation still current
        assert read_current(store) == before, f"operation {n} ({fs.failed_op}) changed CURRENT"
        snapshot = Snapshot.open(store)
        assert snapshot.generation == 1
        assert snapshot.catalog.document_text("cooking.txt").startswith("Bake the sourdough")
        snapshot.close()
        assert not list(store.glob(f"{TMP_PREFIX}*"))
        assert sorted(p.name for p in store.glob("gen-*")) == ["gen-000001"]  # the failed generation is removed
    else:
        pytest.fail("no commit got through in 200 attempts")
    assert summary.committed and summary.generation == 2
    assert sum(failures.values()) >= 20 and {"fsync", "rename", "replace", "write_atomic"} <= set(failures)
    assert Snapshot.open(store).catalog.document_text("cooking.txt").startswith(f"Attempt {n}")
    return {
        "failed commits": sum(failures.values()),
        "committed at operation": n,
        "errors": dict(codes),
        "failed operation": dict(sorted(failures.items())),
        "failures": 0,
        "seconds": round(time.monotonic() - started, 1),
    }


def test_every_failing_operation_of_a_commit_leaves_the_previous_generation(tmp_path, monkeypatch):
    figures = sweep(tmp_path, monkeypatch, lambda n: errno.ENOSPC if n % 2 else errno.EIO)
    record("failing-filesystem", figures)


@pytest.mark.slow
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_every_failing_operation_with_each_error(tmp_path, monkeypatch, code):
    """The same sweep with one error code throughout, so every operation fails once with ENOSPC and once with EIO."""
    figures = sweep(tmp_path, monkeypatch, lambda n: code)
    record(f"failing-filesystem-{errno.errorcode[code]}", figures)
