"""A document's plain text (.txt, .md, .pdf, .html), decoded by `decoding`, with the hash of the bytes it came from."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pypdf import PasswordType, PdfReader

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.decoding import byte_order_mark, decode
from granrag_mcp.indexing.discovery import SourceFile, read_file
from granrag_mcp.indexing.html import html_encoding, visible_text

_TEXT_SUFFIXES = {".txt", ".md"}
_HTML_SUFFIXES = {".html", ".htm"}
_BINARY_SNIFF_CHARS = 8192
_MAX_CONTROL_FRACTION = 0.30
_CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")  # tab, line feed, form feed and return are text


@dataclass(frozen=True)
class ExtractedText:
    text: str
    replaced_bytes: bool  # some bytes were not valid in the document's encoding
    encoding: str = field(default="utf-8", compare=False)  # Python codec name
    guessed_encoding: bool = field(default=False, compare=False)  # not UTF-8 and undeclared: the detector chose
    content_hash: str = field(default="", compare=False)  # SHA-256 of exactly the bytes the text came from


def extract_text(source: SourceFile) -> ExtractedText:
    """The document's text, or ExtractionError when it must be skipped.

    The file is read once, and its `content_hash` is of those very bytes: a file rewritten during the run is
    stored with the hash of the text that was indexed, so the next run sees the change.
    """
    data = read_file(source.path, source.roots, source.max_bytes)
    if source.suffix in _TEXT_SUFFIXES:
        extracted = _extract_plain(source.path, data)
    elif source.suffix == ".pdf":
        extracted = _extract_pdf(source.path, data)
    elif source.suffix in _HTML_SUFFIXES:
        extracted = _extract_html(source.path, data)
    else:
        raise ExtractionError(source.path, f"unsupported file type {source.suffix!r}")
    if not extracted.text.strip():
        raise ExtractionError(source.path, "no text")
    return dataclasses.replace(extracted, content_hash=hashlib.sha256(data).hexdigest())


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _extract_plain(path: Path, data: bytes) -> ExtractedText:
    text, extracted = _decode_text(path, data)
    head = text[:_BINARY_SNIFF_CHARS]
    if head and len(_CONTROL_CHARS.findall(head)) / len(head) > _MAX_CONTROL_FRACTION:
        raise ExtractionError(path, "looks binary")
    return dataclasses.replace(extracted, text=_normalise_newlines(text))


def _decode_text(path: Path, data: bytes, declared: str | None = None) -> tuple[str, ExtractedText]:
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


# --- PDF ----------------------------------------------------------------------------------


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


def _extract_pdf(path: Path, data: bytes) -> ExtractedText:
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
    text = _normalise_newlines("\n\n".join(page for page in pages if page))
    if not text.strip():
        raise ExtractionError(path, "no extractable text (scanned PDF?)")
    return ExtractedText(text, replaced_bytes=False)


# --- HTML ---------------------------------------------------------------------------------


def _extract_html(path: Path, data: bytes) -> ExtractedText:
    markup, extracted = _decode_text(path, data, html_encoding(data))
    try:
        text = visible_text(_normalise_newlines(markup))
    except Exception as error:  # html.parser is lenient; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return dataclasses.replace(extracted, text=text)
