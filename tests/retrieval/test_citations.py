"""Citations of chunks (retrieval/citations.py): pages and heading path of what a chunk holds, whitespace at its
edges aside, for chunks the fixed chunker cuts at token boundaries just before a heading."""

from __future__ import annotations

from pathlib import Path

import pytest

from granrag_mcp.levels import LEVELS
from granrag_mcp.retrieval.citations import UNCITED, Citation, citation_line, cite, cite_chunks
from granrag_mcp.retrieval.sections import document_outline, enclosing_section
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index
from tests.outlined import SUFFIX, build_report, register


@pytest.fixture
def view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    register(monkeypatch)
    folder = tmp_path / "docs"
    folder.mkdir()
    report = build_report()
    (folder / f"report{SUFFIX}").write_text(report.source, encoding="utf-8")
    (folder / "plain.txt").write_text("Nothing but words. And a second sentence.", encoding="utf-8")
    index(folder, tmp_path / "store")  # the fixed chunker, small windows
    snapshot = Snapshot.open(tmp_path / "store")
    yield View(snapshot, FakeEmbedder()), report
    snapshot.close()


def test_every_chunk_cites_the_pages_and_headings_of_what_it_holds(view) -> None:
    view, report = view
    chunks = [c for level in LEVELS for c in view.catalog.chunks_of_level(level) if c.doc_id == f"report{SUFFIX}"]
    document = view.catalog.document_text(f"report{SUFFIX}") or ""
    cited = cite_chunks(view, chunks)
    for chunk in chunks:
        pages, section = report.expected_at(document, chunk.start, chunk.end)
        assert (list(cited[chunk.id].pages or ()), list(cited[chunk.id].section)) == (pages, section), chunk
        paths = report.body_paths(report.inside(document, chunk.start, chunk.end))
        assert [list(p) for p in cited[chunk.id].sections] == (paths if len(paths) > 1 else []), chunk
    assert {c.level for c in chunks} == set(LEVELS)
    plain = [c for c in view.catalog.chunks_of_level("mid") if c.doc_id == "plain.txt"]
    assert cite_chunks(view, plain) == {c.id: UNCITED for c in plain}


def test_a_chunk_that_starts_with_the_line_break_before_a_heading_cites_that_heading(view) -> None:
    view, _ = view
    outline = view.catalog.outlines([f"report{SUFFIX}"])[f"report{SUFFIX}"]
    text = view.catalog.document_text(f"report{SUFFIX}") or ""
    at = text.index("Results")
    assert list(cite(outline, at - 1, text[at - 1 : at + 30]).section) == ["Results"]
    across = cite(outline, at - 30, text[at - 30 : at + 30])  # the end of one chapter and the start of the next
    assert list(across.section) == []  # the two share no heading
    assert across.sections == (("Methods", "Statistical analysis"), ("Results",))
    within = cite(outline, at - 30, text[at - 30 : at - 1])
    assert (within.section, within.sections) == (("Methods", "Statistical analysis"), ())


def test_sections_list_their_chunks_once_and_a_chunk_climbs_to_them(view) -> None:
    view, _ = view
    outline = document_outline(view, f"report{SUFFIX}")
    assert [s.path[-1] for s in outline.sections] == [
        "Introduction",
        "Methods",
        "Sampling",
        "Statistical analysis",
        "Results",
    ]
    chunks = view.catalog.chunks([i for s in outline.sections for i in s.chunk_ids])
    for section in outline.sections:
        inside = [chunks[i] for i in section.chunk_ids]
        assert inside and all(
            section.start <= c.start + len(c.text) - len(c.text.lstrip()) < section.end for c in inside
        )
        _, climbed = enclosing_section(view, inside[-1].public_id, depth=section.level)
        assert climbed.number == section.number
    assert document_outline(view, f"report{SUFFIX}", max_depth=1).total == 5
    assert len(document_outline(view, f"report{SUFFIX}", max_depth=1).sections) == 3


def test_a_citation_reads_as_one_line_a_person_can_check() -> None:
    cited = Citation((12, 13), ("Methods", "Statistical analysis"))
    assert citation_line("report.pdf", cited) == "report.pdf · p. 12-13 · Methods > Statistical analysis"
    assert citation_line("slides.pptx", Citation((4, 4), ())) == "slides.pptx · p. 4"
    assert citation_line("notes.md", Citation(None, ("Ideas",))) == "notes.md · Ideas"
    assert citation_line("plain.txt", UNCITED) == "plain.txt"
