"""A document's outline: heading paths, enclosing sections, section ends and pages of a span."""

from __future__ import annotations

from granrag_mcp.outline import EMPTY, Outline, Section, trimmed

# 0         10        20        30        40        50
# Intro.....Methods...Sampling..Stats.....Results...
OUTLINE = Outline(
    (
        Section(0, 1, "Intro"),
        Section(10, 1, "Methods"),
        Section(20, 2, "Sampling"),
        Section(30, 3, "Stats"),
        Section(40, 1, "Results"),
    ),
    page_starts=(0, 15, 35),
)


def test_the_path_of_a_section_climbs_its_ancestors() -> None:
    assert [OUTLINE.path(i) for i in range(5)] == [
        ["Intro"],
        ["Methods"],
        ["Methods", "Sampling"],
        ["Methods", "Sampling", "Stats"],
        ["Results"],
    ]
    assert OUTLINE.path(None) == []


def test_a_skipped_level_keeps_the_nearest_ancestor() -> None:
    outline = Outline((Section(0, 1, "A"), Section(5, 3, "deep"), Section(9, 2, "B"), Section(12, 3, "C")))
    assert [outline.path(i) for i in range(4)] == [["A"], ["A", "deep"], ["A", "B"], ["A", "B", "C"]]


def test_the_enclosing_section_of_an_offset_at_any_depth() -> None:
    assert OUTLINE.index_at(9) == 0 and OUTLINE.index_at(10) == 1 and OUTLINE.index_at(33) == 3
    assert OUTLINE.enclosing(33) == 3
    assert OUTLINE.enclosing(33, depth=2) == 2
    assert OUTLINE.enclosing(33, depth=1) == 1
    late = Outline((Section(10, 2, "late"),))
    assert late.index_at(5) is None and late.enclosing(12, depth=1) is None and late.enclosing(12) == 0


def test_a_section_ends_at_the_next_heading_of_its_level_or_above() -> None:
    assert OUTLINE.ends(50) == [10, 40, 40, 40, 50]


def test_pages_of_a_span() -> None:
    assert OUTLINE.pages(0, 15) == (1, 1)
    assert OUTLINE.pages(14, 16) == (1, 2)
    assert OUTLINE.pages(36, 50) == (3, 3)
    assert OUTLINE.pages(20, 20) == (2, 2)  # an empty span is on the page of its start
    assert Outline((Section(0, 1, "x"),)).pages(0, 5) is None
    assert Outline(page_starts=(4, 9)).page_at(2) == 1  # text before the first page start counts as page 1


def test_a_span_is_cited_without_its_edge_whitespace() -> None:
    assert trimmed(10, "\n\n Methods text \n") == (13, 25)
    assert trimmed(10, "  ") == (10, 12)
    assert not EMPTY and Outline(page_starts=(0,)) and Outline((Section(0, 1, "x"),))


def test_a_span_opening_with_headings_is_placed_in_the_innermost_of_them() -> None:
    text = "# Title\n\n## Part 1\n\nBody of part one.\n\n## Part 2\n\nMore."
    starts = [text.index(title) for title in ("Title", "Part 1", "Part 2")]
    outline = Outline(tuple(Section(at, lv, t) for at, lv, t in zip(starts, (1, 2, 2), ("Title", "Part 1", "Part 2"))))
    assert text[outline.body_start(0, text) :].startswith("Body of part one.")
    assert outline.path(outline.index_at(outline.body_start(0, text))) == ["Title", "Part 1"]
    assert outline.body_start(0, text[:20]) == starts[1]  # headings only: its last heading
    body = text.index("Body")
    assert outline.body_start(body, text[body:]) == body  # a span that opens with its body stays where it starts
