"""`eval` without its extra's modules: one line that names the install, before any indexing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.evaluation.fit_ranker import Dataset, fit_model
from granrag_mcp.retrieval.ranking.features import KNOWN_FEATURES
from tests.evaluation.test_eval_smoke import run_eval

INSTALL = r"pip install 'granrag-mcp\[eval\]'"


def squad_file(tmp_path: Path) -> Path:
    path = tmp_path / "squad.json"
    path.write_text('{"data": []}', encoding="utf-8")
    return path


def test_fit_ranker_without_scikit_learn_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # what an install without the eval extra sees
    store = tmp_path / "store"
    argv = ["--squad", str(squad_file(tmp_path)), "--store", str(store), "--fit-ranker", "--no-chart", "--quiet"]
    with pytest.raises(InvalidInputError, match=rf"^--fit-ranker needs scikit-learn: .*{INSTALL}") as caught:
        run_eval(argv)
    assert "\n" not in str(caught.value)
    assert not store.exists(), "the check comes before the corpus is indexed"


def test_the_chart_without_matplotlib_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = ["--squad", str(squad_file(tmp_path)), "--store", str(tmp_path / "store"), "--quiet"]
    with pytest.raises(InvalidInputError, match=rf"the chart needs matplotlib: .*{INSTALL}.*--no-chart$"):
        run_eval(argv)


def test_fitting_without_scikit_learn_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn.linear_model", None)
    rows = 4
    data = Dataset(
        np.zeros((rows, len(KNOWN_FEATURES))),
        np.arange(rows, dtype=np.int32),
        np.zeros(rows, np.int32),
        np.array([True, False, True, False]),
        np.zeros(rows, np.int64),
        np.zeros(rows, bool),
        np.array(["a", "b", "c", "d"]),
    )
    with pytest.raises(InvalidInputError, match=INSTALL):
        fit_model(data, np.ones(rows, bool), KNOWN_FEATURES[:1])
