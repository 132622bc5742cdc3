"""Sentence splitting: exact sentences for the hard cases, and span invariants on any text."""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from granrag_mcp.indexing.sentences import split_sentences


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


ABBREVIATIONS = [
    ("Use a tool, e.g. a hammer. Then stop.", ["Use a tool, e.g. a hammer.", "Then stop."]),
    ("Languages, e.g. Python, are fun. Yes.", ["Languages, e.g. Python, are fun.", "Yes."]),
    ("One thing, i.e. the best one. Done.", ["One thing, i.e. the best one.", "Done."]),
    ("One thing, i.e. This one. Done.", ["One thing, i.e. This one.", "Done."]),
    ("Apples, pears, etc. are fruit. Good.", ["Apples, pears, etc. are fruit.", "Good."]),
    ("I bought apples, pears, etc. Then I left.", ["I bought apples, pears, etc.", "Then I left."]),
    ("Dr. Smith arrived. He sat.", ["Dr. Smith arrived.", "He sat."]),
    ("Mr. and Mrs. Smith came. Ms. Jones too.", ["Mr. and Mrs. Smith came.", "Ms. Jones too."]),
    ("Prof. Jones lectured. It was long.", ["Prof. Jones lectured.", "It was long."]),
    ("We met at St. Paul's church. Nice.", ["We met at St. Paul's church.", "Nice."]),
    ("It was Ali vs. Frazier. A classic.", ["It was Ali vs. Frazier.", "A classic."]),
    ("Acme Inc. reported a loss. Shares fell.", ["Acme Inc. reported a loss.", "Shares fell."]),
    ("Widgets Ltd. was founded early. It grew.", ["Widgets Ltd. was founded early.", "It grew."]),
    (
        "Martin Luther King Jr. was born in 1929. He preached.",
        ["Martin Luther King Jr. was born in 1929.", "He preached."],
    ),
    ("John Smith Sr. retired. His son took over.", ["John Smith Sr. retired.", "His son took over."]),
    ("Room No. 5 is free. Take it.", ["Room No. 5 is free.", "Take it."]),
    ("No. I disagree.", ["No.", "I disagree."]),
    ("See Fig. 2 for details. It is clear.", ["See Fig. 2 for details.", "It is clear."]),
    ("It weighs approx. 5 kg. Heavy.", ["It weighs approx. 5 kg.", "Heavy."]),
    ("The U.S. economy grew. It was fast.", ["The U.S. economy grew.", "It was fast."]),
    (
        "The U.S. Senate and the U.K. Parliament met. They agreed.",
        ["The U.S. Senate and the U.K. Parliament met.", "They agreed."],
    ),
    ("He moved to the U.S. The weather was nice.", ["He moved to the U.S.", "The weather was nice."]),
    ("J. R. R. Tolkien wrote books. He died in 1973.", ["J. R. R. Tolkien wrote books.", "He died in 1973."]),
    ("The author, J. K. Rowling, lives in Edinburgh.", ["The author, J. K. Rowling, lives in Edinburgh."]),
    ("(Dr. Who) is a show. Watch it.", ["(Dr. Who) is a show.", "Watch it."]),
]

NUMBERS_AND_ELLIPSES = [
    ("Pi is 3.14 roughly. It is irrational.", ["Pi is 3.14 roughly.", "It is irrational."]),
    ("Pi is 3.14. It is irrational.", ["Pi is 3.14.", "It is irrational."]),
    ("Install v2.0.1 now. It is stable.", ["Install v2.0.1 now.", "It is stable."]),
    ("The deal was worth $4.5 million. It closed.", ["The deal was worth $4.5 million.", "It closed."]),
    ("Version 1.2.3-beta.4 is out. Try it.", ["Version 1.2.3-beta.4 is out.", "Try it."]),
    ("Wait... what happened here? Nobody knows.", ["Wait... what happened here?", "Nobody knows."]),
    ("He paused… and then spoke. Silence.", ["He paused… and then spoke.", "Silence."]),
    ("It ended... The next day was calm.", ["It ended...", "The next day was calm."]),
    ("Call 555.1234 today. We answer.", ["Call 555.1234 today.", "We answer."]),
]

PUNCTUATION = [
    ("Hello there. How are you? I am fine! Great.", ["Hello there.", "How are you?", "I am fine!", "Great."]),
    ("Really?! Yes. Wow!! Indeed?? Sure.", ["Really?!", "Yes.", "Wow!!", "Indeed??", "Sure."]),
    ('He said "Stop!" Then he left.', ['He said "Stop!"', "Then he left."]),
    ('"Stop!" he said. She ran.', ['"Stop!" he said.', "She ran."]),
    ("She said 'no.' Then she left.", ["She said 'no.'", "Then she left."]),
    ("“It works.” The tests passed.", ["“It works.”", "The tests passed."]),
    ("‘Fine.’ He nodded.", ["‘Fine.’", "He nodded."]),
    ("(This is a note.) Next sentence.", ["(This is a note.)", "Next sentence."]),
    ("[See above.] Then continue.", ["[See above.]", "Then continue."]),
    ('He asked "why?") Then left.', ['He asked "why?")', "Then left."]),
    ("Why? because I said so.", ["Why? because I said so."]),
    ("The end.", ["The end."]),
    ("No final punctuation here", ["No final punctuation here"]),
    ("Ends with spaces.   ", ["Ends with spaces."]),
    ("   Leading spaces. Second.", ["Leading spaces.", "Second."]),
    ("Tabs\tinside.\tSecond one.", ["Tabs\tinside.", "Second one."]),
    ("Go to example.com today. Now.", ["Go to example.com today.", "Now."]),
    ("Le café est fermé. Ça va? Oui.", ["Le café est fermé.", "Ça va?", "Oui."]),
    ("Ünïcödé ends. Émile starts.", ["Ünïcödé ends.", "Émile starts."]),
    ("Emoji are fun 🎉. Next 🚀 one!", ["Emoji are fun 🎉.", "Next 🚀 one!"]),
    ("Zahl 1. 2 folgt.", ["Zahl 1.", "2 folgt."]),
]

LINES = [
    ("Shopping:\n- eggs\n- milk", ["Shopping:", "- eggs", "- milk"]),
    ("Items\n* one\n* two", ["Items", "* one", "* two"]),
    ("Items\n• one\n• two", ["Items", "• one", "• two"]),
    ("Steps are\n1. open\n2. close", ["Steps are", "1. open", "2. close"]),
    ("Options\n1) first\n2) second", ["Options", "1) first", "2) second"]),
    ("Choices\na) apples\nb) pears", ["Choices", "a) apples", "b) pears"]),
    ("Indented list:\n  - nested one\n  - nested two", ["Indented list:", "- nested one", "- nested two"]),
    (
        "- an item that wraps\n  onto the next line\n- another",
        ["- an item that wraps\n  onto the next line", "- another"],
    ),
    ("First paragraph\n\nsecond paragraph", ["First paragraph", "second paragraph"]),
    ("First paragraph\n   \n\nsecond one", ["First paragraph", "second one"]),
    ("This text is wrapped\nacross two lines. Done.", ["This text is wrapped\nacross two lines.", "Done."]),
    ("wrapped at a comma,\nstill going. Yes.", ["wrapped at a comma,\nstill going.", "Yes."]),
    ("Note:\nThe server restarts.", ["Note:\nThe server restarts."]),
    ("It cost\n42 dollars.", ["It cost\n42 dollars."]),
    ("# Title\nSome text here.", ["# Title", "Some text here."]),
    ("# Title\nlowercase text here.", ["# Title", "lowercase text here."]),
    ("Intro text.\n## Section two\nBody.", ["Intro text.", "## Section two", "Body."]),
    ("Intro text without end\n### Heading\nBody", ["Intro text without end", "### Heading", "Body"]),
    ("#hashtag is not a heading", ["#hashtag is not a heading"]),
    ("A Title Line\nThe text starts here.", ["A Title Line", "The text starts here."]),
    ("Title\n=====\nText here.", ["Title\n=====", "Text here."]),
    ("Above\n\n---\n\nBelow", ["Above", "---", "Below"]),
    ("Dr.\nSmith came.", ["Dr.\nSmith came."]),
    ("One.\nTwo.\nthree.", ["One.", "Two.\nthree."]),
    ("Windows line.\r\nNext line.\r\n", ["Windows line.", "Next line."]),
    ("Hello.\u2028World.", ["Hello.", "World."]),
]

EMPTY = ["", " ", "\n", "\n\n\t  \r\n", "\u3000\u00a0"]


@pytest.mark.parametrize(("text", "expected"), ABBREVIATIONS)
def test_abbreviations_do_not_end_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(("text", "expected"), NUMBERS_AND_ELLIPSES)
def test_numbers_versions_and_ellipses(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(("text", "expected"), PUNCTUATION)
def test_terminal_punctuation_and_closing_quotes(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(("text", "expected"), LINES)
def test_line_breaks_lists_and_headings(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize("text", EMPTY)
def test_empty_or_whitespace_gives_nothing(text: str) -> None:
    assert split_sentences(text) == []


def test_text_without_punctuation_is_one_sentence() -> None:
    text = "  just some words without any punctuation at all  "
    assert split_sentences(text) == [(2, len(text) - 2)]


def test_spans_index_the_original_text() -> None:
    text = "  Hello.  World!\n\n- item"
    assert split_sentences(text) == [(2, 8), (10, 16), (18, 24)]


@pytest.mark.parametrize(
    "text",
    [
        "." * 300_000,
        "?!" * 150_000,
        "a" * 1_000_000,
        "\n" * 1_000_000,
        "Dr. " * 250_000,
        "a. " * 300_000,
        "word\n" * 200_000,
        "- " * 300_000,
        "U.S." * 200_000,
        ". " * 400_000,
    ],
    ids=[
        "dots",
        "interrobangs",
        "one-word",
        "newlines",
        "abbreviations",
        "short-sentences",
        "lines",
        "markers",
        "acronyms",
        "dot-space",
    ],
)
def test_pathological_input_does_not_hang(text: str) -> None:
    # A hang guard, not a speed target (the splitter is linear; quadratic behaviour would take hours here).
    with hang_guard(seconds=120):
        split_sentences(text)


def test_a_megabyte_of_prose_splits_into_many_sentences() -> None:
    paragraph = (
        "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. They talked about v2.0.1, e.g. the "
        "new release... it cost $4.5 million! Was it worth it?\nnobody knows. See Fig. 2.\n\n"
        "- an item\n- another item\n# Heading\n"
    )
    text = paragraph * (1_000_000 // len(paragraph))
    with hang_guard(seconds=120):
        spans = split_sentences(text)
    assert len(spans) > 10_000


@contextmanager
def hang_guard(seconds: int):
    def fail(*_):
        raise TimeoutError(f"no answer within {seconds} s: the splitter is not linear on this input")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --- properties -----------------------------------------------------------------------

FRAGMENTS = [
    ".",
    "!",
    "?",
    "?!",
    "...",
    "…",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "\u00a0",
    "\u2028",
    '"',
    "'",
    "”",
    "’",
    ")",
    "]",
    "(",
    "“",
    "- ",
    "* ",
    "• ",
    "1. ",
    "2) ",
    "a) ",
    "# ",
    "## ",
    "Dr.",
    "e.g.",
    "i.e.",
    "etc.",
    "U.S.",
    "No. 5",
    "Fig.",
    "J. ",
    "3.14",
    "v2.0.1",
    "---",
    "The",
    "the",
    "word",
    "Émile",
    "日本語",
    "🎉",
    "👩‍👩‍👧",
    "\u0301",
    "\x00",
    "\x1c",
]

unicode_text = st.text()
structured_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=60).map("".join)


def assert_span_invariants(text: str) -> None:
    spans = split_sentences(text)
    covered = [0] * len(text)
    previous_end = 0
    for start, end in spans:
        assert 0 <= previous_end <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip()
        for index in range(start, end):
            covered[index] += 1
        previous_end = end
    for index, char in enumerate(text):
        if not char.isspace():
            assert covered[index] == 1, (index, char)


@given(unicode_text)
@settings(max_examples=300)
def test_spans_are_ordered_stripped_and_cover_arbitrary_unicode(text: str) -> None:
    assert_span_invariants(text)


@given(structured_text)
@settings(max_examples=500)
def test_spans_are_ordered_stripped_and_cover_structured_text(text: str) -> None:
    assert_span_invariants(text)


@given(structured_text)
def test_splitting_is_deterministic(text: str) -> None:
    assert split_sentences(text) == split_sentences(text)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)).filter(lambda c: c not in ".!?…\n"), min_size=1))
def test_text_without_terminators_or_newlines_is_at_most_one_sentence(text: str) -> None:
    spans = split_sentences(text)
    if text.strip():
        assert spans == [(len(text) - len(text.lstrip()), len(text.rstrip()))]
    else:
        assert spans == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. The writer builds it. 2. It renames.", ["1. The writer builds it.", "2. It renames."]),
        ("Steps:\n1. Build.\n2. Rename the folder.", ["Steps:", "1. Build.", "2. Rename the folder."]),
        ("It ended in 2019. The next year began.", ["It ended in 2019.", "The next year began."]),
    ],
)
def test_a_list_number_stays_with_its_item(text, expected):
    assert [text[a:b] for a, b in split_sentences(text)] == expected


LEGAL_SENTENCE = (
    "If it is impossible for You to comply with any of the terms of this\n"
    "License with respect to some or all of the Covered Software due to\n"
    "statute, judicial order, or regulation then You must: (a) comply with\n"
    "the terms of this License to the maximum extent possible; and (b)\n"
    "describe the limitations and the code they affect."
)


def test_a_wrapped_line_before_a_capitalised_term_is_not_a_title() -> None:
    # a short line before a capital is still a title; a line as long as wrapped prose is not
    assert sentences("A Title Line\nThe text starts here.") == ["A Title Line", "The text starts here."]
    assert sentences(LEGAL_SENTENCE)[0].startswith(
        "If it is impossible for You to comply with any of the terms of this\n"
    )


def test_a_long_sentence_parts_at_its_enumeration_and_semicolons() -> None:
    assert sentences(LEGAL_SENTENCE) == [
        "If it is impossible for You to comply with any of the terms of this\n"
        "License with respect to some or all of the Covered Software due to\n"
        "statute, judicial order, or regulation then You must:",
        "(a) comply with\nthe terms of this License to the maximum extent possible; and",
        "(b)\ndescribe the limitations and the code they affect.",
    ]
    semicolons = "; ".join(f"the {n} clause names a distinct duty of the party here" for n in range(5)) + "."
    assert sentences(semicolons) == [semicolons]  # no enumeration: a scientific sentence's semicolons stay
    enumerated = "You must: (a) " + semicolons.replace("; the 2", "; and (b) the 2")
    assert len(sentences(enumerated)) == 5


def test_a_sentence_of_ordinary_length_keeps_its_semicolons_and_references() -> None:
    short = "The trial enrolled adults; children were excluded (a) by design."
    assert sentences(short) == [short]
    long = "As stated in Section 2.1(a) and paragraph 4(b) above, " + " ".join(["every word counts"] * 14) + "."
    assert sentences(long) == [long]  # an enumerator glued to a reference opens no clause


def test_a_clause_too_short_stays_with_its_neighbour() -> None:
    text = "x; " + " ".join(["long words of one clause"] * 9) + "; y."
    assert sentences(text) == [text]


def test_roman_numerals_open_list_items() -> None:
    text = "Rights include:\n i. the right to copy a Work;\n ii. moral rights of the author;\niii. publicity rights."
    assert sentences(text) == [
        "Rights include:",
        "i. the right to copy a Work;",
        "ii. moral rights of the author;",
        "iii. publicity rights.",
    ]


def test_a_field_label_after_a_long_line_opens_a_sentence() -> None:
    header = "Authors: Kin, Nathalie; Guerard, Pauline; Diancourt, Laure; Caro, Valerie\nDate: 2017-05-25"
    assert sentences(header) == [
        "Authors: Kin, Nathalie; Guerard, Pauline; Diancourt, Laure; Caro, Valerie",
        "Date: 2017-05-25",
    ]
