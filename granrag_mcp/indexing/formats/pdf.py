"""PDF: the text of each page (pypdf), pages separated by a blank line."""

from __future__ import annotations

import io
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, normalise_newlines


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs a warning for every small defect of a PDF; only its errors are worth showing."""
    pypdf_log = logging.getLogger("pypdf")
    previous_level = pypdf_log.level
    pypdf_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        pypdf_log.setLevel(previous_level)


def extract(path: Path, data: bytes) -> ExtractedText:
    from pypdf import PasswordType, PdfReader  # only a run that reads a PDF pays for importing it

    with _quiet_pypdf():
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
                raise ExtractionError(path, "encrypted PDF that needs a password")
            pages = [(page.extract_text() or "").strip() for page in reader.pages]
        except ExtractionError:
            raise
        except Exception as error:  # pypdf raises many types on damaged files
            raise ExtractionError(path, f"unreadable PDF ({type(error).__name__}: {error})") from error
    text = normalise_newlines("\n\n".join(page for page in pages if page))
    if not text.strip():
        raise ExtractionError(path, "no extractable text (scanned PDF?)")
    return ExtractedText(text, replaced_bytes=False)
