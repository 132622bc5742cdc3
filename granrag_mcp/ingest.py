"""Finding the documents to index and extracting their plain text (.txt, .md, .pdf, .html)."""

from __future__ import annotations

import codecs
import dataclasses
import hashlib
import io
import logging
import os
import re
import stat
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from pypdf import PasswordType, PdfReader

from granrag_mcp.decoding import byte_order_mark, decode
from granrag_mcp.errors import GranragError

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = {".txt", ".md", ".pdf", ".html", ".htm"}

_TEXT_SUFFIXES = {".txt", ".md"}
_HTML_SUFFIXES = {".html", ".htm"}
_BINARY_SNIFF_CHARS = 8192
_MAX_CONTROL_FRACTION = 0.30
_CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")  # tab, line feed, form feed and return are text
# Never blocks on a FIFO and never makes a terminal the controlling one; the file type is checked once it is open.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


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
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # (path, reason): not a regular file, broken link


@dataclass(frozen=True)
class ExtractedText:
    text: str
    replaced_bytes: bool  # some bytes were not valid in the document's encoding
    encoding: str = field(default="utf-8", compare=False)  # Python codec name
    guessed_encoding: bool = field(default=False, compare=False)  # not UTF-8 and undeclared: the detector chose
    content_hash: str = field(default="", compare=False)  # SHA-256 of exactly the bytes the text came from


def file_hash(path: Path) -> str:
    """SHA-256 hex digest of the file's raw bytes, read in chunks; ExtractionError if it cannot be read."""
    with _reading(path) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def read_file(path: Path) -> bytes:
    """The bytes of a regular file; ExtractionError for anything else or when it cannot be read."""
    with _reading(path) as stream:
        return stream.read()


@contextmanager
def _reading(path: Path) -> Iterator[io.BufferedReader]:
    """`path` open for reading, if it is a regular file.

    A FIFO would block the run (and its writer lock) until someone writes to it, and a device may never end, so
    the type is checked before opening and again on the open descriptor, in case the path was replaced between.
    """
    try:
        kind = _not_regular(os.stat(path).st_mode)
        if kind:
            raise ExtractionError(path, f"not a regular file ({kind})")
        descriptor = os.open(path, _OPEN_FLAGS)
        try:
            kind = _not_regular(os.fstat(descriptor).st_mode)
            if kind:
                raise ExtractionError(path, f"not a regular file ({kind})")
            stream = os.fdopen(descriptor, "rb")
        except BaseException:
            os.close(descriptor)
            raise
        with stream:
            yield stream
    except OSError as error:
        reason = "it disappeared" if isinstance(error, FileNotFoundError) else error.strerror or str(error)
        raise ExtractionError(path, f"cannot be read ({reason})") from error


def _not_regular(mode: int) -> str | None:
    """What kind of file `mode` describes when it is not a regular file, else None."""
    if stat.S_ISREG(mode):
        return None
    kinds = [(stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
             (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder")]
    return next((name for test, name in kinds if test(mode)), "special file")


# --- discovery ----------------------------------------------------------------------------


def discover(paths: Sequence[Path]) -> Discovery:
    """The supported files under `paths` (folders walked recursively), sorted by doc id."""
    found = Discovery()
    taken: dict[str, Path] = {}
    for root in paths:
        if not root.exists():
            found.missing.append(root)
            continue
        for path, doc_id in _candidates(root, found.skipped):
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


def _candidates(root: Path, skipped: list[tuple[Path, str]]) -> Iterator[tuple[Path, str]]:
    """(path, doc_id) of every visible regular file at or under `root`; the others are added to `skipped`."""
    if root.is_dir():
        paths = [(path, path.relative_to(root).as_posix()) for path in _walk(root)]
    else:
        paths = [(root, root.name)]
    for path, doc_id in paths:
        reason = _why_not_a_file(path)
        if reason is None:
            yield path, doc_id
        else:
            # Not reported as missing: the caller treats a missing path as a typo on the command line.
            log.warning("skipped %s: %s", path, reason)
            skipped.append((path, reason))


def _why_not_a_file(path: Path) -> str | None:
    """Why `path` cannot be indexed without opening it (FIFOs, sockets, devices, broken links), else None."""
    try:
        kind = _not_regular(path.stat().st_mode)
    except FileNotFoundError:
        return "broken symbolic link" if path.is_symlink() else "it disappeared"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return None if kind is None else f"not a regular file ({kind})"


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
    """The document's text, or ExtractionError when it must be skipped.

    The file is read once, and its `content_hash` is of those very bytes: a file rewritten during the run is
    stored with the hash of the text that was indexed, so the next run sees the change.
    """
    data = read_file(source.path)
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

_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_CHARSET_SNIFF_BYTES = 4096
# Browsers read these labels as windows-1252, and so do we.
_WINDOWS_1252_ALIASES = {"latin-1", "iso8859-1", "ascii"}


def _extract_html(path: Path, data: bytes) -> ExtractedText:
    markup, extracted = _decode_text(path, data, _html_encoding(data))
    extractor = _VisibleTextExtractor()
    try:
        extractor.feed(_normalise_newlines(markup))
        extractor.close()
    except Exception as error:  # html.parser is lenient; this is a last resort
        raise ExtractionError(path, f"unreadable HTML ({type(error).__name__}: {error})") from error
    return dataclasses.replace(extracted, text=extractor.text())


def _html_encoding(data: bytes) -> str | None:
    """The codec named by a <meta charset>, if Python knows it; None otherwise."""
    declared = _META_CHARSET.search(data[:_CHARSET_SNIFF_BYTES])
    if declared is None:
        return None
    try:
        name = codecs.lookup(declared.group(1).decode("ascii")).name
    except LookupError:
        return None
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
_BLOCK_CONTAINERS = _PARAGRAPH_ELEMENTS | _LINE_ELEMENTS | {"ul", "ol", "dl", "li", "dd", "dt", "select"}
# Start tags that end an open element whose end tag may be left out, and what stops them from reaching it.
_IMPLIED_END = {
    "p": _PARAGRAPH_ELEMENTS | {"div", "ul", "ol", "dl", "li", "dd", "dt", "center", "summary", "figcaption"},
    "li": {"li"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "option": {"option", "optgroup"},
    "tr": {"tr"}, "td": {"td", "th", "tr"}, "th": {"td", "th", "tr"},
}
_IMPLIED_END_SCOPE = {
    "p": set(), "li": {"ul", "ol", "menu"}, "dt": {"dl"}, "dd": {"dl"}, "option": {"select", "datalist"},
    "tr": {"table"}, "td": {"table"}, "th": {"table"},
}
_COLLAPSIBLE_SPACE = re.compile(r"[ \t\n\f\xa0]+")
_CELL_SEPARATOR = " | "


def _hides(attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element's own attributes keep it off the screen: `hidden`, or an inline style with
    display:none or visibility:hidden. Such text is not what a reader sees, and is a place to plant instructions.

    Kept: hidden="until-found" (collapsed content that find-in-page opens) and aria-hidden (it hides an element
    from screen readers only; sighted readers still see it).
    """
    for name, value in attrs:
        if name == "hidden" and (value or "").strip().lower() != "until-found":
            return True
        if name == "style" and value and _style_hides(value):
            return True
    return False


def _style_hides(style: str) -> bool:
    properties: dict[str, str] = {}
    for declaration in style.split(";"):  # a later declaration of a property overrides an earlier one
        name, colon, value = declaration.partition(":")
        if colon:
            value = value.strip().lower()
            properties[name.strip().lower()] = value.removesuffix("!important").strip()
    return properties.get("display") == "none" or properties.get("visibility") in ("hidden", "collapse")


class _HiddenElement:
    """An element hidden by its attributes, followed through the tags inside it until it ends.

    html.parser does not build a tree, so its end is found the way a browser would for tidy markup: its own end
    tag, the end tag of a block that contains it, or a start tag that implies its end (a new <p> or <li>).
    """

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self._inside: list[str] = []

    def ended_by_start(self, tag: str) -> bool:
        scope = _IMPLIED_END_SCOPE.get(self.tag, set())
        if tag in _IMPLIED_END.get(self.tag, ()) and not scope.intersection(self._inside):
            return True
        if tag not in _VOID_ELEMENTS:
            self._inside.append(tag)
        return False

    def ended_by_end(self, tag: str) -> tuple[bool, bool]:
        """(whether the element ended, whether the end tag is an enclosing block's, still to be handled)."""
        if tag in self._inside:
            del self._inside[len(self._inside) - 1 - self._inside[::-1].index(tag) :]
            return False, False
        if tag == self.tag:
            return True, False
        if tag in _BLOCK_CONTAINERS or tag in ("body", "html"):
            return True, True
        return False, False  # a stray end tag: ignored, as a browser does


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
        self._hidden_element: _HiddenElement | None = None

    def text(self) -> str:
        body = "".join(self._parts).strip("\n")
        title = " ".join("".join(self._title).split())
        return f"{title}\n\n{body}" if title and body else title or body

    # -- tags --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._in_head and tag not in _HEAD_ELEMENTS:
            self._in_head = False  # the body started without </head>
        if self._hidden_element is not None:
            if not self._hidden_element.ended_by_start(tag):
                return
            self._hidden_element = None
        if _hides(attrs) and not self._hidden_depth and tag not in _HEAD_ELEMENTS:
            if tag not in _VOID_ELEMENTS:
                self._hidden_element = _HiddenElement(tag)
            return
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
        if self._hidden_element is not None:
            ended, enclosing = self._hidden_element.ended_by_end(tag)
            if ended:
                self._hidden_element = None
            if not enclosing:
                return
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
        elif self._hidden_depth or self._in_head or self._hidden_element is not None:
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
