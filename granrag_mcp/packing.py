"""Fit tool results into a token budget: whole texts first, then one text cut at a token boundary.

Pure functions over a tokenizer that can count tokens and give token boundaries as character offsets
(`granrag_mcp.tokens.Tokenizer`); no I/O, no knowledge of chunks or MCP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

MIN_CUT_TOKENS = 1
"""A text is cut rather than left out when at least this many tokens of budget remain."""


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...

    def boundaries(self, text: str) -> np.ndarray:
        """``n_tokens + 1`` character offsets, from 0 to ``len(text)``."""
        ...


@dataclass(frozen=True, slots=True)
class Piece:
    """What is returned of one text: all of it, or a prefix ending at a token boundary."""

    text: str
    tokens: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class Packing:
    pieces: list[Piece]  # one per returned text: the first len(pieces) of the input, in order
    tokens_used: int
    omitted: int  # texts left out entirely


def cut(text: str, budget: int, tokenizer: TokenCounter) -> Piece:
    """`text` if it fits in `budget` tokens, else its longest prefix that ends at a token boundary and fits."""
    if budget < 0:
        raise ValueError(f"the token budget must be >= 0, got {budget}")
    total = tokenizer.count(text)
    if total <= budget:
        return Piece(text, total, False)
    offsets = tokenizer.boundaries(text)
    keep = min(budget, len(offsets) - 1)
    while keep > 0:
        prefix = text[: int(offsets[keep])]
        used = tokenizer.count(prefix)  # a prefix can encode differently from the tokens it was cut after
        if used <= budget:
            return Piece(prefix, used, True)
        keep -= 1
    return Piece("", 0, True)


def pack(texts: Sequence[str], budget: int, tokenizer: TokenCounter, min_cut: int = MIN_CUT_TOKENS) -> Packing:
    """Keep whole texts, in order, while they fit; cut the first one that does not; leave out the rest.

    The first text is always returned (cut if need be) when the budget is at least `min_cut`, so a
    caller never gets nothing back for a tiny budget. A text is cut only if at least `min_cut` tokens
    remain; otherwise it and every later one count as omitted.
    """
    if budget < 0:
        raise ValueError(f"the token budget must be >= 0, got {budget}")
    pieces: list[Piece] = []
    used = 0
    for text in texts:
        remaining = budget - used
        piece = cut(text, remaining, tokenizer) if remaining >= min_cut else None
        if piece is None or (piece.truncated and not piece.text):
            break
        pieces.append(piece)
        used += piece.tokens
        if piece.truncated:
            break
    return Packing(pieces, used, len(texts) - len(pieces))
