"""EPUB e-books (.epub, read with zipfile and the HTML extractor): the documents of the spine in reading order,
each chapter's headings its sections (a chapter without one gets its first line as a level-1 section)."""

from __future__ import annotations

import io
import posixpath
import zipfile
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, Section, decode_text, normalise_newlines
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.html import html_encoding, markup_text

_CONTAINER = "META-INF/container.xml"
_MAX_TITLE = 120
_XHTML_TYPES = {"application/xhtml+xml", "text/html"}
MAX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024
"""A zip bomb is skipped: an e-book whose chapters unpack to more than this is not a book."""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def spine(archive: zipfile.ZipFile) -> list[str]:
    """The archive paths of the spine's XHTML documents, in reading order."""
    container = ElementTree.fromstring(archive.read(_CONTAINER))
    rootfile = next(e.get("full-path") for e in container.iter() if _local(e.tag) == "rootfile")
    if not rootfile:
        raise ValueError("container.xml names no package document")
    package = ElementTree.fromstring(archive.read(rootfile))
    base = posixpath.dirname(rootfile)
    manifest = {
        item.get("id"): (item.get("href") or "", item.get("media-type") or "")
        for item in package.iter()
        if _local(item.tag) == "item"
    }
    paths = []
    for itemref in (e for e in package.iter() if _local(e.tag) == "itemref"):
        href, media_type = manifest.get(itemref.get("idref"), ("", ""))
        if href and media_type in _XHTML_TYPES:
            paths.append(posixpath.normpath(posixpath.join(base, unquote(href))))
    return paths


def extract(path: Path, data: bytes) -> ExtractedText:
    builder = TextBuilder()
    replaced = False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            chapters = spine(archive)
            if sum(archive.getinfo(name).file_size for name in chapters) > MAX_UNCOMPRESSED_BYTES:
                raise ExtractionError(path, f"e-book unpacks to more than {MAX_UNCOMPRESSED_BYTES} bytes")
            for name in chapters:
                raw = archive.read(name)
                markup, decoded = decode_text(path, raw, html_encoding(raw))
                replaced = replaced or decoded.replaced_bytes
                chapter = markup_text(normalise_newlines(markup), with_title=False)
                if chapter.text and not chapter.sections:
                    first_line = chapter.text.lstrip("\n").split("\n", 1)[0].strip()[:_MAX_TITLE].strip()
                    start = chapter.text.find(first_line)
                    chapter = ExtractedText(chapter.text, False, sections=(Section(start, 1, first_line),))
                builder.embed(chapter)
    except ExtractionError:
        raise
    except Exception as error:  # zipfile, zlib and the XML parser raise many types on damaged files
        raise ExtractionError(path, f"unreadable EPUB ({type(error).__name__}: {error})") from error
    return builder.build(replaced)
