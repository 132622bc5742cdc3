"""A document's plain text, by the extractor its format registers (`formats`), with the hash of the bytes it came
from."""

from __future__ import annotations

import dataclasses
import hashlib

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile, read_file
from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.formats.base import ExtractedText

__all__ = ["ExtractedText", "extract_text"]


def extract_text(source: SourceFile) -> ExtractedText:
    """The document's text, or ExtractionError when it must be skipped.

    The file is read once, here, and its `content_hash` is of those very bytes: a file rewritten during the run is
    stored with the hash of the text that was indexed, so the next run sees the change.
    """
    data = read_file(source.path, source.roots, source.max_bytes)
    extractor = EXTRACTORS.get(source.suffix)
    if extractor is None:
        raise ExtractionError(source.path, f"unsupported file type {source.suffix!r}")
    try:
        extracted = extractor(source.path, data)
    except ExtractionError:
        raise
    except Exception as error:  # a library choking on one file is a warning about it, never an aborted run
        raise ExtractionError(source.path, f"unreadable ({type(error).__name__}: {error})") from error
    if not extracted.text.strip():
        raise ExtractionError(source.path, "no text")
    return dataclasses.replace(extracted, content_hash=hashlib.sha256(data).hexdigest())
