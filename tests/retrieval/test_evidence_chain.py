"""The part of an evidence chain that needs no store: the names a question asks about (the name runs and the
folding it compares names by are the word analysis's, tested in tests/text/)."""

from __future__ import annotations

import pytest

from granrag_mcp.retrieval.evidence_chain import names_of_question


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
