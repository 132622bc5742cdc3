"""The formats' registry: discovery, extraction, messages and the CLI help all follow it."""

from __future__ import annotations

from pathlib import Path

import pytest

from granrag_mcp.cli import build_parser
from granrag_mcp.errors import NoDocumentsError
from granrag_mcp.indexing.discovery import SourceFile, discover
from granrag_mcp.indexing.extract import extract_text
from granrag_mcp.indexing.formats import EXTRACTORS, format_list, plain
from granrag_mcp.indexing.formats.base import ExtractedText
from tests.helpers import index


def shouting(path: Path, data: bytes) -> ExtractedText:
    """A made-up format: plain text, upper-cased."""
    extracted = plain.extract(path, data)
    return ExtractedText(extracted.text.upper(), extracted.replaced_bytes)


def test_the_message_lists_every_registered_suffix_in_order() -> None:
    assert format_list() == ".txt, .md, .pdf, .html or .htm"
    assert format_list("and").endswith(" and .htm")


def test_a_registered_format_is_discovered_and_extracted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "note.shout").write_text("quiet words", encoding="utf-8")
    assert discover([tmp_path]).files == []  # not a format yet
    monkeypatch.setitem(EXTRACTORS, ".shout", shouting)
    found = discover([tmp_path])
    assert found.files == [SourceFile(tmp_path / "note.shout", "note.shout", ".shout")]
    assert extract_text(found.files[0]).text == "QUIET WORDS"
    assert format_list().endswith(".htm or .shout")


def test_the_nothing_to_index_error_and_the_help_name_the_registered_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(EXTRACTORS, ".shout", shouting)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.docx").write_bytes(b"PK")
    with pytest.raises(NoDocumentsError, match=r"no \.txt, \.md, \.pdf, \.html, \.htm or \.shout file"):
        index(tmp_path / "docs", tmp_path / "store")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["index", "--help"])
    assert ".htm and .shout files" in " ".join(capsys.readouterr().out.split())
