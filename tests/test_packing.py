from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from granrag_mcp.packing import Piece, cut, pack
from granrag_mcp.tokens import get_tokenizer

_TOKEN = re.compile(r"\s*\S+|\s+")


class WordTokenizer:
    """One token per word (with its leading spaces): easy to reason about in assertions."""

    def count(self, text: str) -> int:
        return len(_TOKEN.findall(text))

    def boundaries(self, text: str) -> list[int]:
        return [0] + [m.end() for m in _TOKEN.finditer(text)]


WORDS = WordTokenizer()


def words(n: int, word: str = "w") -> str:
    return " ".join(f"{word}{i}" for i in range(n))


# --- cut ------------------------------------------------------------------------------------------------------


def test_cut_keeps_a_text_that_fits() -> None:
    assert cut(words(5), 5, WORDS) == Piece(words(5), 5, False)


def test_cut_ends_at_a_token_boundary() -> None:
    piece = cut(words(10), 3, WORDS)
    assert piece == Piece("w0 w1 w2", 3, True)


def test_cut_to_zero_gives_an_empty_truncated_piece() -> None:
    assert cut(words(3), 0, WORDS) == Piece("", 0, True)


def test_cut_refuses_a_negative_budget() -> None:
    with pytest.raises(ValueError):
        cut("text", -1, WORDS)


# --- pack -----------------------------------------------------------------------------------------------------


def test_everything_fits() -> None:
    texts = [words(3), words(4), words(5)]
    packing = pack(texts, 100, WORDS)
    assert [p.text for p in packing.pieces] == texts
    assert not any(p.truncated for p in packing.pieces)
    assert packing.tokens_used == 12
    assert packing.omitted == 0


def test_whole_hits_first_then_one_truncated_then_the_rest_omitted() -> None:
    texts = [words(4, "a"), words(4, "b"), words(10, "c"), words(2, "d"), words(2, "e")]
    packing = pack(texts, 11, WORDS)
    assert [p.truncated for p in packing.pieces] == [False, False, True]
    assert packing.pieces[2].text == "c0 c1 c2"
    assert packing.tokens_used == 11
    assert packing.omitted == 2


def test_a_hit_is_not_skipped_for_a_smaller_later_one() -> None:
    # Order is rank order: a later, smaller hit never jumps the queue.
    packing = pack([words(2), words(50), words(1)], 10, WORDS)
    assert len(packing.pieces) == 2
    assert packing.pieces[1].truncated
    assert packing.omitted == 1


def test_exact_fit_is_not_truncated_and_the_next_is_omitted_when_nothing_remains() -> None:
    packing = pack([words(5), words(5)], 5, WORDS)
    assert [p.truncated for p in packing.pieces] == [False]
    assert packing.omitted == 1
    assert packing.tokens_used == 5


def test_first_hit_bigger_than_the_budget_is_cut_not_dropped() -> None:
    packing = pack([words(100)], 7, WORDS)
    assert packing.pieces == [Piece(words(7), 7, True)]
    assert packing.omitted == 0


def test_min_cut_leaves_out_a_stub() -> None:
    packing = pack([words(8), words(8)], 10, WORDS, min_cut=5)
    assert len(packing.pieces) == 1
    assert packing.omitted == 1


def test_empty_input() -> None:
    packing = pack([], 10, WORDS)
    assert packing.pieces == [] and packing.tokens_used == 0 and packing.omitted == 0


def test_zero_budget_returns_nothing() -> None:
    packing = pack([words(2)], 0, WORDS)
    assert packing.pieces == [] and packing.omitted == 1


@settings(max_examples=200)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=30), max_size=12),
    budget=st.integers(min_value=0, max_value=200),
)
def test_packing_invariants(lengths: list[int], budget: int) -> None:
    texts = [words(n, f"t{i}x") for i, n in enumerate(lengths)]
    packing = pack(texts, budget, WORDS)
    assert packing.tokens_used <= budget
    assert packing.tokens_used == sum(p.tokens for p in packing.pieces)
    assert len(packing.pieces) + packing.omitted == len(texts)
    for i, piece in enumerate(packing.pieces):
        assert texts[i].startswith(piece.text)
        assert piece.truncated == (piece.text != texts[i])
        assert piece.tokens == WORDS.count(piece.text)
    assert all(not p.truncated for p in packing.pieces[:-1])  # only the last may be cut
    if packing.omitted and packing.pieces and not packing.pieces[-1].truncated:
        # a text was left out whole only because nothing (or too little) was left for it
        assert budget - packing.tokens_used < max(WORDS.count(texts[len(packing.pieces)]), 1)


# --- the real tokenizer -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cl100k():
    return get_tokenizer()


@pytest.mark.parametrize(
    "text",
    [
        "The Zephyr Bridge was completed in 1931 by the engineer Ada Moreau. " * 20,
        "naïve café déjà vu — 東京タワーは1958年に完成した。🙂🚀 " * 15,
        "a" * 3000,
    ],
)
@pytest.mark.parametrize("budget", [1, 7, 50, 333])
def test_cut_with_cl100k_stays_within_the_budget_on_a_character_boundary(cl100k, text: str, budget: int) -> None:
    piece = cut(text, budget, cl100k)
    assert piece.truncated
    assert text.startswith(piece.text)
    assert piece.tokens == cl100k.count(piece.text) <= budget
    assert piece.tokens >= budget - 3  # close to the budget: cut at a boundary, not far before it
    piece.text.encode("utf-8")  # a whole number of characters


def test_pack_with_cl100k(cl100k) -> None:
    texts = [f"Sentence number {i} talks about lighthouses and their lenses." for i in range(40)]
    packing = pack(texts, 100, cl100k)
    assert packing.tokens_used <= 100
    assert packing.pieces[-1].truncated
    assert packing.omitted == 40 - len(packing.pieces)
