"""A document's plain text, by the extractor its format registers (`formats`), with the hash of the bytes it came
from, read under the run's limits (`formats.limits`). Index runs call it in a bounded worker process
(`extract_pool`), never in the process that serves."""

from __future__ import annotations

import dataclasses
import hashlib

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile, read_file
from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.formats.base import ExtractedText, Extractor
from granrag_mcp.indexing.formats.limits import reading_limits
from granrag_mcp.indexing.formats.page_progress import PageListener, listening
from granrag_mcp.settings import LimitSettings

__all__ = ["ExtractedText", "extract_text"]

MAX_TITLE_CHARS = 300
"""A heading's title as an outline keeps it: a bookmark or heading of thousands of words is cut, with an ellipsis."""


def extract_text(
    source: SourceFile,
    limits: LimitSettings | None = None,
    extractor: Extractor | None = None,
    pages: PageListener | None = None,
) -> ExtractedText:
    """The document's text, or ExtractionError when it must be skipped.

    The file is read once, here, and its `content_hash` is of those very bytes: a file rewritten during the run is
    stored with the hash of the text that was indexed, so the next run sees the change. `limits`: what the
    document may unpack to, and its outline hold (None: the defaults). `extractor`: the reader the run's process
    registered for the suffix (None: this process's registry). `pages`: told the pages read so far, where the
    reader reads page by page (`formats.page_progress`).
    """
    limits = limits or LimitSettings()
    data = read_file(source.path, source.roots, source.max_bytes)
    extractor = extractor or EXTRACTORS.get(source.suffix)
    if extractor is None:
        raise ExtractionError(source.path, f"unsupported file type {source.suffix!r}")
    try:
        with reading_limits(limits), listening(pages):
            extracted = extractor(source.path, data)
    except ExtractionError:
        raise
    except MemoryError as error:  # a parser that wants more than the worker may have: the file, not the run
        raise ExtractionError(
            source.path,
            f"its extraction needed more memory than GRANRAG_EXTRACT_MEMORY_BYTES ({limits.extract_memory_bytes:,}) "
            "allows; raise it to index this file",
        ) from error
    except Exception as error:  # a library choking on one file is a warning about it, never an aborted run
        raise ExtractionError(source.path, f"unreadable ({type(error).__name__}: {error})") from error
    if not extracted.text.strip():
        raise ExtractionError(source.path, "no text")
    # The rest stay text: an outline is a table of the document, not a copy of it.
    sections = tuple(
        dataclasses.replace(section, title=section.title[:MAX_TITLE_CHARS].rstrip() + "…")
        if len(section.title) > MAX_TITLE_CHARS
        else section
        for section in extracted.sections[: limits.max_sections]
    )
    return dataclasses.replace(extracted, content_hash=hashlib.sha256(data).hexdigest(), sections=sections)
