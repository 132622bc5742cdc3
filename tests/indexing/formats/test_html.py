"""HTML headings as sections (the visible-text rules are in tests/indexing/test_extract.py)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from granrag_mcp.indexing.formats import html
from tests.indexing.formats.sections import outline


def test_headings_are_sections_at_their_text_after_the_title() -> None:
    markup = (
        "<title>Guide</title><h1>Getting <em>started</em></h1><p>Text.</p>"
        "<h2 hidden>Hidden heading</h2><section><h2>Install</h2><ul><li>pip</li></ul></section>"
        "<h3></h3><h3>Line<br>break</h3>"
    )
    extracted = html.extract(Path("g.html"), markup.encode())
    assert extracted.text == "Guide\n\nGetting started\n\nText.\n\nInstall\n\n- pip\n\nLine\nbreak"
    assert outline(extracted) == [(1, "Getting started"), (2, "Install"), (3, "Line")]
    assert [s.start for s in extracted.sections] == [7, 31, 47]


def test_a_page_without_a_title_starts_with_its_first_heading() -> None:
    extracted = html.extract(Path("g.html"), b"\n\n<h2>  Only  heading </h2>")
    assert extracted.text == "Only heading"
    assert outline(extracted) == [(2, "Only heading")]


def test_300000_unclosed_tags_are_read_in_bounded_memory(tmp_path: Path) -> None:
    """A hostile page: every tag opens a level, 4 MB deep; read in a child process to measure its peak memory."""
    path = tmp_path / "deep.html"
    path.write_bytes(b"<div><span>x " * 300_000)
    # The child's own high-water mark (VmHWM, of its address space since exec): ru_maxrss would carry over the
    # peak of a large parent (the test process) through fork and exec.
    script = (
        "import re; from pathlib import Path; from granrag_mcp.indexing.formats import html;"
        f"t = html.extract(Path({str(path)!r}), Path({str(path)!r}).read_bytes()).text;"
        "print(t.count('x'), re.search(r'VmHWM:\\s+(\\d+)', Path('/proc/self/status').read_text()).group(1))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    count, peak_kib = map(int, result.stdout.split())
    assert count == 300_000
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # this test process, for scale only
    assert peak_kib < 1_000_000, (peak_kib, baseline)  # under 1 GB for a 4 MB page
