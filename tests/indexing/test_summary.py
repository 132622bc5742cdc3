"""The index run's report of where its time went: each stage's wall and CPU seconds, children's CPU included."""

import subprocess
import sys

from granrag_mcp.indexing.summary import STAGES, IndexSummary, Stopwatch
from granrag_mcp.indexing.sync import LibrarySync
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import SMALL_CHUNKS, index, write_corpus

BUSY = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"


def test_a_stage_counts_the_cpu_of_a_child_it_waited_for(tmp_path):
    summary = IndexSummary(store=tmp_path)
    clock = Stopwatch(summary)
    with clock.stage("adapt"):
        subprocess.run([sys.executable, "-c", BUSY], check=True)
    with clock.stage("commit"):
        pass
    clock.done()
    assert summary.cpu_seconds["adapt"] >= 0.25  # the child's own CPU, not this process's waiting
    assert summary.seconds["adapt"] >= summary.cpu_seconds["adapt"] * 0.5
    assert 0 <= summary.cpu_seconds["commit"] < 0.1
    assert summary.total["cpu"] >= summary.cpu_seconds["adapt"] and summary.total["wall"] >= summary.seconds["adapt"]


def test_the_lines_and_the_table_name_the_same_stages_in_run_order(tmp_path):
    summary = IndexSummary(store=tmp_path)
    clock = Stopwatch(summary)
    for name in ("commit", "embed", "extract", "embed"):  # a stage entered twice adds up
        with clock.stage(name):
            pass
    clock.done()
    table = summary.stage_table()
    order = [stage.name for stage in STAGES]
    assert [row["stage"] for row in table] == sorted({"commit", "embed", "extract"}, key=order.index)
    lines = summary.stage_lines()
    assert [line.split()[1] for line in lines] == [row["stage"] for row in table] + ["total"]
    assert "workers read ahead" in lines[0]  # extract says what it overlaps
    assert all(row["cpu_s"] >= 0 and row["wall_s"] >= 0 for row in table)


def test_stage_names_are_unique():
    names = [stage.name for stage in STAGES]
    assert len(names) == len(set(names))


def test_an_index_run_times_its_stages_and_counts_its_extraction_workers(tmp_path):
    summary = index(write_corpus(tmp_path / "docs"), tmp_path / "store", graph=True)
    stages = [row["stage"] for row in summary.stage_table()]
    # In STAGES' order; the fixed chunker (SMALL_CHUNKS) plans no sentences of its own.
    assert stages == ["hash", "model", "extract", "embed", "chunk", "index", "graph", "adapt", "commit"]
    # A spawned worker imports the readers before its first document: CPU the run's own threads never spent.
    assert summary.cpu_seconds["extract"] > 0.05
    assert all(summary.cpu_seconds[name] >= 0 for name in stages)
    assert summary.total["wall"] >= max(summary.seconds.values())


def test_a_library_sync_logs_where_its_run_spent_its_time(tmp_path, caplog):
    folder = write_corpus(tmp_path / "notes")
    settings = Settings(
        store=tmp_path / "store",
        model="fake-hash-embedder",
        library=(folder,),
        graph=False,
        **SMALL_CHUNKS.model_dump(),
    )
    with caplog.at_level("INFO", logger="granrag_mcp.indexing.sync"):
        outcome = LibrarySync(settings, FakeEmbedder).sync()
    assert outcome.committed and outcome.summary is not None
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith(("stage ", "run "))]
    assert logged == outcome.summary.stage_lines() and any(line.split()[1] == "embed" for line in logged)
