"""The formats' registry: discovery, extraction, messages, the CLI help and the README all follow it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from granrag_mcp.cli import build_parser
from granrag_mcp.errors import ExtractionError, NoDocumentsError
from granrag_mcp.indexing.discovery import SourceFile, discover
from granrag_mcp.indexing.extract import extract_text
from granrag_mcp.indexing.formats import EXTRACTORS, FORMATS, format_list, formats_table, plain
from granrag_mcp.indexing.formats.base import ExtractedText
from tests.helpers import index

README = Path(__file__).resolve().parents[3] / "README.md"


def shouting(path: Path, data: bytes) -> ExtractedText:
    """A made-up format: plain text, upper-cased."""
    extracted = plain.extract(path, data)
    return ExtractedText(extracted.text.upper(), extracted.replaced_bytes)


def test_the_message_lists_every_registered_suffix_in_order() -> None:
    suffixes = [suffix for fmt in FORMATS for suffix in fmt.suffixes]
    assert format_list() == f"{', '.join(suffixes[:-1])} or {suffixes[-1]}"
    assert format_list().startswith(".txt, .md, .markdown, .pdf, .html, .htm, .docx, .pptx, .xlsx, .csv")
    assert format_list("and").endswith(f" and {suffixes[-1]}")


def test_each_suffix_belongs_to_one_format() -> None:
    suffixes = [suffix for fmt in FORMATS for suffix in fmt.suffixes]
    assert len(suffixes) == len(set(suffixes)) == len(EXTRACTORS)
    assert all(re.fullmatch(r"\.[a-z0-9]+", suffix) for suffix in suffixes)


def test_the_readme_holds_the_generated_formats_table_with_every_suffix() -> None:
    readme = README.read_text(encoding="utf-8")
    assert formats_table() in readme, "regenerate it: from granrag_mcp.indexing.formats import formats_table"
    for suffix in EXTRACTORS:
        assert f"`{suffix}`" in readme


def choking(path: Path, data: bytes) -> ExtractedText:
    raise RecursionError("maximum recursion depth exceeded")


def test_an_extractor_that_raises_anything_makes_the_file_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "deep.choke").write_text("x", encoding="utf-8")
    (tmp_path / "fine.txt").write_text("fine words", encoding="utf-8")
    monkeypatch.setitem(EXTRACTORS, ".choke", choking)
    with pytest.raises(ExtractionError, match=r"deep\.choke: unreadable \(RecursionError: maximum recursion"):
        extract_text(SourceFile(tmp_path / "deep.choke", "deep.choke", ".choke"))
    summary = index(tmp_path, tmp_path / "store")
    assert summary.committed and summary.added == 1
    assert [Path(path).name for path, _ in summary.failed] == ["deep.choke"]


def test_a_registered_format_is_discovered_and_extracted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "note.shout").write_text("quiet words", encoding="utf-8")
    assert discover([tmp_path]).files == []  # not a format yet
    monkeypatch.setitem(EXTRACTORS, ".shout", shouting)
    found = discover([tmp_path])
    assert found.files == [SourceFile(tmp_path / "note.shout", "note.shout", ".shout")]
    assert extract_text(found.files[0]).text == "QUIET WORDS"
    assert format_list().endswith(".sql or .shout")


def test_the_nothing_to_index_error_and_the_help_name_the_registered_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(EXTRACTORS, ".shout", shouting)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.pages").write_bytes(b"PK")
    with pytest.raises(NoDocumentsError, match=r"no \.txt, \.md, .*, \.docx, .* or \.shout file"):
        index(tmp_path / "docs", tmp_path / "store")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["index", "--help"])
    assert ".sql and .shout files" in " ".join(capsys.readouterr().out.split())
