"""`granrag-mcp eval` on several QA sets in one run: one table, store and report folder per set."""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from granrag_mcp.errors import InvalidInputError  # noqa: E402
from tests.evaluation.test_eval_smoke import run_eval  # noqa: E402
from tests.helpers import shared_file  # noqa: E402

SQUAD = shared_file("datasets/squad-v1.1-dev-a.json")
COVID = shared_file("datasets/covidqa-a.json")
pytestmark = pytest.mark.skipif(
    not (SQUAD.exists() and COVID.exists()), reason="the shared SQuAD-A and COVID-A datasets are not available"
)
FLAGS = ["--articles", "1", "--sample", "3", "--strategies", "BM25,Level", "--skip-graph", "--no-chart", "--quiet"]


def test_each_set_gets_its_own_store_report_and_table(tmp_path):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = run_eval(["--squad", str(SQUAD), "--squad", str(COVID), "--store", str(tmp_path / "stores"), *FLAGS,
                         "--out", str(tmp_path / "reports")])  # fmt: skip
    assert code == 0
    text = stdout.getvalue()
    assert text.index(SQUAD.name) < text.index(COVID.name) and text.count("BM25      mid") == 2
    for dataset in (SQUAD, COVID):
        metrics = json.loads((tmp_path / "reports" / dataset.stem / "metrics.json").read_text(encoding="utf-8"))
        assert metrics["run"]["qa_file"] == str(dataset) and metrics["run"]["questions_evaluated"] == 3
        assert metrics["store"]["path"] == str(tmp_path / "stores" / dataset.stem)
        assert metrics["store"]["documents"] == 1  # each corpus alone in its store


def test_sets_of_one_name_and_a_fit_over_several_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="different names"):
        run_eval(["--squad", str(SQUAD), str(SQUAD), "--store", str(tmp_path), *FLAGS])
    with pytest.raises(InvalidInputError, match="one --squad file"):
        run_eval(["--squad", str(SQUAD), str(COVID), "--store", str(tmp_path), "--fit-ranker", *FLAGS])
