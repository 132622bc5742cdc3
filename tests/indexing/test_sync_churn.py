"""A burst of random changes (adds, edits, truncations, deletes, renames, new subfolders) settles: within 10 s of the
last change the store holds exactly the folder's documents with their current bytes (fake embedder; the full-size
burst is benchmarks/bench_watch.py --churn)."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from pathlib import Path

from granrag_mcp.indexing.sync import LibrarySync
from tests.fakes import FakeEmbedder
from tests.helpers import write_corpus
from tests.indexing.test_sync import settings_for, stored, watching

SETTLES_WITHIN = 10.0  # seconds from the last change to a store in step with the folder
WORDS = "river stone lantern orchard comet harbour meadow falcon glacier violin kettle quarry".split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(8)).capitalize() + "."


def churn(folder: Path, changes: int, seconds: float, seed: int = 7, pause: float = 1.5) -> None:
    """`changes` random changes to the Markdown files under `folder`, spread over about `seconds`, the last one
    after `pause` seconds of quiet."""
    rng = random.Random(seed)
    for n in range(changes):
        files = sorted(folder.rglob("*.md"))
        kind = rng.choice(["add", "add", "edit", "edit", "truncate", "delete", "rename", "subfolder"])
        if n == changes - 1:  # after a pause a sync runs in, the last change empties a file it indexed
            time.sleep(pause)
            kind = "truncate"
        target = rng.choice(files) if files else None
        if kind == "add" or target is None:
            (folder / f"note{n}.md").write_text(sentence(rng), encoding="utf-8")
        elif kind == "edit":
            target.write_text(" ".join(sentence(rng) for _ in range(rng.randint(1, 4))), encoding="utf-8")
        elif kind == "truncate":
            target.write_bytes(b"")
        elif kind == "delete":
            target.unlink()
        elif kind == "rename":
            target.rename(target.with_name(f"renamed{n}.md"))
        else:
            sub = folder / f"sub{n % 5}"
            sub.mkdir(exist_ok=True)
            (sub / f"deep{n}.md").write_text(sentence(rng), encoding="utf-8")
        time.sleep(rng.expovariate(changes / seconds))  # uneven: some gaps are quiet moments, most are not


def expected(folder: Path) -> dict[str, str]:
    """doc id -> hash of every document file with text under `folder`."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".txt") and path.read_text(encoding="utf-8").strip():
            found[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def seconds_to_settle(folder: Path, store: Path, limit: float) -> float:
    """Seconds until the store is in step with `folder` (or `limit`, past which it is reported)."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if stored(store) == expected(folder):
            return time.monotonic() - start
        time.sleep(0.1)
    return float("inf")


def test_a_burst_of_changes_settles_within_seconds(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "notes")
    stop = threading.Event()
    sync = LibrarySync(settings_for(tmp_path, folder, library_settle=0.3), FakeEmbedder, stop)
    with watching(sync, stop) as passes:
        time.sleep(0.5)
        churn(folder, changes=40, seconds=4.0)
        waited = seconds_to_settle(folder, sync.settings.store, SETTLES_WITHIN)
        assert waited <= SETTLES_WITHIN, (
            f"not in step {SETTLES_WITHIN} s after the last change: store {sorted(stored(sync.settings.store))}, "
            f"folder {sorted(expected(folder))}; {[p.message for p in passes]}"
        )
