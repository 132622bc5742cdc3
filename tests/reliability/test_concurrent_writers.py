"""Two real `granrag-mcp index` processes at once: the second fails fast with "index busy" naming the first, the
first commits, and re-running the second commits too: nothing is lost.

tests/store/test_store.py checks the lock through the Python API with a process that only holds it; this runs the
command twice, for real, started together (either may win) or one after the other.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from granrag_mcp.store.store import HOLDER_FILE, Snapshot
from tests.reliability.conftest import RealStore
from tests.reliability.support import record, run_cli, spawn_cli, status_agrees_with_manifest, working_copy


def setup(real_store: RealStore, tmp_path: Path):
    settings, corpus = working_copy(real_store.settings, real_store.corpus, tmp_path)
    extra = tmp_path / "extra"
    extra.mkdir()
    return settings, corpus, extra


def round_of_two(settings, corpus: Path, extra: Path, number: int, staggered: bool) -> dict:
    """Writer A indexes the corpus (one document changed), writer B one new file; returns what happened."""
    (corpus / "orchards.md").write_text(f"# Orchards\n\nRound {number}: the orchard grows medlars.\n" * 5)
    (extra / f"new{number}.md").write_text(f"# New {number}\n\nRound {number} adds the lighthouse of Skerry.\n")
    args_a = ("index", str(corpus), "--store", str(settings.store), "--quiet")
    args_b = ("index", str(extra / f"new{number}.md"), "--store", str(settings.store), "--quiet")
    generation = json.loads(run_cli(settings, "status", "--store", str(settings.store), "--json").stdout)["generation"]
    a = spawn_cli(settings, *args_a)
    if staggered:  # B starts once A holds the lock
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if json.loads((settings.store / HOLDER_FILE).read_text())["pid"] == a.pid:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.01)
        else:
            pytest.fail("writer A never took the lock")
    b_started = time.monotonic()
    b = spawn_cli(settings, *args_b)
    out_b, err_b = b.communicate(timeout=300)
    b_seconds = time.monotonic() - b_started
    out_a, err_a = a.communicate(timeout=300)
    codes = {"a": a.returncode, "b": b.returncode}
    assert sorted(codes.values()) == [0, 1], (codes, err_a, err_b)
    loser, loser_err, loser_args = ("b", err_b, args_b) if codes["b"] == 1 else ("a", err_a, args_a)
    winner_pid = a.pid if loser == "b" else b.pid
    lines = [line for line in loser_err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("granrag-mcp: error: index busy"), loser_err
    assert f"process {winner_pid}" in lines[0] and "wait for it to finish" in lines[0]
    # The winner committed one generation; the loser changed nothing. Run the loser again: both are in.
    status = status_agrees_with_manifest(settings)
    assert status["generation"] == generation + 1
    again = run_cli(settings, *loser_args)
    assert again.code == 0, again.stderr
    status = status_agrees_with_manifest(settings)
    assert status["generation"] == generation + 2
    snapshot = Snapshot.open(settings.store)
    try:
        assert f"Round {number}: the orchard grows medlars." in snapshot.catalog.document_text("orchards.md")
        assert f"Round {number} adds the lighthouse" in snapshot.catalog.document_text(f"new{number}.md")
        for previous in range(1, number):
            assert snapshot.catalog.document_text(f"new{previous}.md") is not None, "a document was lost"
    finally:
        snapshot.close()
    return {"loser": loser, "b_seconds": b_seconds if loser == "b" else None}


def run_rounds(real_store: RealStore, tmp_path: Path, rounds: int, search: bool = True) -> dict:
    settings, corpus, extra = setup(real_store, tmp_path)
    tally: Counter[str] = Counter()
    fail_fast: list[float] = []
    for number in range(1, rounds + 1):
        staggered = number % 2 == 1
        outcome = round_of_two(settings, corpus, extra, number, staggered)
        tally["staggered" if staggered else "together"] += 1
        tally[f"second writer refused ({'B' if outcome['loser'] == 'b' else 'A'})"] += 1
        if outcome["b_seconds"] is not None and staggered:
            fail_fast.append(outcome["b_seconds"])
    if search:
        found = run_cli(settings, "search", "lighthouse of Skerry", "--store", str(settings.store), "--json")
        assert found.code == 0 and "Skerry" in found.stdout
    assert max(fail_fast) < 30, fail_fast  # imports and file discovery only, no model load
    return dict(tally) | {"rounds": rounds, "failures": 0, "refusal s (max)": round(max(fail_fast), 2)}


def test_two_index_processes_at_once(real_store: RealStore, tmp_path: Path) -> None:
    record("two-writers-short", run_rounds(real_store, tmp_path, rounds=1, search=False))


@pytest.mark.slow
def test_two_index_processes_at_once_many_rounds(real_store: RealStore, tmp_path: Path) -> None:
    rounds = int(os.environ.get("GRANRAG_WRITER_ROUNDS", "10"))
    record("two-writers", run_rounds(real_store, tmp_path, rounds=rounds))
