"""Bridge questions from answer names, found without the concept graph."""

from __future__ import annotations

from granrag_mcp.evaluation.bridge_spans import (
    answered,
    bridges,
    frequent_names,
    name_words,
    names_by_sentence,
    proper_names,
    span_names,
)

SENTENCES = [
    "Marie Curie worked in Paris.",
    "In 1903 Marie Curie won a prize.",
    "Paris hosted the Exposition.",
    "The Exposition drew Gustave Eiffel.",
    "Gustave Eiffel built a tower.",
    "Five engineers met in June.",
]


def test_answer_spans_that_look_like_names_are_kept() -> None:
    names = span_names(["Marie Curie", "the Exposition", "1889", "Five", "June", "a tower", "Houston, Texas"])
    assert names == {("Marie", "Curie"), ("Exposition",), ("Five",)}
    assert proper_names(names, SENTENCES) == {("Marie", "Curie"), ("Exposition",)}  # "Five" only starts one
    assert name_words("John F. Kennedy") == ("John", "F", "Kennedy")


def test_a_bridge_links_two_names_that_never_meet_through_exactly_one_name() -> None:
    names = {("Marie", "Curie"), ("Paris",), ("Exposition",), ("Gustave", "Eiffel")}
    held = names_by_sentence(SENTENCES, names)
    assert set(frequent_names(names, held)) == {"Marie Curie", "Paris", "Exposition", "Gustave Eiffel"}
    found = {(b.a, b.b, b.link) for b in bridges(names, held, 10)}
    assert ("Exposition", "Marie Curie", "Paris") in found
    assert ("Gustave Eiffel", "Paris", "Exposition") in found
    assert not any(b == "Marie Curie" and a == "Gustave Eiffel" for a, b, _ in found)  # two links apart


def test_a_bridge_is_answered_only_by_both_linking_sentences() -> None:
    names = {("Marie", "Curie"), ("Paris",), ("Exposition",)}
    bridge = next(b for b in bridges(names, names_by_sentence(SENTENCES, names), 5) if b.link == "Paris")
    assert answered(bridge, [SENTENCES[0], SENTENCES[2]])
    assert not answered(bridge, [SENTENCES[0], SENTENCES[1]])
