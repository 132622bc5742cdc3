"""CSV and TSV (stdlib csv): the rows as `header: value` lines (`rows`), the delimiter sniffed for .csv."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, decode_text, looks_binary, normalise_newlines
from granrag_mcp.indexing.formats.rows import row_lines

_SNIFF_CHARS = 16_384
_DELIMITERS = ",;\t|"
_FIELD_LIMIT = 2**31 - 1
"""A long quoted field is text, not an error; the limit is process-wide, so every call sets the same one."""


def _dialect(sample: str, path: Path) -> type[csv.Dialect] | csv.Dialect:
    if path.suffix.lower() == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS)
    except csv.Error:  # one column, or too irregular to tell: commas
        return csv.excel


def extract(path: Path, data: bytes) -> ExtractedText:
    text, extracted = decode_text(path, data)
    if looks_binary(text):
        raise ExtractionError(path, "looks binary")
    text = normalise_newlines(text)
    csv.field_size_limit(_FIELD_LIMIT)
    try:
        lines = row_lines(csv.reader(io.StringIO(text), _dialect(text[:_SNIFF_CHARS], path)))
    except csv.Error as error:
        raise ExtractionError(path, f"unreadable CSV ({error})") from error
    return dataclasses.replace(extracted, text="\n".join(lines))
