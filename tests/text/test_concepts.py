"""Concept extraction: names (joins, initials, acronyms, dashes, possessives) and noun-phrase terms."""

from __future__ import annotations

import pytest

from granrag_mcp.text.concepts import ConceptMatcher, apart, extract, name_runs
from granrag_mcp.text.words import concept_key, folded


def keys(text: str) -> set[str]:
    return {key for key, _ in extract(text)}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("She studied at the University of Warsaw in 1990.", {"university of warsaw", "warsaw", "university"}),
        ("Charles de Gaulle spoke.", {"charle de gaulle", "gaulle"}),
        ("John F. Kennedy and John F Kennedy.", {"john f kennedy"}),
        ("The NFL's champions met.", {"nfl"}),
        ("It joined Austria–Hungary and Austria-Hungary.", {"austria-hungary"}),
        ("Tesla's laboratory burned.", {"tesla", "laboratory"}),
        ("They moved to New Orleans after World War I.", {"new orlean", "world war i"}),
        ("The Oriental Institute—a museum—opened.", {"oriental institute", "museum"}),
        ("Westinghouse Electric Manufacturing Company paid.", {"westinghouse electric manufacturing company"}),
        ("Rolling friction is weaker than sliding friction.", {"sliding friction"}),
        ("The engine produced power. They built motors.", {"engine", "power", "motor"}),
    ],
)
def test_names_and_terms_are_found(text: str, expected: set[str]) -> None:
    assert expected <= keys(text)


def test_no_concept_is_a_stop_word_a_number_a_date_or_a_leading_verb() -> None:
    found = keys("However, in March 1931 they built 20 bridges. The bridges were new.")
    assert {"bridge"} <= found
    assert not found & {"however", "march", "1931", "built", "built bridge", "new", "the bridge", "were"}


def test_one_key_for_case_plural_possessive_and_dash_variants() -> None:
    assert concept_key("Super Bowls") == concept_key("super bowl") == concept_key("Super Bowl's")
    assert concept_key("the Rhine") == concept_key("Rhine") == "rhine"
    assert concept_key("Austria–Hungary") == concept_key("Austria-Hungary")


def test_the_matcher_finds_nested_names_that_apart_keeps_from_linking() -> None:
    matcher = ConceptMatcher(["nikola tesla", "tesla", "motor"])
    spans = matcher.spans("Nikola Tesla's motors and Tesla")
    assert {hit for hit, _, _ in spans} == {0, 1, 2}
    pairs = apart(spans)
    assert (0, 2) in pairs and (1, 2) in pairs  # both link to the motor
    assert (0, 1) not in pairs  # a name and its own part overlap: never a link, wherever else they stand
    assert apart(matcher.spans("Nikola Tesla")) == []


def test_the_matcher_finds_every_key_of_a_run_whose_leading_words_are_no_key() -> None:
    matcher = ConceptMatcher(["alternating current motor", "current", "motor", "current motor design"])
    spans = matcher.spans("An alternating current motor design")
    assert spans == [(0, 1, 4), (1, 2, 3), (3, 2, 5), (2, 3, 4)]  # by first word, then by length
    assert matcher.spans("alternating current") == [(1, 1, 2)]  # a key's leading words alone are no match


def test_a_text_in_another_language_gives_its_names_but_no_english_terms() -> None:
    russian = "Старая мельница стояла на берегу реки. Иван Петров жил в Москве."
    found = {key for key, _ in extract(russian, "ru")}
    assert {"иван петров", "москве"} <= found
    assert not found & {"мельница", "берегу", "реки"}  # lower-case words: terms by English rules, left out
    assert extract("这座石桥建于明朝。附近的农民在桥下种植水稻。", "zh") == []
    assert keys("Rolling friction is weaker than sliding friction.") == {
        key for key, _ in extract("Rolling friction is weaker than sliding friction.", "en")
    }


def test_name_runs_join_connectors_and_skip_the_first_word_when_asked() -> None:
    text = "Then Charles de Gaulle met the University of Warsaw and Frédéric Chopin near the Bank of the Rhine."
    assert name_runs(text) == ["Then Charles de Gaulle", "University of Warsaw", "Frédéric Chopin", "Bank of the Rhine"]
    assert name_runs(text, first_word=False)[:3] == ["Charles de Gaulle", "University of Warsaw", "Frédéric Chopin"]
    assert name_runs("It met The Beatles and The.") == ["The Beatles"]  # a lone stop word is no name


def test_folding_a_text_drops_case_accents_and_dash_spellings_but_keeps_plurals() -> None:
    assert folded("Frédéric CHOPIN") == "frederic chopin"
    assert folded("Austria–Hungary’s Rivers") == "austria-hungary's rivers"
