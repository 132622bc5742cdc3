"""Discovery of documents and extraction of their text."""

from __future__ import annotations

import codecs
import hashlib
import io
import logging
import os
import socket
import threading
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from granrag_mcp.errors import ExtractionError, GranragError
from granrag_mcp.indexing.discovery import (
    Discovery,
    SourceFile,
    discover,
    file_hash,
    read_file,
)
from granrag_mcp.indexing.extract import ExtractedText, extract_text
from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.formats.base import Section


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def source_for(path: Path) -> SourceFile:
    return SourceFile(path=path, doc_id=path.name, suffix=path.suffix.lower())


def extract(path: Path) -> ExtractedText:
    return extract_text(source_for(path))


def doc_ids(found: Discovery) -> list[str]:
    return [f.doc_id for f in found.files]


# --- hashing ------------------------------------------------------------------------------


def test_file_hash_is_sha256_of_the_raw_bytes(tmp_path: Path) -> None:
    content = os.urandom(3 * 1024 * 1024 + 17)
    path = write(tmp_path / "blob.txt", content)
    assert file_hash(path) == hashlib.sha256(content).hexdigest()


def test_file_hash_of_an_empty_file(tmp_path: Path) -> None:
    assert file_hash(write(tmp_path / "empty.md", b"")) == hashlib.sha256(b"").hexdigest()


# --- discovery ----------------------------------------------------------------------------


def test_folder_is_walked_recursively_with_relative_posix_doc_ids(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "b.md", "b")
    write(docs / "a" / "b.md", "ab")
    write(docs / "a" / "deeper" / "c.txt", "c")
    write(docs / "z.PDF", b"%PDF")
    write(docs / "page.HTM", "<p>x</p>")
    found = discover([docs])
    assert doc_ids(found) == ["a/b.md", "a/deeper/c.txt", "b.md", "page.HTM", "z.PDF"]
    assert [f.suffix for f in found.files] == [".md", ".txt", ".md", ".htm", ".pdf"]
    assert found.files[0].path == docs / "a" / "b.md"
    assert found.unsupported == found.duplicates == found.missing == []


def test_a_file_given_directly_gets_its_name_as_doc_id(tmp_path: Path) -> None:
    path = write(tmp_path / "nested" / "deep" / "notes.md", "hi")
    found = discover([path])
    assert found.files == [SourceFile(path=path, doc_id="notes.md", suffix=".md")]


def test_files_and_folders_mixed_are_sorted_by_doc_id(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "m.md", "m")
    lone = write(tmp_path / "elsewhere" / "a.txt", "a")
    found = discover([tmp_path / "docs", lone])
    assert doc_ids(found) == ["a.txt", "m.md"]


def test_hidden_files_and_folders_are_skipped_silently(tmp_path: Path) -> None:
    write(tmp_path / "visible.md", "v")
    write(tmp_path / ".hidden.md", "h")
    write(tmp_path / ".git" / "notes.md", "g")
    write(tmp_path / "sub" / ".secret" / "x.txt", "s")
    write(tmp_path / "sub" / "ok.txt", "o")
    found = discover([tmp_path])
    assert doc_ids(found) == ["sub/ok.txt", "visible.md"]
    assert found.unsupported == []


def test_unsupported_suffixes_are_counted(tmp_path: Path) -> None:
    write(tmp_path / "keep.md", "k")
    image = write(tmp_path / "image.svg", b"<svg/>")
    data = write(tmp_path / "sub" / "data.parquet", "PAR1")
    no_suffix = write(tmp_path / "README", "r")
    found = discover([tmp_path])
    assert doc_ids(found) == ["keep.md"]
    assert sorted(found.unsupported) == sorted([image, data, no_suffix])


def test_a_lone_file_with_an_unsupported_suffix_is_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "report.pages", b"PK")
    found = discover([path])
    assert found.files == []
    assert found.unsupported == [path]


@pytest.mark.parametrize("suffix", sorted(EXTRACTORS))
def test_every_supported_suffix_matches_case_insensitively(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"doc{suffix.upper()}", b"x")
    assert discover([path]).files[0].suffix == suffix


def test_duplicate_doc_ids_from_two_roots_keep_the_first(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = write(tmp_path / "one" / "guide" / "intro.md", "1")
    second = write(tmp_path / "two" / "guide" / "intro.md", "2")
    write(tmp_path / "two" / "other.md", "o")
    with caplog.at_level(logging.WARNING, logger="granrag_mcp.indexing"):
        found = discover([tmp_path / "one", tmp_path / "two"])
    assert doc_ids(found) == ["guide/intro.md", "other.md"]
    assert found.files[0].path == first
    assert found.duplicates == [second]
    message = caplog.text
    assert str(first) in message and str(second) in message


def test_a_lone_file_that_collides_with_a_folder_entry_is_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "a.md", "folder")
    lone = write(tmp_path / "other" / "a.md", "lone")
    found = discover([tmp_path / "docs", lone])
    assert doc_ids(found) == ["a.md"]
    assert found.duplicates == [lone]


def test_missing_paths_are_reported(tmp_path: Path) -> None:
    write(tmp_path / "real.md", "r")
    ghost = tmp_path / "ghost"
    ghost_file = tmp_path / "nope.md"
    found = discover([tmp_path / "real.md", ghost, ghost_file])
    assert doc_ids(found) == ["real.md"]
    assert found.missing == [ghost, ghost_file]


def test_empty_folder_finds_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    found = discover([tmp_path / "empty"])
    assert found == Discovery()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinked_folders_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.md", "s")
    docs = tmp_path / "docs"
    write(docs / "real.md", "r")
    try:
        (docs / "link").symlink_to(outside, target_is_directory=True)
    except OSError:
        pytest.skip("cannot create symlinks here")
    assert doc_ids(discover([docs])) == ["real.md"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_broken_symlink_in_a_folder_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    write(docs / "real.md", "r")
    try:
        (docs / "dangling.md").symlink_to(tmp_path / "gone.md")
    except OSError:
        pytest.skip("cannot create symlinks here")
    with caplog.at_level(logging.WARNING, logger="granrag_mcp.indexing"):
        found = discover([docs])
    assert doc_ids(found) == ["real.md"]
    assert found.missing == [] and found.unsupported == []
    assert "dangling.md" in caplog.text


def test_discovery_is_deterministic(tmp_path: Path) -> None:
    for name in ["c.md", "a.md", "b/z.txt", "b/a.txt", "B/x.md"]:
        write(tmp_path / name, name)
    assert discover([tmp_path]) == discover([tmp_path])


# --- plain text ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".txt", ".md"])
def test_utf8_text_is_decoded(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"doc{suffix}", "Grüße, 日本語 and 🎉.\n".encode())
    assert extract(path) == ExtractedText("Grüße, 日本語 and 🎉.\n", replaced_bytes=False)


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    path = write(tmp_path / "bom.txt", b"\xef\xbb\xbfHello BOM")
    assert extract(path) == ExtractedText("Hello BOM", replaced_bytes=False)


def test_a_damaged_utf8_file_keeps_its_good_characters_and_is_flagged(tmp_path: Path) -> None:
    path = write(tmp_path / "damaged.txt", "Grüße aus Köln, ".encode() + b"\xff" + " naïve.".encode())
    extracted = extract(path)
    assert extracted == ExtractedText("Grüße aus Köln, \ufffd naïve.", replaced_bytes=True)
    assert (extracted.encoding, extracted.guessed_encoding) == ("utf-8", False)


@pytest.mark.parametrize(
    "text",
    ["café au lait", "Grüße aus Köln, naïve façade. Ça va très bien, “merci” beaucoup — 20 €."],
    ids=["short", "sentence"],
)
def test_latin1_and_windows_1252_text_is_decoded(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "latin1.txt", text.encode("cp1252"))
    extracted = extract(path)
    assert extracted == ExtractedText(text, replaced_bytes=False)
    assert (extracted.encoding, extracted.guessed_encoding) == ("cp1252", True)


def test_a_cyrillic_code_page_is_detected(tmp_path: Path) -> None:
    text = "Привет, мир! Как дела? Всё хорошо, спасибо большое."
    extracted = extract(write(tmp_path / "ru.txt", text.encode("cp1251")))
    assert extracted.text == text and not extracted.replaced_bytes


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-8"])
@pytest.mark.parametrize("suffix", [".txt", ".md"])
def test_unicode_text_with_a_byte_order_mark_is_decoded(tmp_path: Path, encoding: str, suffix: str) -> None:
    text = "Grüße, 日本語 and 🎉.\r\nSecond line.\n"
    path = write(tmp_path / f"bom{suffix}", "\ufeff".encode(encoding) + text.encode(encoding))
    extracted = extract(path)
    assert extracted == ExtractedText("Grüße, 日本語 and 🎉.\nSecond line.\n", replaced_bytes=False)
    assert extracted.encoding == encoding


def test_a_nul_character_in_utf16_text_is_binary_like_a_nul_byte(tmp_path: Path) -> None:
    path = write(tmp_path / "nul16.txt", codecs.BOM_UTF16_LE + "text with a NUL\x00 inside".encode("utf-16-le"))
    with pytest.raises(ExtractionError, match="looks binary"):
        extract(path)


def test_content_hash_is_of_the_bytes_that_were_extracted(tmp_path: Path) -> None:
    content = b"Hashed text."
    assert extract(write(tmp_path / "h.md", content)).content_hash == hashlib.sha256(content).hexdigest()


def test_invalid_utf8_after_a_bom_keeps_the_bom_out(tmp_path: Path) -> None:
    path = write(tmp_path / "mixed.md", b"\xef\xbb\xbfok \xff end")
    assert extract(path) == ExtractedText("ok \ufffd end", replaced_bytes=True)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"one\r\ntwo\r\n", "one\ntwo\n"),
        (b"old\rmac\r", "old\nmac\n"),
        (b"mixed\r\nends\rhere\n", "mixed\nends\nhere\n"),
        (b"blank\r\n\r\nline", "blank\n\nline"),
    ],
)
def test_line_endings_are_normalised(tmp_path: Path, raw: bytes, expected: str) -> None:
    assert extract(write(tmp_path / "crlf.txt", raw)).text == expected


def test_tabs_and_form_feeds_are_text(tmp_path: Path) -> None:
    path = write(tmp_path / "tabs.txt", b"a\tb\fc\n" * 100)
    assert extract(path).text.startswith("a\tb\fc\n")


@pytest.mark.parametrize(
    "content",
    [
        b"PK\x03\x04\x00\x00binary zip",
        b"text then a NUL\x00 byte",
        bytes(range(1, 32)) * 20,
        b"\x01\x02\x03\x04abc" * 50,
    ],
    ids=["zip", "nul", "controls", "mostly-controls"],
)
def test_binary_content_with_a_text_suffix_is_skipped(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path / "fake.txt", content)
    with pytest.raises(ExtractionError, match="looks binary") as caught:
        extract(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("suffix", [".txt", ".md", ".html"])
@pytest.mark.parametrize("position", [0, 100, 9000, 200_000])
def test_a_nul_byte_anywhere_makes_a_file_binary(tmp_path: Path, position: int, suffix: str) -> None:
    text = b"<p>" + b"a" * 250_000 + b"</p>"
    path = write(tmp_path / f"late{suffix}", text[:position] + b"\x00" + text[position:])
    with pytest.raises(ExtractionError, match="looks binary"):
        extract(path)


def test_a_few_control_characters_are_tolerated(tmp_path: Path) -> None:
    path = write(tmp_path / "bell.md", b"ring the bell \x07 now, please, friends")
    assert "bell" in extract(path).text


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n  ", b"\xef\xbb\xbf"], ids=["empty", "whitespace", "bom-only"])
def test_a_document_without_text_is_skipped(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path / "empty.md", content)
    with pytest.raises(ExtractionError, match="no text") as caught:
        extract(path)
    assert str(path) in str(caught.value)


def test_extraction_error_is_a_granrag_error_with_path_and_reason(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.txt", b"")
    with pytest.raises(GranragError) as caught:
        extract(path)
    assert isinstance(caught.value, ExtractionError)
    assert caught.value.path == path
    assert caught.value.reason == "no text"


def test_an_unreadable_file_is_an_extraction_error(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError, match="cannot be read"):
        extract(tmp_path / "vanished.md")


# --- HTML ---------------------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <title>  The   Page Title </title>
  <style>body { color: red; }</style>
  <script>var hidden = "<p>not text</p>";</script>
  <link rel="stylesheet" href="x.css">
</head>
<body>
  <!-- a comment that must vanish -->
  <nav><a href="/">Home</a> <a href="/about">About</a></nav>
  <h1>Main&nbsp;heading</h1>
  <p>First   paragraph with <b>bold</b>
     and <i>italic</i> text &amp; more. It&#8217;s fine &lt;really&gt;.</p>
  <div>A div</div><div>Another div</div>
  <ul>
    <li>apples</li>
    <li><p>pears</p></li>
  </ul>
  <ol><li>first</li><li>second</li></ol>
  <table>
    <tr><th>Name</th><th>Age</th></tr>
    <tr><td>Bob</td><td>32</td></tr>
  </table>
  <pre>
line one
    indented   line</pre>
  <p>a<br>b</p>
  <noscript>Please enable JavaScript</noscript>
  <template><p>template text</p></template>
  <svg><title>svg title</title><text>svg text</text></svg>
  <script>document.write("also hidden")</script>
  <p>The end.</p>
</body>
</html>
"""

EXPECTED_PAGE = """The Page Title

Home About

Main heading

First paragraph with bold and italic text & more. It’s fine <really>.

A div
Another div

- apples
- pears

1. first
2. second

Name | Age
Bob | 32

line one
    indented   line

a
b

The end."""


def test_html_visible_text_with_block_structure(tmp_path: Path) -> None:
    extracted = extract(write(tmp_path / "page.html", PAGE))
    heading = Section(EXPECTED_PAGE.index("Main heading"), 1, "Main heading")
    assert extracted == ExtractedText(EXPECTED_PAGE, replaced_bytes=False, sections=(heading,))


@pytest.mark.parametrize(
    "hidden",
    [
        "<script>secret()</script>",
        "<style>.secret{}</style>",
        "<noscript>secret</noscript>",
        "<template><b>secret</b></template>",
        "<svg><text>secret</text></svg>",
        "<!-- secret -->",
        "<!--[if IE]>secret<![endif]-->",
    ],
)
def test_html_hidden_content_is_dropped(tmp_path: Path, hidden: str) -> None:
    text = extract(write(tmp_path / "h.htm", f"<p>before {hidden} after</p>")).text
    assert text == "before after"
    assert "secret" not in text


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ("<p>Tom &amp; Jerry</p>", "Tom & Jerry"),
        ("<p>a&nbsp;b</p>", "a b"),
        ("<p>it&#8217;s &#x2014; &eacute;t&eacute;</p>", "it’s — été"),
        ("<p>&lt;tag&gt; &quot;q&quot;</p>", '<tag> "q"'),
        ("<p>A  \t lot\n\n  of   space</p>", "A lot of space"),
        ("<p>one</p><p>two</p>", "one\n\ntwo"),
        ("<h2>Heading</h2>text after", "Heading\n\ntext after"),
        ("<div>x</div><div>y</div>", "x\ny"),
        ("line<br>break<br/>again", "line\nbreak\nagain"),
        ("<p>Hello <em>big</em> world</p>", "Hello big world"),
        ("<p>no<b>space</b>between</p>", "nospacebetween"),
        ("<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "- a\n- b\n- c"),
        ('<ol start="3"><li>three</li><li>four</li></ol>', "3. three\n4. four"),
        ("<dl><dt>Term</dt><dd>Definition</dd></dl>", "Term\nDefinition"),
        ("<blockquote>Quoted</blockquote><p>Said</p>", "Quoted\n\nSaid"),
        ("<pre>\n  keep\n    this</pre>", "  keep\n    this"),
        ("<p>unclosed paragraph<p>next one", "unclosed paragraph\n\nnext one"),
        ("<html><head><title>Only head</title><p>implicit body</p>", "Only head\n\nimplicit body"),
        ("<head><title>T</title></head>plain body text", "T\n\nplain body text"),
        ("<title>Just a title</title>", "Just a title"),
        ("<p>x<img src='a.png' alt='pic'>y</p>", "xy"),
        ("<p>a</p><hr><p>b</p>", "a\n\nb"),
    ],
)
def test_html_text_rules(tmp_path: Path, markup: str, expected: str) -> None:
    assert extract(write(tmp_path / "t.html", markup)).text == expected


def test_html_without_visible_text_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "blank.html", "<html><head><script>x()</script></head><body> </body></html>")
    with pytest.raises(ExtractionError, match="no text"):
        extract(path)


def test_html_invalid_utf8_is_replaced_and_flagged(tmp_path: Path) -> None:
    extracted = extract(
        write(tmp_path / "bad.html", "<p>Grüße, bad \xff byte</p>".encode().replace(b"\xc3\xbf", b"\xff"))
    )
    assert extracted == ExtractedText("Grüße, bad \ufffd byte", replaced_bytes=True)


def test_undeclared_windows_1252_html_is_decoded(tmp_path: Path) -> None:
    extracted = extract(write(tmp_path / "w.html", "<p>Caf\xe9 cr\xe8me br\xfbl\xe9e</p>".encode("cp1252")))
    assert extracted == ExtractedText("Café crème brûlée", replaced_bytes=False)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-8"])
def test_html_with_a_byte_order_mark_is_decoded_by_it(tmp_path: Path, encoding: str) -> None:
    markup = '<html><head><meta charset="utf-8"><title>Ünïcode</title></head><body><p>日本語 text</p></body></html>'
    path = write(tmp_path / "bom.html", "\ufeff".encode(encoding) + markup.encode(encoding))
    extracted = extract(path)
    assert extracted == ExtractedText("Ünïcode\n\n日本語 text", replaced_bytes=False)
    assert extracted.encoding == encoding


def test_html_meta_charset_is_honoured(tmp_path: Path) -> None:
    markup = '<html><head><meta charset="iso-8859-1"><title>Caf\xe9</title></head><body><p>na\xefve</p>'
    extracted = extract(write(tmp_path / "latin.html", markup.encode("latin-1")))
    assert extracted == ExtractedText("Café\n\nnaïve", replaced_bytes=False)


def test_html_http_equiv_charset_is_honoured(tmp_path: Path) -> None:
    markup = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>\x93quoted\x94 \x80</p>'
    extracted = extract(write(tmp_path / "cp.htm", markup.encode("latin-1")))
    assert extracted.text == "“quoted” €"


def test_html_unknown_charset_falls_back_to_utf8(tmp_path: Path) -> None:
    markup = '<meta charset="no-such-codec"><p>Grüße</p>'
    assert extract(write(tmp_path / "u.html", markup)).text == "Grüße"


def test_html_crlf_is_normalised(tmp_path: Path) -> None:
    markup = b"<pre>one\r\ntwo\rthree</pre>"
    assert extract(write(tmp_path / "crlf.html", markup)).text == "one\ntwo\nthree"


# --- PDF ----------------------------------------------------------------------------------


def _escape_pdf_string(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def build_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one page per entry, each line drawn in Helvetica."""
    page_count = len(pages)
    font_number = 3 + 2 * page_count
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(page_count))
        + b"] /Count %d >>" % page_count,
    ]
    for index, lines in enumerate(pages):
        content_number = 4 + 2 * index
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content_number, font_number)
        )
        drawing = [b"BT", b"/F1 12 Tf", b"14 TL", b"72 720 Td"]
        for line in lines:
            drawing.append(b"(" + _escape_pdf_string(line) + b") Tj T*")
        drawing.append(b"ET")
        stream = b"\n".join(drawing)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_offset = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref_offset)
    return bytes(out)


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def encrypt_pdf(data: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_the_hand_built_pdf_is_valid_for_pypdf() -> None:
    reader = PdfReader(io.BytesIO(build_pdf([["Hello"]])), strict=True)
    assert len(reader.pages) == 1


def test_pdf_text_is_extracted(tmp_path: Path) -> None:
    path = write(tmp_path / "doc.pdf", build_pdf([["Hello PDF world.", "Second line here."]]))
    extracted = extract(path)
    assert extracted.replaced_bytes is False
    assert "Hello PDF world." in extracted.text
    assert "Second line here." in extracted.text
    assert extracted.text.index("Hello") < extracted.text.index("Second")


def test_pdf_pages_are_joined_with_a_blank_line(tmp_path: Path) -> None:
    path = write(tmp_path / "two.PDF", build_pdf([["Page one text."], ["Page two text."]]))
    assert extract(path).text == "Page one text.\n\nPage two text."


def test_pdf_blank_pages_add_no_empty_paragraphs(tmp_path: Path) -> None:
    path = write(tmp_path / "gap.pdf", build_pdf([["Before."], [], ["After."]]))
    assert extract(path).text == "Before.\n\nAfter."


def test_pdf_with_parentheses_and_accents(tmp_path: Path) -> None:
    path = write(tmp_path / "acc.pdf", build_pdf([["Caf\xe9 (open) daily."]]))
    assert "Café (open) daily." in extract(path).text


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not a pdf at all, just words",
        b"%PDF-1.4\n" + os.urandom(200),
        b"\x00\xff" * 64,
    ],
    ids=["empty", "words", "garbage-after-header", "binary"],
)
def test_corrupt_pdf_raises_naming_the_file(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path / "broken.pdf", content)
    with pytest.raises(ExtractionError) as caught:
        extract(path)
    assert str(path) in str(caught.value)


def test_truncated_pdf_raises_naming_the_file(tmp_path: Path) -> None:
    whole = build_pdf([["Complete sentence here."]])
    path = write(tmp_path / "cut.pdf", whole[: len(whole) // 3])
    with pytest.raises(ExtractionError) as caught:
        extract(path)
    assert str(path) in str(caught.value)


def test_scanned_pdf_without_text_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "scan.pdf", blank_pdf())
    with pytest.raises(ExtractionError, match=r"no text layer \(a scanned PDF\), and ") as caught:
        extract(path)
    assert str(path) in str(caught.value)


def test_pdf_encrypted_with_a_password_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "locked.pdf", encrypt_pdf(build_pdf([["Top secret."]]), user_password="hunter2"))
    with pytest.raises(ExtractionError, match="encrypted") as caught:
        extract(path)
    assert str(path) in str(caught.value)


def test_pdf_encrypted_with_an_empty_user_password_opens(tmp_path: Path) -> None:
    path = write(tmp_path / "owner-only.pdf", encrypt_pdf(build_pdf([["Readable text."]]), user_password=""))
    assert "Readable text." in extract(path).text


def test_a_pdf_with_a_bad_cross_reference_offset_is_recovered_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = build_pdf([["Recoverable text."]]).replace(b"startxref\n", b"startxref\n9")  # bad xref offset
    path = write(tmp_path / "noisy.pdf", broken)
    with caplog.at_level(logging.DEBUG):
        extracted = extract(path)
    assert extracted.text == "Recoverable text."
    assert extracted.page_starts == (0,)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_unsupported_suffix_cannot_be_extracted(tmp_path: Path) -> None:
    path = write(tmp_path / "x.pages", b"PK")
    with pytest.raises(ExtractionError, match="unsupported file type '.pages'"):
        extract_text(SourceFile(path=path, doc_id="x.pages", suffix=".pages"))


# --- hostile files: not regular, unreadable -----------------------------------------------


def make_fifo(path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    os.mkfifo(path)
    return path


def not_blocked_by(fifo: Path, action, *args):
    """Runs `action(*args)` in a thread; a call stuck opening the FIFO is released and the test fails."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = action(*args)
        except Exception as error:  # the outcome is checked by the caller
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a writer that goes away: the reader sees the end
        worker.join(10)
        pytest.fail(f"{action.__name__} blocked on the FIFO {fifo}")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome.get("value")


def test_a_fifo_given_directly_is_skipped_without_opening_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fifo = make_fifo(tmp_path / "pipe.md")
    real = write(tmp_path / "real.md", "r")
    with caplog.at_level(logging.WARNING, logger="granrag_mcp.indexing"):
        found = not_blocked_by(fifo, discover, [fifo, real])
    assert doc_ids(found) == ["real.md"]
    assert found.skipped == [(fifo, "not a regular file (FIFO)")]
    assert f"skipped {fifo}: not a regular file (FIFO)" in caplog.text


def test_non_regular_files_in_a_folder_are_skipped_and_listed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "real.md", "r")
    fifo = make_fifo(docs / "pipe.txt")
    found = discover([docs])
    assert doc_ids(found) == ["real.md"]
    assert found.skipped == [(fifo, "not a regular file (FIFO)")]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_link_to_a_device_given_directly_is_skipped(tmp_path: Path) -> None:
    link = tmp_path / "endless.txt"
    link.symlink_to("/dev/zero")
    found = discover([link])
    assert found.files == [] and found.skipped == [(link, "not a regular file (character device)")]


def test_a_unix_socket_is_skipped(tmp_path: Path) -> None:
    if not hasattr(socket, "AF_UNIX") or len(str(tmp_path)) > 90:
        pytest.skip("needs a short path for a unix socket")
    path = tmp_path / "s.md"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        found = discover([tmp_path])
    assert found.files == [] and found.skipped == [(path, "not a regular file (socket)")]


@pytest.mark.parametrize("reader", [file_hash, read_file], ids=["file_hash", "read_file"])
def test_reading_a_fifo_fails_at_once_instead_of_blocking(tmp_path: Path, reader) -> None:
    fifo = make_fifo(tmp_path / "pipe.md")
    with pytest.raises(ExtractionError, match=r"not a regular file \(FIFO\)"):
        not_blocked_by(fifo, reader, fifo)


def test_a_fifo_swapped_in_after_discovery_is_not_read(tmp_path: Path) -> None:
    path = write(tmp_path / "swapped.md", "was a file")
    found = discover([path])
    path.unlink()
    make_fifo(path)
    with pytest.raises(ExtractionError, match="not a regular file"):
        not_blocked_by(path, extract_text, found.files[0])


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("reader", [file_hash, read_file], ids=["file_hash", "read_file"])
def test_a_file_that_fails_to_read_is_an_extraction_error(tmp_path: Path, reader) -> None:
    link = tmp_path / "unreadable.txt"
    link.symlink_to("/proc/self/mem")  # a regular file whose first read fails with EIO, even for root
    with pytest.raises(ExtractionError, match="cannot be read") as caught:
        reader(link)
    assert caught.value.path == link


def test_a_file_that_disappeared_says_so(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError, match=r"cannot be read \(it disappeared\)"):
        file_hash(tmp_path / "gone.md")


# --- HTML hidden by its attributes --------------------------------------------------------


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ('<p>before <span style="display:none">secret</span> after</p>', "before after"),
        ('<p>before <span style="DISPLAY : None !important;">secret</span> after</p>', "before after"),
        ('<div style="color: red; visibility: hidden">secret</div><p>after</p>', "after"),
        ('<div style="visibility:collapse">secret</div>after', "after"),
        ("<div hidden>secret</div><p>after</p>", "after"),
        ('<div hidden=""><div>nested secret</div><p>more secret</p>secret</div>after', "after"),
        ("<div hidden>secret <b>bold secret</b></span> stray end tag</div>after", "after"),
        ("<p hidden>secret<p>visible", "visible"),
        ("<section><p hidden>secret</section><p>after</p>", "after"),
        ("<ul><li hidden>secret<li>shown</ul>", "- shown"),
        ("<ul><li hidden>secret<ul><li>nested secret</ul><li>shown</ul>", "- shown"),
        ("<table><tr><td>a<td hidden>secret<td>b</table>", "a | b"),
        ('<p style="display:none; display:block">shown</p>', "shown"),
        ('<div aria-hidden="true">shown</div>', "shown"),
        ('<div hidden="until-found">shown</div>', "shown"),
        ('<p>a<br hidden>b<img hidden alt="x"></p>', "ab"),  # a hidden <br> breaks nothing
        ("<div hidden/><p>after a self-closed hidden div</p>", "after a self-closed hidden div"),
    ],
)
def test_html_hidden_by_attributes_is_dropped(tmp_path: Path, markup: str, expected: str) -> None:
    assert extract(write(tmp_path / "hidden.html", markup)).text == expected


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("cp1252", "Crème brûlée à la française, déjà vu. " * 20),
        ("cp1252", "El niño comió piña en la montaña; ¿qué pasó después? Mañana será otro día. " * 5),
        ("cp1250", "Příliš žluťoučký kůň úpěl ďábelské ódy. Řeka teče přes město a lidé chodí po mostě. " * 5),
        ("cp1250", "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig. Szczęście i miłość. " * 5),
        ("cp1251", "Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация. " * 5),
    ],
    ids=["french", "spanish", "czech", "polish", "russian"],
)
def test_legacy_code_pages_are_told_apart(tmp_path: Path, encoding: str, text: str) -> None:
    extracted = extract(write(tmp_path / "legacy.txt", text.encode(encoding)))
    assert extracted.text == text and extracted.guessed_encoding


def test_a_long_legacy_file_is_decoded_whole_from_a_guess_on_its_start(tmp_path: Path) -> None:
    text = "Crème brûlée à la française, déjà vu. " * 4000 + "Dernière ligne: « fin »."  # well past the sample
    extracted = extract(write(tmp_path / "long.txt", text.encode("cp1252")))
    assert extracted.text == text and (extracted.encoding, extracted.replaced_bytes) == ("cp1252", False)


def test_a_legacy_file_whose_end_the_guess_cannot_decode_is_guessed_again_whole(tmp_path: Path) -> None:
    text = "Crème brûlée à la française, déjà vu. " * 4000
    data = text.encode("cp1252") + "Ѓ: конец файла.".encode("cp1251")  # 0x81 is not a windows-1252 byte
    extracted = extract(write(tmp_path / "mixed.txt", data))
    assert not extracted.replaced_bytes and extracted.text.startswith("Cr") and len(extracted.text) == len(data)
