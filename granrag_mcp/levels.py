"""The levels of the hierarchy, as data: their order, each one's parent and child, and the indices each has.

Code asks this registry instead of naming levels. Chunks nest: every chunk of a level lies inside one chunk of
the level above it. A technique names the roles it needs (`TOP`, `FINEST`, the parent of a level) rather than
the levels themselves, so adding a level touches this file and the chunker that builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Level = Literal["broad", "mid", "narrow"]
"""The level names, in order from the coarsest; also the `level` values of the tools' schemas."""

Index = Literal["dense", "lexical"]
"""The kinds of index a level can have: FAISS vectors, BM25."""


@dataclass(frozen=True, slots=True)
class LevelSpec:
    name: Level
    unit: str  # what one chunk of the level is, for messages and tool texts
    indices: tuple[Index, ...] = get_args(Index)


LEVEL_SPECS: tuple[LevelSpec, ...] = (
    LevelSpec("broad", "a long passage of overlapping token windows"),
    LevelSpec("mid", "a paragraph-sized chunk inside a broad one"),
    LevelSpec("narrow", "a sentence inside a mid chunk"),
)
LEVELS: tuple[Level, ...] = tuple(spec.name for spec in LEVEL_SPECS)
assert LEVELS == get_args(Level), "the registry and the Level type must list the same levels in the same order"

TOP: Level = LEVELS[0]
"""The coarsest level: its chunks have no parent."""
FINEST: Level = LEVELS[-1]
"""The finest level: its chunks have no children (sentences)."""


def parent_of(level: Level) -> Level | None:
    position = LEVELS.index(level)
    return LEVELS[position - 1] if position > 0 else None


def child_of(level: Level) -> Level | None:
    position = LEVELS.index(level)
    return LEVELS[position + 1] if position + 1 < len(LEVELS) else None


def is_finer(level: Level, than: Level) -> bool:
    return LEVELS.index(level) > LEVELS.index(than)


def levels_above(level: Level) -> tuple[Level, ...]:
    """The levels coarser than `level`, coarsest first."""
    return LEVELS[: LEVELS.index(level)]


def list_name(level: Level, index: Index) -> str:
    """The name of one ranked list in a fusion, such as ``narrow_dense``."""
    return f"{level}_{index}"


def level_list(conjunction: str = "and") -> str:
    """The level names for a message, coarsest first: "broad, mid and narrow"."""
    return f"{', '.join(LEVELS[:-1])} {conjunction} {LEVELS[-1]}"
