from __future__ import annotations

from pathlib import Path

import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import delimited


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("a.csv", b'name,note\r\nBob,"likes, commas"\r\nAnn,"two\nlines"\r\n'),
        ("a.csv", b'name;note\nBob;likes, commas\nAnn;"two\nlines"\n'),
        ("a.tsv", b'name\tnote\nBob\tlikes, commas\nAnn\t"two\nlines"\n'),
    ],
)
def test_rows_are_header_value_lines_whatever_the_delimiter(name: str, data: bytes) -> None:
    extracted = delimited.extract(Path(name), data)
    assert extracted.text == "name: Bob; note: likes, commas\nname: Ann; note: two lines"
    assert extracted.sections == () and extracted.page_starts == ()


def test_a_long_quoted_field_is_text() -> None:
    field = "x" * 200_000
    assert delimited.extract(Path("a.csv"), f'h\n"{field}"\n'.encode()).text == f"h: {field}"


def test_a_binary_file_named_csv_is_skipped() -> None:
    with pytest.raises(ExtractionError, match="binary"):
        delimited.extract(Path("a.csv"), b"\x00\x01\x02")
