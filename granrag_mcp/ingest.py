"""Finding the documents to index and extracting their plain text (.txt, .md, .pdf, .html)."""

from __future__ import annotations

import codecs
import hashlib
import io
import logging
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from pypdf import PasswordType, PdfReader

from granrag_mcp.errors import GranragError

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = {".txt", ".md", ".pdf", ".html", ".htm"}

_TEXT_SUFFIXES = {".txt", ".md"}
_HTML_SUFFIXES = {".html", ".htm"}
_BINARY_SNIFF_BYTES = 8192
_MAX_CONTROL_FRACTION = 0.30
_ALLOWED_CONTROL_BYTES = {0x09, 0x0A, 0x0C, 0x0D}
_NOT_CONTROL_BYTES = bytes(b for b in range(256) if not (b < 0x20 or b == 0x7F) or b in _ALLOWED_CONTROL_BYTES)


class ExtractionError(GranragError):
    """A document that cannot be turned into text; the index run skips it and goes on."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class SourceFile:
    path: Path
    doc_id: str  # POSIX path relative to the folder given on the command line
    suffix: str  # lowercased, with the dot


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    unsupported: list[Path] = field(default_factory=list)
    duplicates: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class ExtractedText:
    text: str
    replaced_bytes: bool  # some bytes were not valid in the document's encoding


def file_hash(path: Path) -> str:
    """SHA-256 hex digest of the file's raw bytes, read in chunks."""
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


# --- discovery ----------------------------------------------------------------------------


def discover(paths: Sequence[Path]) -> Discovery:
    """The supported files under `paths` (folders walked recursively), sorted by doc id."""
    found = Discovery()
    taken: dict[str, Path] = {}
    for root in paths:
        if not root.exists():
            found.missing.append(root)
            continue
        for path, doc_id in _candidates(root):
            suffix = path.suffix.lower()
            if suffix not in SUPPORTED_SUFFIXES:
                found.unsupported.append(path)
            elif doc_id in taken:
                log.warning("skipped %s: document id %r is already taken by %s", path, doc_id, taken[doc_id])
                found.duplicates.append(path)
            else:
                taken[doc_id] = path
                found.files.append(SourceFile(path=path, doc_id=doc_id, suffix=suffix))
    found.files.sort(key=lambda source: source.doc_id)
    return found


def _candidates(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, doc_id) of every visible regular file at or under `root`."""
    if not root.is_dir():
        yield root, root.name
        return
    for path in _walk(root):
        # Not reported as missing: the caller treats a missing path as a typo on the command line.
        if not path.exists():
            log.warning("skipped %s: broken symbolic link", path)
        elif not path.is_file():
            log.warning("skipped %s: not a regular file", path)
        else:
            yield path, path.relative_to(root).as_posix()


def _walk(root: Path) -> Iterator[Path]:
    """Files under `root`, depth first in name order, skipping hidden names and symlinked folders."""
    for folder, subfolders, filenames in os.walk(root, onerror=_log_walk_error, followlinks=False):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(folder, name)


def _log_walk_error(error: OSError) -> None:
    log.warning("skipped %s: %s", error.filename, error.strerror or error)


# --- extraction ---------------------------------------------------------------------------


def extract_text(source: SourceFile) -> ExtractedText:
    """The document's text, or ExtractionError when it must be skipped."""
    data = _read_bytes(source.path)
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
    return extracted


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ExtractionError(path, f"cannot be read ({error.strerror or error})") from error


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _extract_plain(path: Path, data: bytes) -> ExtractedText:
    if _looks_binary(data):
        raise ExtractionError(path, "looks binary")
    text, replaced = _decode(data, "utf-8")
    return ExtractedText(_normalise_newlines(text), replaced)


def _looks_binary(data: bytes) -> bool:
    head = data[:_BINARY_SNIFF_BYTES]
    if not head:
        return False
    if b"\x00" in head:
        return True
    control_count = len(head.translate(None, _NOT_CONTROL_BYTES))
    return control_count / len(head) > _MAX_CONTROL_FRACTION


def _decode(data: bytes, encoding: str) -> tuple[str, bool]:
    """Text and whether invalid bytes were replaced. A UTF-8 BOM is dropped."""
    if data.startswith(codecs.BOM_UTF8):
        encoding, data = "utf-8", data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode(encoding), False
    except UnicodeDecodeError:
        return data.decode(encoding, errors="replace"), True


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

_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_CHARSET_SNIFF_BYTES = 4096
# Browsers read these labels as windows-1252, and so do we.
_WINDOWS_1252_ALIASES = {"latin-1", "iso8859-1", "ascii"}


def _extract_html(path: Path, data: bytes) -> ExtractedText:
    markup, replaced = _decode(data, _html_encoding(data))
    extractor = _VisibleTextExtractor()
    try:
        extractor.feed(_normalise_newlines(markup))
        extractor.close()
    except Exception as error:  # html.parser is lenient; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return ExtractedText(extractor.text(), replaced)


def _html_encoding(data: bytes) -> str:
    """The codec named by a <meta charset>, if Python knows it; UTF-8 otherwise."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8"
    declared = _META_CHARSET.search(data[:_CHARSET_SNIFF_BYTES])
    if declared is None:
        return "utf-8"
    try:
        name = codecs.lookup(declared.group(1).decode("ascii")).name
    except LookupError:
        return "utf-8"
    if name in _WINDOWS_1252_ALIASES:
        return "cp1252"
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"  # a document that can declare it in ASCII is not UTF-16
    return name


_HIDDEN_ELEMENTS = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object"}
_HEAD_ELEMENTS = {"head", "title", "meta", "link", "base", "style", "script", "noscript", "template"}
_PARAGRAPH_ELEMENTS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "dl",
    "section", "article", "header", "footer", "nav", "aside", "main", "figure", "form",
    "fieldset", "hr", "address", "details", "hgroup", "menu",
}
_LINE_ELEMENTS = {
    "div", "li", "tr", "dt", "dd", "figcaption", "caption", "summary", "legend", "option",
    "thead", "tbody", "tfoot", "body", "html", "center", "textarea",
}
_CELL_ELEMENTS = {"td", "th"}
_VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_COLLAPSIBLE_SPACE = re.compile(r"[ \t\n\f\xa0]+")
_CELL_SEPARATOR = " | "


class _VisibleTextExtractor(HTMLParser):
    """Visible text: one block (paragraph, heading, list item, table row) per line.

    A paragraph-like element is set off by a blank line; a line-like one (div, li, tr,
    br) by a single line break. List items get a "- " or "1. " marker so that a sentence
    splitter sees them as separate items.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._parts: list[str] = []
        self._title: list[str] = []
        self._pending_newlines = 0
        self._pending_space = False
        self._after_space = True  # at the start of a line or after a space
        self._pending_marker = ""
        self._hidden_depth = 0
        self._pre_depth = 0
        self._pre_just_opened = False
        self._in_head = False
        self._in_title = False
        self._title_done = False
        self._list_counters: list[int | None] = []  # None for <ul>, next number for <ol>
        self._row_has_cell = False

    def text(self) -> str:
        body = "".join(self._parts).strip("\n")
        title = " ".join("".join(self._title).split())
        return f"{title}\n\n{body}" if title and body else title or body

    # -- tags --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._in_head and tag not in _HEAD_ELEMENTS:
            self._in_head = False  # the body started without </head>
        if tag == "head":
            self._in_head = True
        elif tag == "title" and not self._title_done and not self._hidden_depth:
            self._in_title = True
        elif tag in _HIDDEN_ELEMENTS:
            if tag not in _VOID_ELEMENTS:
                self._hidden_depth += 1
        elif self._hidden_depth or self._in_head:
            return
        elif tag == "br":
            self._pending_newlines = min(2, self._pending_newlines + 1)
            self._pending_space = False
        elif tag in ("ul", "ol"):
            self._list_counters.append(None if tag == "ul" else _ordered_list_start(attrs))
            self._request_break(2 if len(self._list_counters) == 1 else 1)
        elif tag == "li":
            self._request_break(1)
            self._start_list_item()
        elif tag in _CELL_ELEMENTS:
            if self._row_has_cell and not self._after_space and not self._pending_newlines:
                self._pending_space = False
                self._emit(_CELL_SEPARATOR, collapse=False)
            self._row_has_cell = True
        elif tag == "pre":
            self._request_paragraph_break()
            self._pre_depth += 1
            self._pre_just_opened = True
        elif tag in _PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in _LINE_ELEMENTS:
            self._request_break(1)
        if tag == "tr":
            self._row_has_cell = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self._in_head = False
        elif tag == "title" and self._in_title:
            self._in_title = False
            self._title_done = True
        elif tag in _HIDDEN_ELEMENTS:
            self._hidden_depth = max(0, self._hidden_depth - 1)
        elif self._hidden_depth or self._in_head:
            return
        elif tag in ("ul", "ol"):
            if self._list_counters:
                self._list_counters.pop()
            self._request_break(2 if not self._list_counters else 1)
        elif tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
            self._request_paragraph_break()
        elif tag in _PARAGRAPH_ELEMENTS:
            self._request_paragraph_break()
        elif tag in _LINE_ELEMENTS:
            self._request_break(1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_ELEMENTS:
            self.handle_endtag(tag)

    # -- text --

    def handle_data(self, data: str) -> None:
        if self._in_head and not self._in_title and not self._hidden_depth and data.strip():
            self._in_head = False  # text cannot live in <head>: the body started
        if self._in_title:
            self._title.append(data)
        elif self._hidden_depth or self._in_head:
            return
        elif self._pre_depth:
            if self._pre_just_opened and data.startswith("\n"):
                data = data[1:]  # HTML ignores a line break right after <pre>
            self._pre_just_opened = False
            self._emit(data, collapse=False)
        else:
            self._emit(data, collapse=True)

    def _start_list_item(self) -> None:
        if not self._list_counters:
            return
        number = self._list_counters[-1]
        if number is None:
            self._pending_marker = "- "
        else:
            self._pending_marker = f"{number}. "
            self._list_counters[-1] = number + 1

    def _request_break(self, newlines: int) -> None:
        self._pending_newlines = max(self._pending_newlines, newlines)
        self._pending_space = False

    def _request_paragraph_break(self) -> None:
        # Inside a list a paragraph is part of an item: keep items one per line.
        self._request_break(1 if self._list_counters else 2)

    def _emit(self, data: str, *, collapse: bool) -> None:
        trailing_space = False
        if collapse:
            data = _COLLAPSIBLE_SPACE.sub(" ", data)
            if data.startswith(" "):
                self._pending_space = True
            trailing_space = data.endswith(" ")
            data = data.strip(" ")
        if not data:
            return
        self._flush_pending_breaks()
        if self._pending_space and not self._after_space:
            self._parts.append(" ")
        self._parts.append(data)
        self._after_space = data[-1].isspace()
        self._pending_space = trailing_space

    def _flush_pending_breaks(self) -> None:
        # The list marker waits for the item's first text, so "<li><p>text" keeps them together.
        if self._pending_newlines and self._parts:
            last = self._parts[-1]
            already_there = len(last) - len(last.rstrip("\n"))  # <pre> text may end with a line break
            if self._pending_newlines > already_there:
                self._parts.append("\n" * (self._pending_newlines - already_there))
            self._after_space = True
        self._pending_newlines = 0
        if self._pending_marker:
            self._parts.append(self._pending_marker)
            self._pending_marker = ""
            self._after_space = True


def _ordered_list_start(attrs: list[tuple[str, str | None]]) -> int:
    for name, value in attrs:
        if name == "start" and value and value.strip().lstrip("-").isdigit():
            return int(value)
    return 1
