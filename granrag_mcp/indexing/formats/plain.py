"""Plain text (.txt, and Markdown, whose markup reads well as it is): decoded, newlines normalised."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, decode_text, looks_binary, normalise_newlines


def extract(path: Path, data: bytes) -> ExtractedText:
    text, extracted = decode_text(path, data)
    if looks_binary(text):
        raise ExtractionError(path, "looks binary")
    return dataclasses.replace(extracted, text=normalise_newlines(text))
