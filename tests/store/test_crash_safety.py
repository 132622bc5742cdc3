"""SIGKILL an indexing process at random moments; the store must always open, answer, and recover.

The CI runs a short version; `pytest -m slow tests/store/test_crash_safety.py` runs the long one.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from granrag_mcp.store.store import TMP_PREFIX, Snapshot, read_current
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus
from tests.reliability.support import record

ROOT = Path(__file__).resolve().parents[2]


def make_corpus(folder: Path, trial: int) -> None:
    docs = {
        f"doc{i:02d}.md": " ".join(
            f"Document {i} sentence {j} mentions topic{(i * 7 + j) % 23} and detail{j}." for j in range(40)
        )
        for i in range(30)
    }
    docs["changing.md"] = f"Trial {trial} changes this document. " * 20
    write_corpus(folder, docs, repeat=1)


class Child:
    """An index run in a child process, with the phases it reported and when."""

    def __init__(self, docs: Path, store: Path, kill_at_operation: int | None = None) -> None:
        extra = [] if kill_at_operation is None else [str(kill_at_operation)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_child", str(docs), str(store), *extra],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.started = time.monotonic()
        self.phases: dict[str, float] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.phases[line.strip()] = time.monotonic() - self.started

    def kill_after(self, delay: float, phase: str = "started") -> None:
        """SIGKILL `delay` seconds after the child reported `phase` (or when it ends by itself)."""
        deadline = time.monotonic() + 120
        while phase not in self.phases and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(delay)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._reader.join(5)

    def finish(self) -> None:
        assert self.proc.wait(120) == 0
        self._reader.join(5)


def check_store(store: Path, generations: set[int]) -> int:
    snapshot = Snapshot.open(store)
    try:
        assert snapshot.generation in generations
        counts = snapshot.manifest.counts
        for level in ("broad", "mid", "narrow"):
            assert len(snapshot.vectors[level]) == counts[level] == len(snapshot.lexical[level])
        assert snapshot.catalog.count_documents() == counts["documents"]
        query = FakeEmbedder().embed(["topic5 detail3"])[0]
        hits = snapshot.vectors["narrow"].search(query, 5)
        assert len(hits) == 5
        found = snapshot.catalog.chunks([chunk_id for chunk_id, _ in hits])
        assert set(found) == {chunk_id for chunk_id, _ in hits}
        assert snapshot.lexical["mid"].search("topic5", 3)
        return snapshot.generation
    finally:
        snapshot.close()


def run_trials(tmp_path: Path, trials: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    started = time.monotonic()
    docs, store = tmp_path / "docs", tmp_path / "store"
    make_corpus(docs, trial=0)
    index(docs, store)
    make_corpus(docs, trial=1)
    calibration = Child(docs, store)
    calibration.finish()
    total = calibration.phases["finished"]
    publish = (calibration.phases["publish-begin"], calibration.phases["publish-end"])
    generation = check_store(store, {2})
    tally = {"before-commit": 0, "inside-commit": 0, "after-commit": 0, "killed": 0}
    for trial in range(2, trials + 2):
        make_corpus(docs, trial)
        kind = trial % 3
        if kind == 0:  # the child kills itself at a random fsync/rename/replace of the commit
            child = Child(docs, store, kill_at_operation=rng.randint(1, 16))
            child.kill_after(0.0, phase="finished")
        elif kind == 1:  # a random moment of the commit window, timed from its start
            child = Child(docs, store)
            child.kill_after(rng.uniform(0.0, publish[1] - publish[0]), phase="publish-begin")
        else:  # any moment of the run
            child = Child(docs, store)
            child.kill_after(rng.uniform(0.0, total))
        phases = child.phases
        if "publish-end" in phases:
            tally["after-commit"] += 1
        elif "publish-begin" in phases:
            tally["inside-commit"] += 1
        else:
            tally["before-commit"] += 1
        if "finished" not in phases:
            tally["killed"] += 1
        generation = check_store(store, {generation, generation + 1})
    make_corpus(docs, trials + 2)
    summary = index(docs, store)  # the next run cleans up and completes
    assert summary.committed
    assert not list(store.glob(f"{TMP_PREFIX}*"))
    assert read_current(store).generation == f"gen-{summary.generation:06d}"
    check_store(store, {summary.generation})
    return tally | {
        "trials": trials,
        "failures": 0,
        "seconds": round(time.monotonic() - started),
        "commit window ms": round(1000 * (publish[1] - publish[0]), 1),
    }


def test_killed_index_runs_leave_a_loadable_store(tmp_path):
    trials = int(os.environ.get("GRANRAG_CRASH_TRIALS", "36"))
    tally = run_trials(tmp_path, trials, seed=1234)
    record("sigkill-child-short", tally)
    assert tally["inside-commit"] >= trials // 4 and tally["before-commit"] >= 1


@pytest.mark.slow
def test_many_killed_index_runs_leave_a_loadable_store(tmp_path):
    tally = run_trials(tmp_path, trials=int(os.environ.get("GRANRAG_CRASH_TRIALS", "120")), seed=99)
    record("sigkill-child", tally)
    assert tally["inside-commit"] >= 10
