"""The write tools' progress: every stage the indexer reports has a share, and progress only grows."""

from __future__ import annotations

import threading
from pathlib import Path

from granrag_mcp.levels import LEVELS
from granrag_mcp.server.library.writes import STAGE_SHARES, WRITE_SHARE, Run, RunProgress
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.reliability.support import fake_settings, write_small_corpus


def test_every_stage_of_an_index_run_has_a_share_and_progress_only_grows(tmp_path: Path) -> None:
    reported: list[tuple[float, str]] = []
    run = Run(kind="index", targets=["docs"])
    progress = RunProgress(run, threading.Event(), lambda share, stage: reported.append((share, stage)))
    stages: list[str] = []
    record = progress.update

    def update(stage: str, done: int, total: int) -> None:
        stages.append(stage)
        record(stage, done, total)

    progress.update = update  # type: ignore[method-assign]
    corpus = write_small_corpus(tmp_path / "docs")
    summary = fake_index([corpus], fake_settings(tmp_path / "store"), FakeEmbedder(), progress=progress)

    assert summary.committed
    assert stages and set(stages) <= set(STAGE_SHARES), set(stages) - set(STAGE_SHARES)
    shares = [share for share, _ in reported]
    assert shares == sorted(shares)
    writes = [stage for _, stage in reported if stage.startswith("writing the new generation")]
    assert len(writes) == len(LEVELS)
    assert WRITE_SHARE[0] < run.progress <= WRITE_SHARE[1]
