"""SIGKILL the real `granrag-mcp index` (the console script, the bundled model) at random moments, inside the commit
too; after every kill the store opens, `granrag-mcp status --json` agrees with the manifest, `granrag-mcp search`
answers, and the next index run cleans up and completes without losing a document.

tests/store/test_crash_safety.py does this with the fake embedder in a child process; this kills the command users
run. Four ways to pick the moment, in turn:

- `anywhere`: a uniform moment of a whole run (model load, extraction, embedding, writing, commit);
- `writing`: once the hidden `.tmp-gen-*` folder appears, a uniform moment of the calibrated write+commit window;
- `renamed`: the instant the new `gen-NNNNNN/` folder appears, before CURRENT is replaced;
- `commit-op`: a `sitecustomize` hook (on PYTHONPATH, the command is unchanged) kills the process at the Kth
  fsync, rename or replace of the commit, K random.

The default run does one `commit-op` trial; `pytest -m slow` does GRANRAG_CLI_CRASH_TRIALS (60) of all four.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from granrag_mcp.store.store import Snapshot, read_current
from tests.reliability.conftest import RealStore
from tests.reliability.support import (
    cli_env,
    current_manifest,
    record,
    run_cli,
    status_agrees_with_manifest,
    working_copy,
)
from tests.server.transport.test_stdio import granrag_command

KINDS = ["commit-op", "renamed", "writing", "anywhere"]
HOOK = """
import os
if os.environ.get("GRANRAG_TEST_KILL_AT"):
    import signal
    from granrag_mcp.store import writer as _store

    _kill_at = int(os.environ["GRANRAG_TEST_KILL_AT"])
    _state = {"on": False, "n": 0}

    def _wrap(original):
        def operation(*args, **kwargs):
            if _state["on"]:
                _state["n"] += 1
                if _state["n"] == _kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)
        return operation

    for _name in ("fsync", "rename", "replace"):
        setattr(os, _name, _wrap(getattr(os, _name)))
    _publish = _store.StoreWriter.publish

    def _reporting_publish(self, folder, manifest):
        _state["on"] = True
        return _publish(self, folder, manifest)

    _store.StoreWriter.publish = _reporting_publish
"""


def change_document(corpus: Path, trial: int) -> str:
    text = f"# Trial log\n\nTrial {trial} rewrote this page about the harbour crane number {trial * 7}.\n" * 4
    (corpus / "changing.md").write_text(text, encoding="utf-8")
    return text


def entries(store: Path) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(store)}
    except FileNotFoundError:
        return set()


def generation_folders(store: Path) -> dict[str, int]:
    """Name -> inode of every `gen-NNNNNN` folder: a renamed hidden folder keeps its inode, so a generation this run
    published differs from a leftover of an earlier trial with the same name."""
    return {entry.name: entry.inode() for entry in os.scandir(store) if entry.name.startswith("gen-")}


# The state a kill left, one bucket per trial (the buckets add up to the number of trials).
FINISHED = "finished before the kill"
BEFORE = "killed before its generation folder existed"
WRITING = "killed while its .tmp-gen folder was written or flushed"
RENAMED = "killed after the rename, before CURRENT was replaced"
COMMITTED = "killed after CURRENT was replaced"
STATES = [FINISHED, BEFORE, WRITING, RENAMED, COMMITTED]
HOOKED = "of which killed by the hook at a commit fsync/rename/replace"


def state_after_kill(run: IndexRun, killed: bool, committed: bool) -> str:
    """How far the killed run got, read from what it left in the store folder."""
    if not killed:
        return FINISHED
    if committed:
        return COMMITTED
    left = entries(run.store)
    if any(n.startswith(".tmp-gen-") and n.endswith(f"-{run.process.pid}") for n in left):
        return WRITING
    current = read_current(run.store).generation
    if any(
        name > current and run.generations_before.get(name) != inode
        for name, inode in generation_folders(run.store).items()
    ):
        return RENAMED
    return BEFORE


class IndexRun:
    """One `granrag-mcp index` process, watched through the store folder."""

    def __init__(self, settings, corpus: Path, hook: Path | None = None, kill_at: int | None = None) -> None:
        env = cli_env(settings)
        if kill_at is not None:
            path = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
            env |= {"PYTHONPATH": path, "GRANRAG_TEST_KILL_AT": str(kill_at)}
        self.store = settings.store
        self.before = entries(self.store)
        self.generations_before = generation_folders(self.store)
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [granrag_command(), "index", str(corpus), "--store", str(self.store), "--quiet"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def wait_for(self, predicate, limit: float = 300.0) -> float | None:
        """Poll the store folder (about every millisecond) until predicate(new entries) holds; seconds since start."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if predicate(entries(self.store) - self.before):
                return time.monotonic() - self.started
            if self.process.poll() is not None:
                return None
            time.sleep(0.0005)
        return None

    def kill(self) -> bool:
        """SIGKILL now; True if the process was still running."""
        alive = self.process.poll() is None
        if alive:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(60)
        return alive

    def finish(self) -> int:
        self.process.wait(300)
        return self.process.returncode


def calibrate(settings, corpus: Path) -> dict[str, float]:
    """An uninterrupted run: when the hidden folder, the new generation and the new CURRENT appear."""
    change_document(corpus, 0)
    run = IndexRun(settings, corpus)
    before_current = (settings.store / "CURRENT").read_text()
    tmp = run.wait_for(lambda new: any(n.startswith(".tmp-gen-") for n in new))
    renamed = run.wait_for(lambda new: any(n.startswith("gen-") for n in new))
    current = run.wait_for(lambda new: (settings.store / "CURRENT").read_text() != before_current)
    assert run.finish() == 0, run.process.stderr.read()
    total = time.monotonic() - run.started
    return {"total": total, "tmp": tmp or 0.0, "renamed": renamed or total, "current": current or total}


def check_after_kill(settings, generations: set[int], search: bool) -> int:
    snapshot = Snapshot.open(settings.store)  # opens and verifies every checksum
    generation = snapshot.generation
    snapshot.close()
    assert generation in generations, (generation, generations)
    status = status_agrees_with_manifest(settings)
    assert status["documents"] in (5, 6)  # changing.md is new in the first run
    if search:
        found = run_cli(settings, "search", "harbour crane trial", "--store", str(settings.store), "-k", "3", "--json")
        assert found.code == 0, found.stderr
        assert len(json.loads(found.stdout)) == 3
    return generation


def run_trials(real_store: RealStore, tmp_path: Path, trials: int, seed: int, search_every: int) -> dict:
    rng = random.Random(seed)
    settings, corpus = working_copy(real_store.settings, real_store.corpus, tmp_path)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    kinds = KINDS[:trials] if trials < len(KINDS) else KINDS
    timing = calibrate(settings, corpus) if {"writing", "anywhere"} & set(kinds) else {}
    generation = current_manifest(settings.store)["generation"]
    tally: Counter[str] = Counter({state: 0 for state in STATES})
    started = time.monotonic()
    for trial in range(1, trials + 1):
        kind = kinds[(trial - 1) % len(kinds)]
        change_document(corpus, trial)
        current_before = (settings.store / "CURRENT").read_text()
        if kind == "commit-op":
            run = IndexRun(settings, corpus, hook, kill_at=rng.randint(1, 16))
            code = run.finish()
            killed = code == -signal.SIGKILL
        else:
            run = IndexRun(settings, corpus)
            if kind == "anywhere":
                run.wait_for(lambda new: False, limit=rng.uniform(0.0, timing["total"]))
            elif kind == "writing":
                run.wait_for(lambda new: any(n.startswith(".tmp-gen-") for n in new))
                run.wait_for(lambda new: False, limit=rng.uniform(0.0, 1.2 * (timing["current"] - timing["tmp"])))
            else:  # renamed: the hidden folder appeared, then went (renamed to gen-NNNNNN, CURRENT not yet replaced)
                run.wait_for(lambda new: any(n.startswith(".tmp-gen-") for n in new))
                hidden = {n for n in entries(settings.store) - run.before if n.startswith(".tmp-gen-")}
                run.wait_for(lambda new, hidden=hidden: not hidden & new)
            killed = run.kill()
        committed = (settings.store / "CURRENT").read_text() != current_before
        tally[state_after_kill(run, killed, committed)] += 1
        if killed and kind == "commit-op":
            tally[HOOKED] += 1
        tally[f"kind {kind}"] += 1
        tally["leftover .tmp-gen folders seen"] += sum(1 for n in entries(settings.store) if n.startswith(".tmp-gen-"))
        generation = check_after_kill(settings, {generation, generation + 1}, search=trial % search_every == 0)
    # The next run cleans up and completes; nothing is lost.
    text = change_document(corpus, trials + 1)
    final = run_cli(settings, "index", str(corpus), "--store", str(settings.store), "--json")
    assert final.code == 0, final.stderr
    assert not [n for n in entries(settings.store) if n.startswith(".tmp-gen-") or n.endswith(".tmp")]
    assert len([n for n in entries(settings.store) if n.startswith("gen-")]) <= 2
    assert check_after_kill(settings, {generation + 1}, search=True) == generation + 1
    assert status_agrees_with_manifest(settings)["documents"] == 6
    snapshot = Snapshot.open(settings.store)
    try:
        assert snapshot.catalog.document_text("changing.md") == text
        for path in corpus.rglob("*"):
            if path.is_file() and path.suffix in (".md", ".txt"):
                doc_id = path.relative_to(corpus).as_posix()
                assert snapshot.catalog.document_text(doc_id) is not None, f"{doc_id} was lost"
    finally:
        snapshot.close()
    assert read_current(settings.store).generation == f"gen-{generation + 1:06d}"
    figures = dict(tally) | {"trials": trials, "failures": 0, "seconds": round(time.monotonic() - started)}
    if timing:
        figures |= {
            "calibrated run s": round(timing["total"], 2),
            "commit window ms": round(1000 * (timing["current"] - timing["tmp"]), 1),
        }
    return figures


def test_killing_the_real_cli_inside_the_commit(real_store: RealStore, tmp_path: Path) -> None:
    figures = run_trials(real_store, tmp_path, trials=1, seed=7, search_every=2)
    record("sigkill-real-cli-short", figures)


@pytest.mark.slow
def test_killing_the_real_cli_at_random_moments(real_store: RealStore, tmp_path: Path) -> None:
    trials = int(os.environ.get("GRANRAG_CLI_CRASH_TRIALS", "60"))
    figures = run_trials(real_store, tmp_path, trials=trials, seed=2026, search_every=1)
    record("sigkill-real-cli", figures)
    assert sum(figures[state] for state in STATES) == trials, figures
    if trials >= 50:  # a third of the kills land inside the commit, each stage of it at least once
        assert figures[WRITING] + figures[RENAMED] >= trials // 3, figures
        assert min(figures[WRITING], figures[RENAMED], figures[HOOKED]) >= 1, figures
