"""The table form every format shares (sheets, CSV, PDF tables): a caption line where the table has one, then one
line per row, each cell after its column's header (`header: value`), empty cells left out, so any run of its lines,
wherever a chunk starts, names its columns; a sheet or file is read up to a bound, the rest counted in a closing
line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MAX_ROWS = 10_000
"""Rows read per sheet or file: a table larger than this is a data set, whose tail adds little to search."""
CELL_SEPARATOR = "; "


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


def row_lines(rows: Iterable[Sequence[object]], max_rows: int = MAX_ROWS) -> list[str]:
    """The first non-empty row is the header; each later row a line of `header: value` pairs (a column without a
    header is named by its number). A first row of one cell over a wider header row is the table's caption, its
    first line."""
    header: list[str] | None = None
    title: str | None = None  # a first row of one cell: the caption where a wider row follows, else the header
    caption: list[str] = []
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
                caption = [title] if title is not None else []
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
    return caption + lines
