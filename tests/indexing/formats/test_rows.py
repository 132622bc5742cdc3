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


def test_the_caption_comes_again_after_so_many_characters_of_rows() -> None:
    from granrag_mcp.indexing.formats.rows import CAPTION_EVERY_CHARS

    rows = [["Table 1: Counts"], ["Year", "Count"], *([str(1900 + n), str(n)] for n in range(400))]
    lines = row_lines(rows)
    assert lines[0] == "Table 1: Counts" and lines[1] == "Year: 1900; Count: 0"
    text = "\n".join(lines)
    gaps = [len(part) for part in text.split("Table 1: Counts")[1:]]
    assert len(gaps) > 3 and max(gaps) <= CAPTION_EVERY_CHARS + 40  # a row's length past the bound at most
    assert [line for line in lines if line != "Table 1: Counts"] == row_lines(rows[1:])  # only captions added


def test_a_caption_given_heads_the_table_and_a_table_without_one_gets_none() -> None:
    assert row_lines([["Name", "Age"], ["Bob", 32]], caption=" Table 2:  Staff ") == [
        "Table 2: Staff",
        "Name: Bob; Age: 32",
    ]
    assert "Table" not in "\n".join(row_lines([["Name", "Age"], *([f"n{i}", i] for i in range(300))]))
