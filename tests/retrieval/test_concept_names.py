"""Names as an agent writes them: exact keys, aliases, meaning, and errors with real near-matches only."""

from __future__ import annotations

import numpy as np
import pytest

from granrag_mcp.retrieval.concept_names import ConceptNames, UnknownConceptError
from granrag_mcp.text.concepts import ConceptMatcher
from granrag_mcp.text.words import concept_key

NAMES = [
    "Nikola Tesla",
    "World Meteorological Organization",
    "NFL",
    "National Football League",
    "Philip",
    "phyla",
    "China",
    "Westinghouse",
    "steam engine",
    "Company",
]


class FakeGraph:
    def __init__(self) -> None:
        self.names = np.array(NAMES)
        self.keys = np.array([concept_key(n) for n in NAMES])
        self.frequency = np.array([9, 4, 7, 3, 5, 2, 8, 6, 4, 50], np.int32)


def lookup() -> ConceptNames:
    graph = FakeGraph()
    return ConceptNames(graph, ConceptMatcher(str(k) for k in graph.keys))  # type: ignore[arg-type]


def no_meaning(_: str) -> np.ndarray:
    return np.zeros(2, np.float32)


def nearest_none(_vector: np.ndarray, _k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([6]), np.array([0.1])  # "China", far in meaning


@pytest.mark.parametrize(
    "name, expected, how",
    [
        ("nikola tesla", "Nikola Tesla", "exact"),
        ("Nikola Tesla's", "Nikola Tesla", "exact"),
        ("steam engines", "steam engine", "exact"),
        ("WMO", "World Meteorological Organization", "alias"),
        ("National Football League", "National Football League", "exact"),
        ("Tesla", "Nikola Tesla", "alias"),
        ("Westinghouse Electric Manufacturing Company", "Westinghouse", "alias"),
        ("The Westinghouse Company", "Westinghouse", "alias"),
    ],
)
def test_a_name_resolves_by_key_then_alias(name: str, expected: str, how: str) -> None:
    found = lookup().resolve(name, no_meaning, nearest_none)
    assert (NAMES[found.concept], found.how) == (expected, how)


def test_an_acronym_concept_is_found_from_its_expansion() -> None:
    names = lookup()
    assert NAMES[names.alias("Nippon Football League") or 0] == "NFL"


def test_a_name_close_in_meaning_resolves_by_its_embedding() -> None:
    found = lookup().resolve("the Serbian inventor", no_meaning, lambda v, k: (np.array([0]), np.array([0.9])))
    assert (found.concept, found.how) == (0, "meaning")


def test_an_unknown_name_suggests_only_real_near_matches() -> None:
    with pytest.raises(UnknownConceptError) as error:
        lookup().resolve("Philadelphia", no_meaning, nearest_none)
    message = str(error.value)
    assert "Philadelphia" in message and "search_narrow" in message
    assert not any(wrong in message for wrong in ("Philip", "phyla", "China"))
    with pytest.raises(UnknownConceptError, match="'Philip'"):
        lookup().resolve("Phillip", no_meaning, nearest_none)
    with pytest.raises(UnknownConceptError) as error:
        lookup().resolve("Zanzibar Engine Company", no_meaning, nearest_none)  # only its generic last word is a name
    assert "no concept is spelt or means nearly the same" in str(error.value)


@pytest.mark.parametrize("name", [":", "--", "?!"])
def test_punctuation_alone_is_an_unknown_concept_not_a_crash(name: str) -> None:
    with pytest.raises(UnknownConceptError, match="unknown concept"):
        lookup().resolve(name, no_meaning, nearest_none)
