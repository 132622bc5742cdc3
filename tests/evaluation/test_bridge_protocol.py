"""The bridge protocol: names are capitalised runs inside a sentence, a bridge A-C-B needs exactly one sentence
on each side and no other link, and a tool path answers only when both linking sentences come back whole."""

from __future__ import annotations

from granrag_mcp.evaluation.bridge_protocol import answered, find_bridges, sentence_names

SENTENCES = [
    "In the spring the young Marie Curie studied physics in Warsaw with great care.",
    "Later the physicist Marie Curie moved from Warsaw to the University of Paris.",
    "The city of Warsaw held a long festival for Frederic Chopin every year.",
    "The pianist Frederic Chopin wrote mazurkas that the Warsaw audience loved dearly.",
    "Warsaw is short.",
]


def test_names_are_capitalised_runs_past_the_first_word() -> None:
    names = sentence_names("Later the physicist Marie Curie moved from Warsaw to the University of Paris.")
    assert names == {"Marie Curie", "Warsaw", "University of Paris"}  # "Later" opens the sentence
    assert sentence_names("Warsaw is short.") == set()  # fewer than six words
    assert sentence_names("They met on a Monday in the Chopin Hall of Music.") == {"Chopin Hall of Music"}
    assert sentence_names("A small talk with Anne about the Nile river.") == set()  # under five characters


def test_a_bridge_needs_one_sentence_a_side_and_no_other_link() -> None:
    sentences = [
        "The painter Claude Monet admired the gardens of Giverny very much.",
        "The gardens of Giverny were restored by the Versailles Foundation in 1977.",
        "The painter Claude Monet wrote letters to friends about the weather.",
        "The donors of the Versailles Foundation met again in a quiet room.",
    ]
    bridges = find_bridges(sentences, 10)
    assert [(b.a, b.b, b.link) for b in bridges] == [("Claude Monet", "Versailles Foundation", "Giverny")]
    assert bridges[0].s1 == sentences[0] and bridges[0].s2 == sentences[1]
    assert bridges[0].question == "How is Claude Monet connected to Versailles Foundation?"
    # A second sentence naming Monet and Giverny: A and C no longer share exactly one sentence.
    assert find_bridges(sentences + ["In the end Claude Monet painted Giverny at dawn."], 10) == []


def test_a_link_named_twice_with_a_side_is_no_bridge() -> None:
    # Warsaw shares two sentences with Marie Curie and two with Frederic Chopin: no single linking sentence.
    assert not [b for b in find_bridges(SENTENCES, 10) if b.link == "Warsaw"]


def test_answered_only_with_both_sentences_whole() -> None:
    bridge = find_bridges(
        [
            "The painter Claude Monet admired the gardens of Giverny very much.",
            "The gardens of Giverny were restored by the Versailles Foundation in 1977.",
        ],
        1,
    )[0]
    assert answered(
        bridge, ["noise", bridge.s1, "The gardens  of Giverny were restored by the\nVersailles Foundation in 1977."]
    )
    assert not answered(bridge, [bridge.s1, bridge.s2[:30]])
