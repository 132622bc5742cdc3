from __future__ import annotations

from granrag_mcp.indexing.formats.rows import row_lines


def test_rows_become_header_value_lines_skipping_empty_cells_and_rows() -> None:
    rows = [[None, None], ["Name", "Age"], ["Bob", 32.0], ["", ""], ["Ann", None]]
    assert row_lines(rows) == ["Name: Bob; Age: 32", "Name: Ann"]


def test_rows_past_the_bound_are_counted_not_read() -> None:
    rows = [["n"], *([str(i)] for i in range(5))]
    assert row_lines(rows, max_rows=2) == ["n: 0", "n: 1", "(3 more rows not indexed)"]


def test_a_header_alone_is_the_text() -> None:
    assert row_lines([["only", "", "a header"]]) == ["only; a header"]
