"""The parts of an evidence chain that need no store: the names a question asks about and the name runs."""

from __future__ import annotations

import pytest

from granrag_mcp.retrieval.evidence_chain import folded, name_runs, names_of_question


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("How is Nikola Tesla connected to the Edison Company?", ("Nikola Tesla", "the Edison Company")),
        ("What is the relationship between Warsaw and Chopin?", ("Warsaw", "Chopin")),
        ("how are lubricants related to ball bearings", ("lubricants", "ball bearings")),
        ("What connects Genghis Khan with Beijing?", ("Genghis Khan", "Beijing")),
    ],
)
def test_the_two_names_of_a_question(question: str, names: tuple[str, str]) -> None:
    assert names_of_question(question, view=None) == names  # type: ignore[arg-type] -- the forms need no view


def test_name_runs_join_connectors_and_skip_the_first_word_when_asked() -> None:
    text = "Then Charles de Gaulle met the University of Warsaw and Frédéric Chopin."
    assert name_runs(text) == ["Then Charles de Gaulle", "University of Warsaw", "Frédéric Chopin"]
    assert name_runs(text, first_word=False) == ["Charles de Gaulle", "University of Warsaw", "Frédéric Chopin"]


def test_folding_drops_case_and_accents() -> None:
    assert folded("Frédéric CHOPIN") == "frederic chopin"
