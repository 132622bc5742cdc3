"""What every format's extractor returns, and the decoding the text formats share."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.decoding import byte_order_mark, decode
from granrag_mcp.outline import Section as Section  # the record extractors fill; the store keeps it too


@dataclass(frozen=True)
class ExtractedText:
    text: str
    replaced_bytes: bool  # some bytes were not valid in the document's encoding
    encoding: str = field(default="utf-8", compare=False)  # Python codec name
    guessed_encoding: bool = field(default=False, compare=False)  # not UTF-8 and undeclared: the detector chose
    content_hash: str = field(default="", compare=False)  # SHA-256 of exactly the bytes the text came from
    sections: tuple[Section, ...] = ()  # headings in text order; empty where the format has none
    page_starts: tuple[int, ...] = ()  # offset of each page's first character, page 1 first; empty if unpaged


Extractor = Callable[[Path, bytes], ExtractedText]
"""A format's extractor: the file's path (for messages) and bytes to its text; ExtractionError to skip it."""

_BINARY_SNIFF_CHARS = 8192
_MAX_CONTROL_FRACTION = 0.30
_CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")  # tab, line feed, form feed and return are text


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_text(path: Path, data: bytes, declared: str | None = None) -> tuple[str, ExtractedText]:
    """The decoded text, and an ExtractedText saying how it was decoded (its text still to be filled in).

    A NUL is not text in any encoding we read: a file with one anywhere, raw or once decoded from UTF-16 or
    UTF-32, is skipped as binary. (UTF-16 without a byte-order mark cannot be told from binary, and is too.)
    """
    if byte_order_mark(data) is None and b"\x00" in data:
        raise ExtractionError(path, "looks binary (NUL bytes)")
    decoded = decode(data, declared)
    if "\x00" in decoded.text:
        raise ExtractionError(path, "looks binary (NUL characters)")
    return decoded.text, ExtractedText("", decoded.replaced, decoded.encoding, decoded.guessed)


def looks_binary(text: str) -> bool:
    """Whether the start of a decoded text is mostly control characters."""
    head = text[:_BINARY_SNIFF_CHARS]
    return bool(head) and len(_CONTROL_CHARS.findall(head)) / len(head) > _MAX_CONTROL_FRACTION
