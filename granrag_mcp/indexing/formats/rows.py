"""The table form every format shares (sheets, CSV, PDF, Word and PowerPoint tables): a caption line where the
table has one, then one line per row, each cell after its column's header (`header: value`), empty cells left out,
so any run of its lines, wherever a chunk starts, names its columns; the caption comes again every
`CAPTION_EVERY_CHARS` of rows, so a table longer than a chunk is cut into parts that each hold it; a sheet or file is
read up to a bound, the rest counted in a closing line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

MAX_ROWS = 10_000
"""Rows read per sheet or file: a table larger than this is a data set, whose tail adds little to search."""
CELL_SEPARATOR = "; "
CAPTION_EVERY_CHARS = 1500
"""Characters of rows after which the caption is written again: fewer than a broad chunk (2048 tokens) ever holds
(a token is at least a character), and about one mid chunk of rows, so any chunk of a long table that is cut off
from its start still holds its caption."""
CAPTION_WORDS = ("table", "tab.", "tabelle", "tableau", "tabla", "tabela", "tabella", "таблица", "表")
CAPTION = re.compile(rf"^({'|'.join(map(re.escape, CAPTION_WORDS))})\s*[0-9IVXLivxl一二三四五六七八九十]", re.I)
"""A caption line opens with a table's name in one of these languages and its number."""


def is_caption(text: str) -> bool:
    return bool(CAPTION.match(" ".join(text.split())))


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


def row_lines(rows: Iterable[Sequence[object]], max_rows: int = MAX_ROWS, caption: str = "") -> list[str]:
    """The first non-empty row is the header; each later row a line of `header: value` pairs (a column without a
    header is named by its number). The caption (`caption`, else a first row of one cell over a wider header row)
    is the first line, and again after every `CAPTION_EVERY_CHARS` of rows."""
    caption = " ".join(caption.split())
    header: list[str] | None = None
    title: str | None = None  # a first row of one cell: the caption where a wider row follows, else the header
    lines: list[str] = []
    skipped = 0
    for row in rows:
        cells = [cell_text(value) for value in row]
        filled = sum(1 for cell in cells if cell)
        if not filled:
            continue
        if header is None:
            if title is None and filled == 1 and cells[0]:
                title = cells[0]
                continue
            if title is None or filled > 1:
                caption = caption or title or ""
                header = cells
                continue
            header = [title]  # a one-column table: its first cell was its header
        if len(lines) >= max_rows:
            skipped += 1
            continue
        pairs = [
            f"{header[i] if i < len(header) and header[i] else f'column {i + 1}'}: {cell}"
            for i, cell in enumerate(cells)
            if cell
        ]
        lines.append(CELL_SEPARATOR.join(pairs))
    if header is None and title is not None:
        header = [title]
    if header is not None and not lines:
        lines.append(CELL_SEPARATOR.join(cell for cell in header if cell))  # a one-row table: its header is its text
    if skipped:
        lines.append(f"({skipped} more rows not indexed)")
    return with_caption(lines, caption)


def with_caption(lines: list[str], caption: str) -> list[str]:
    """The caption first, and again before the row that takes the rows since it past `CAPTION_EVERY_CHARS`."""
    return captioned([lines], caption)[0]


def captioned(parts: list[list[str]], caption: str) -> list[list[str]]:
    """`with_caption` over a table whose lines are written in parts (a PDF table's, one per page): the caption
    comes where it would in the whole table's lines, each part keeping its own rows."""
    if not caption:
        return parts
    out: list[list[str]] = []
    since = -1  # characters of rows since the caption was last written; -1 before it is first
    for part in parts:
        written: list[str] = []
        for line in part:
            if since < 0 or (since > 0 and since + len(line) > CAPTION_EVERY_CHARS):
                written.append(caption)
                since = 0
            written.append(line)
            since += len(line) + 1
        out.append(written)
    return out
