import pytest

from granrag_mcp.tokens import RememberedCounts, get_tokenizer

SAMPLES = [
    "plain ascii text, with punctuation.",
    "Héllo wörld — naïve café",
    "日本語のテキストと emoji 🎉🎉 mixed",
    "👩‍👩‍👧‍👦 family and flags 🇫🇷🇩🇪",
    "",
    "\n\n  spaces\tand\ttabs  \n",
]


@pytest.fixture(scope="module")
def tokenizer():
    return get_tokenizer()


def test_tokenizer_is_cl100k_loaded_offline(tokenizer):
    assert tokenizer.name == "cl100k_base"
    assert tokenizer.count("hello world") == 2


@pytest.mark.parametrize("text", SAMPLES)
def test_boundaries_are_exact_character_offsets(tokenizer, text):
    bounds = tokenizer.boundaries(text)
    assert bounds[0] == 0 and bounds[-1] == len(text)
    assert len(bounds) == tokenizer.count(text) + 1
    assert all(a <= b for a, b in zip(bounds, bounds[1:]))
    assert "".join(text[a:b] for a, b in zip(bounds, bounds[1:])) == text


def test_boundary_inside_a_multibyte_character_moves_to_its_end(tokenizer):
    text = "🎉"  # one character that cl100k splits into several byte tokens
    bounds = tokenizer.boundaries(text).tolist()
    assert tokenizer.count(text) > 1
    assert set(bounds) <= {0, 1}


def test_remembered_counts_agree_with_the_tokenizer_and_count_each_text_once() -> None:
    tokenizer = get_tokenizer()
    remembered = RememberedCounts(tokenizer, size=2)
    texts = ["The main span is 412 metres long.", "Zürich 漢字 🙂", "a"]
    assert [remembered.count(t) for t in texts] == [tokenizer.count(t) for t in texts]
    remembered.count(texts[2])
    assert remembered._count.cache_info().hits == 1
    assert list(remembered.boundaries(texts[1])) == list(tokenizer.boundaries(texts[1]))


def test_remembered_boundaries_are_computed_once_and_cannot_be_changed_by_a_caller() -> None:
    tokenizer = get_tokenizer()
    calls: list[str] = []

    class Counting:
        name = tokenizer.name
        count = staticmethod(tokenizer.count)

        @staticmethod
        def boundaries(text: str):
            calls.append(text)
            return tokenizer.boundaries(text)

    remembered = RememberedCounts(Counting(), boundary_size=1)  # type: ignore[arg-type]
    first = remembered.boundaries("a long broad chunk")
    assert remembered.boundaries("a long broad chunk") is first and calls == ["a long broad chunk"]
    with pytest.raises(ValueError):
        first[1] = 0
    remembered.boundaries("another text")
    remembered.boundaries("a long broad chunk")  # pushed out of a one-entry cache: computed again
    assert calls == ["a long broad chunk", "another text", "a long broad chunk"]
