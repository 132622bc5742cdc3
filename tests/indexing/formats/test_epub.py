from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import epub
from tests.indexing.formats.sections import outline

CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
PACKAGE = """<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0">
  <manifest>
    <item id="c2" href="text/two.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="text/one%20a.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
  </manifest>
  <spine><itemref idref="c1"/><itemref idref="css"/><itemref idref="c2"/></spine>
</package>"""
ONE = "<html><head><title>Book</title></head><body><h1>Chapter One</h1><p>It began.</p><h2>Part A</h2><p>a</p>"
TWO = "<html><head><title>Book</title></head><body><p>Untitled chapter opening line.</p><p>More.</p></body></html>"


def build_epub(chapters: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OEBPS/content.opf", PACKAGE)
        for name, markup in (chapters or {"OEBPS/text/one a.xhtml": ONE, "OEBPS/text/two.xhtml": TWO}).items():
            archive.writestr(name, markup)
    return buffer.getvalue()


def test_chapters_in_spine_order_with_their_headings_as_sections() -> None:
    extracted = epub.extract(Path("b.epub"), build_epub())
    assert extracted.text == "Chapter One\n\nIt began.\n\nPart A\n\na\n\nUntitled chapter opening line.\n\nMore."
    assert outline(extracted) == [(1, "Chapter One"), (2, "Part A"), (1, "Untitled chapter opening line.")]
    assert [s.start for s in extracted.sections] == [0, 24, 35]
    assert extracted.page_starts == ()


def test_a_broken_book_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="unreadable EPUB"):
        epub.extract(Path("b.epub"), b"not a zip")


def test_a_missing_spine_item_skips_that_chapter_not_the_book() -> None:
    extracted = epub.extract(Path("b.epub"), build_epub({"OEBPS/text/two.xhtml": TWO}))
    assert extracted.text == "Untitled chapter opening line.\n\nMore."
    assert outline(extracted) == [(1, "Untitled chapter opening line.")]
