"""The records shared by every stage: levels, chunks and their public ids."""

from __future__ import annotations

import re
from dataclasses import dataclass

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import LEVELS, Level, parent_of

MAX_QUERY_CHARS = 4000
"""Longest query a tool accepts."""

_EXAMPLES = [f"'{level}:{number}'" for level, number in zip(LEVELS, (12, 40, 311, 1024, 2048))]
EXAMPLE_IDS = f"{', '.join(_EXAMPLES[:-1])} or {_EXAMPLES[-1]}"
"""Chunk ids as messages show them: 'broad:12', 'mid:40' or 'narrow:311'."""
_CHUNK_ID = re.compile(rf"^({'|'.join(LEVELS)}):(\d{{1,18}})$")


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """A chunk as the chunker produces it: a span of a document at one level."""

    level: Level
    seq: int
    start: int
    end: int
    token_count: int
    parent_seq: int | None  # seq of the parent at the level above, None for broad


@dataclass(frozen=True, slots=True)
class Chunk:
    """A stored chunk. `text` is exactly `document_text[start:end]`."""

    id: int
    doc_id: str
    level: Level
    seq: int
    start: int
    end: int
    token_count: int
    parent_id: int | None
    text: str

    @property
    def public_id(self) -> str:
        return format_chunk_id(self.level, self.id)

    @property
    def public_parent_id(self) -> str | None:
        parent_level = parent_of(self.level)
        if parent_level is None or self.parent_id is None:
            return None
        return format_chunk_id(parent_level, self.parent_id)


def format_chunk_id(level: Level, chunk_id: int) -> str:
    return f"{level}:{chunk_id}"


def parse_chunk_id(value: str) -> tuple[Level, int]:
    """Parse a public id such as ``mid:42``; raise an error that says how to get valid ids."""
    match = _CHUNK_ID.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise InvalidInputError(
            f"malformed chunk id {value!r}: ids look like {EXAMPLE_IDS}; "
            "take them from the chunk_id field of a search result"
        )
    return match.group(1), int(match.group(2))  # type: ignore[return-value]
