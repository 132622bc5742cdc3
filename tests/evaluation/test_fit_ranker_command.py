"""`granrag-mcp eval --fit-ranker` end to end: two SQuAD articles, the real model and FAISS."""

from __future__ import annotations

import pytest

from granrag_mcp.retrieval.ranking.choice import STORE_RANKER_FILE
from granrag_mcp.retrieval.ranking.model import read_ranker
from granrag_mcp.store.store import Snapshot, read_current
from tests.evaluation.test_eval_smoke import SQUAD, run_eval

pytestmark = pytest.mark.skipif(not SQUAD.exists(), reason=f"shared dataset {SQUAD} not available")


@pytest.mark.parametrize("token_vectors", [False, True])
def test_fit_ranker_reports_the_comparison_and_commits_only_a_winner(tmp_path, capsys, monkeypatch, token_vectors):
    if token_vectors:  # the corpus is indexed with token vectors: the MaxSim variant is fitted and compared
        monkeypatch.setenv("GRANRAG_TOKEN_VECTORS", "1")
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
    assert ("with MaxSim (the store holds token vectors)" in out) == token_vectors
    for row in ("HRR without ranker", "shipped ranker", "fitted ranker"):
        assert row in out
    snapshot = Snapshot.open(store)
    try:
        carried = STORE_RANKER_FILE in snapshot.manifest.files
        assert (snapshot.token_vectors is not None) == token_vectors
        fitted = read_ranker(snapshot.folder / STORE_RANKER_FILE) if carried else None
    finally:
        snapshot.close()
    if "beats the shipped one" in out:
        assert carried and read_current(store).generation == "gen-000002"
        assert fitted is not None and fitted.hrr.needs_tokens == token_vectors
    else:
        assert "not used, the store is unchanged" in out
        assert not carried and read_current(store).generation == "gen-000001"
