"""The ranking adaptation in a child process: the same file as in the run's own process, errors raised."""

import json
import os
import shutil
import time

import numpy as np
import pytest

from granrag_mcp.indexing.adapt_beside import MIN_CORES_USED, Adapting, CoreMeter, KnownVectors
from granrag_mcp.store.adaptation import ADAPTATION_FILE
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index
from tests.indexing.test_adapt import prose_corpus


@pytest.fixture()
def generation(tmp_path):
    """A copy of an indexed generation without its adaptation file, its identity and its sentence count."""
    index(prose_corpus(tmp_path / "corpus"), tmp_path / "store", FakeEmbedder())
    snapshot = Snapshot.open(tmp_path / "store")
    folder = tmp_path / "draft" / "gen"
    shutil.copytree(snapshot.folder, folder)
    identity, sentences = snapshot.manifest.identity, snapshot.manifest.counts["narrow"]
    snapshot.close()
    written = json.loads((folder / ADAPTATION_FILE).read_text())
    (folder / ADAPTATION_FILE).unlink()
    return folder, identity, sentences, written


def without_seconds(adaptation):
    return {**adaptation, "measured": {k: v for k, v in adaptation["measured"].items() if k != "seconds"}}


def test_the_child_writes_the_adaptation_the_run_writes_in_its_own_process(generation):
    folder, identity, sentences, written = generation
    run = Adapting(folder, identity, FakeEmbedder(), threads=1, beside_from=0)
    run.start(sentences)
    assert run.child is not None  # it did run in a child process
    run.wait()
    run.close()
    again = json.loads((folder / ADAPTATION_FILE).read_text())
    assert without_seconds(again) == without_seconds(written)
    assert again["pseudo_queries"] >= 20


def test_a_small_store_adapts_in_the_runs_own_process(generation):
    folder, identity, sentences, written = generation
    run = Adapting(folder, identity, FakeEmbedder(), threads=1)
    run.start(sentences)
    assert run.child is None and not (folder / ADAPTATION_FILE).exists()
    run.wait()
    assert without_seconds(json.loads((folder / ADAPTATION_FILE).read_text())) == without_seconds(written)


def test_a_failing_child_is_raised_with_its_last_error_line(generation):
    folder, identity, sentences, _ = generation
    run = Adapting(folder, identity, FakeEmbedder(), threads=1, beside_from=0)
    run.start(sentences)
    (folder / "mid.faiss").unlink()  # gone before the child, still importing, opens the generation
    with pytest.raises(RuntimeError, match="the ranking adaptation failed"):
        run.wait()
    run.close()
    assert not (folder / ADAPTATION_FILE).exists()


def test_known_vectors_hand_out_theirs_and_refuse_any_other_text():
    known = KnownVectors("fake", 2, 16, {"a": np.array([1.0, 0.0], np.float32), "b": np.array([0.0, 1.0], np.float32)})
    assert known.embed(["b", "a"]).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert known.embed([]).shape == (0, 2)
    with pytest.raises(RuntimeError, match="no vector for 'c'"):
        known.embed(["a", "c"])


class SteadyMeter(CoreMeter):
    """A run that got `cores` cores so far."""

    def __init__(self, cores: float) -> None:
        super().__init__()
        self.cores = cores

    def cores_used(self) -> float:
        return self.cores


@pytest.mark.parametrize(("cores", "beside"), [(MIN_CORES_USED - 0.4, False), (MIN_CORES_USED + 0.4, True)])
def test_a_run_that_found_no_second_core_free_adapts_in_its_own_process(generation, cores, beside):
    folder, identity, sentences, written = generation
    run = Adapting(folder, identity, FakeEmbedder(), threads=1, beside_from=0, meter=SteadyMeter(cores))
    run.start(sentences)
    assert (run.child is not None) == beside
    run.wait()
    run.close()
    assert without_seconds(json.loads((folder / ADAPTATION_FILE).read_text())) == without_seconds(written)


def test_the_core_meter_reads_a_busy_process_as_using_cores_and_an_idle_one_as_not():
    busy = CoreMeter()
    until = time.perf_counter() + 0.2
    while time.perf_counter() < until:
        pass
    assert 0.05 < busy.cores_used() <= (os.cpu_count() or 1) + 0.1
    idle = CoreMeter()
    time.sleep(0.2)
    assert idle.cores_used() < 0.05
