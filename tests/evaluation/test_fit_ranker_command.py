"""`granrag-mcp eval --fit-ranker` end to end: two SQuAD articles, the real model and FAISS."""

from __future__ import annotations

import pytest

from granrag_mcp.retrieval.ranker_choice import STORE_RANKER_FILE
from granrag_mcp.store.store import Snapshot, read_current
from tests.evaluation.test_eval_smoke import SQUAD, run_eval

pytestmark = pytest.mark.skipif(not SQUAD.exists(), reason=f"shared dataset {SQUAD} not available")


def test_fit_ranker_reports_the_comparison_and_commits_only_a_winner(tmp_path, capsys):
    store = tmp_path / "store"
    code = run_eval(
        [
            "--squad",
            str(SQUAD),
            "--articles",
            "2",
            "--sample",
            "60",
            "--store",
            str(store),
            "--fit-ranker",
            "--no-chart",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "2-fold cross-validation across 2 documents" in out
    for row in ("HRR without ranker", "shipped ranker", "fitted ranker"):
        assert row in out
    snapshot = Snapshot.open(store)
    try:
        carried = STORE_RANKER_FILE in snapshot.manifest.files
    finally:
        snapshot.close()
    if "beats the shipped one" in out:
        assert carried and read_current(store).generation == "gen-000002"
    else:
        assert "not used, the store is unchanged" in out
        assert not carried and read_current(store).generation == "gen-000001"
