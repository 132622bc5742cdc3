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
from granrag_mcp.indexing.formats.archive import check_archive
from granrag_mcp.indexing.formats.base import ExtractedText, Section, decode_text, normalise_newlines
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.html import html_encoding, markup_text

_CONTAINER = "META-INF/container.xml"
_MAX_TITLE = 120
_XHTML_TYPES = {"application/xhtml+xml", "text/html"}
_PACKAGE_SUFFIXES = (".xml", ".opf", ".ncx")


def package_part(name: str) -> bool:
    """The parts read as XML trees (container, package document, table of contents), whose elements are counted;
    chapters go through the streaming HTML reader."""
    return name.lower().endswith(_PACKAGE_SUFFIXES)


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
        check_archive(path, data, package_part)
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            chapters = spine(archive)
            present = set(archive.namelist())
            for name in chapters:
                if name not in present:  # a spine item the book lacks: the other chapters still make the book
                    continue
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
